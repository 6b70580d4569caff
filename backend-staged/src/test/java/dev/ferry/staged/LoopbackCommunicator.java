package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.AbstractCommunicator;
import dev.ferry.spi.Blocks;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Optional;

/**
 * A one-rank communicator of host memory for tests without MPI: messages to itself, matched in
 * order by tag, buffered when no receive waits (so sends complete at once). Point-to-point and
 * allGather only, which is what {@link StagedCommunicator} needs of its inner communicators.
 */
final class LoopbackCommunicator extends AbstractCommunicator {
    private final ArrayDeque<Message> unexpected = new ArrayDeque<>();
    private final ArrayDeque<Posted> posted = new ArrayDeque<>();

    private record Message(int tag, byte[] bytes) {
    }

    private static final class Posted {
        final HostBuffer into;
        final long capacity;
        final int tag;
        Status status;

        Posted(HostBuffer into, long capacity, int tag) {
            this.into = into;
            this.capacity = capacity;
            this.tag = tag;
        }
    }

    LoopbackCommunicator() {
        super("loopback", 0, 1, 1 << 20);
    }

    private static Request done(Status s) {
        return new Request() {
            public Status waitFor() { return s; }
            public Optional<Status> test() { return Optional.of(s); }
        };
    }

    private static void deliver(Posted p, Message m) {
        if (m.bytes.length > p.capacity) {
            throw new IllegalStateException("loopback: truncated message");
        }
        MemorySegment.copy(MemorySegment.ofArray(m.bytes), 0, p.into.segment(), 0, m.bytes.length);
        p.status = new Status(0, m.tag, m.bytes.length);
    }

    @Override
    protected Request doIsend(Buffer buffer, long count, DataType type, int dest, int tag) {
        long n = type.bytes(count);
        byte[] bytes = new byte[(int) n];
        MemorySegment.copy(((HostBuffer) buffer).segment(), 0, MemorySegment.ofArray(bytes), 0, n);
        Message m = new Message(tag, bytes);
        for (Iterator<Posted> it = posted.iterator(); it.hasNext(); ) {
            Posted p = it.next();
            if (p.tag == tag || p.tag == Communicator.ANY_TAG) {
                it.remove();
                deliver(p, m);
                return done(new Status(0, tag, n));
            }
        }
        unexpected.addLast(m);
        return done(new Status(0, tag, n));
    }

    @Override
    protected Request doIrecv(Buffer buffer, long count, DataType type, int source, int tag) {
        Posted p = new Posted((HostBuffer) buffer, type.bytes(count), tag);
        for (Iterator<Message> it = unexpected.iterator(); it.hasNext(); ) {
            Message m = it.next();
            if (m.tag == tag || tag == Communicator.ANY_TAG) {
                it.remove();
                deliver(p, m);
                return done(p.status);
            }
        }
        posted.addLast(p);
        return new Request() {
            public Status waitFor() {
                if (p.status == null) throw new IllegalStateException("loopback: a receive that nothing will match");
                return p.status;
            }

            public Optional<Status> test() { return Optional.ofNullable(p.status); }
        };
    }

    @Override
    protected void doSend(Buffer buffer, long count, DataType type, int dest, int tag) {
        doIsend(buffer, count, type, dest, tag);
    }

    @Override
    protected Status doRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        return doIrecv(buffer, count, type, source, tag).waitFor();
    }

    @Override
    protected Status doSendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        Request r = doIrecv(recvBuffer, recvCount, recvType, source, recvTag);
        doIsend(sendBuffer, sendCount, sendType, dest, sendTag);
        return r.waitFor();
    }

    @Override
    protected void doAllGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), 0, type.bytes(count));
    }

    @Override
    protected Communicator doDuplicate() {
        return new LoopbackCommunicator();
    }

    @Override
    protected void doClose() {
    }

    private static UnsupportedOperationException no() {
        return new UnsupportedOperationException("loopback: point-to-point and allGather only");
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return false;
    }

    @Override protected void doBarrier() { }
    @Override protected void doBroadcast(Buffer buffer, long count, DataType type, int root) { }
    @Override protected void doScatter(Buffer s, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override protected void doGather(Buffer s, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override protected void doReduce(Buffer s, Buffer r, long count, DataType type, ReduceOp op, int root) { throw no(); }
    @Override protected void doAllReduce(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override protected void doAllToAll(Buffer s, Buffer r, long count, DataType type) { throw no(); }
    @Override protected void doScatterV(Buffer s, Blocks sb, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override protected void doGatherV(Buffer s, long count, Buffer r, Blocks rb, DataType type, int root) { throw no(); }
    @Override protected void doAllGatherV(Buffer s, long count, Buffer r, Blocks rb, DataType type) { throw no(); }
    @Override protected void doAllToAllV(Buffer s, Blocks sb, Buffer r, Blocks rb, DataType type) { throw no(); }
    @Override protected void doReduceScatterBlock(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override protected void doReduceScatter(Buffer s, Buffer r, Blocks blocks, DataType type, ReduceOp op) { throw no(); }
    @Override protected void doScan(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override protected void doExscan(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override protected Communicator doSplit(int color, int key) { throw no(); }
    @Override protected Status doProbe(int source, int tag) { throw no(); }
    @Override protected java.util.Optional<Status> doIprobe(int source, int tag) { throw no(); }
    @Override protected dev.ferry.MatchedMessage doMprobe(int source, int tag) { throw no(); }
    @Override protected java.util.Optional<dev.ferry.MatchedMessage> doImprobe(int source, int tag) { throw no(); }
}
