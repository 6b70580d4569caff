// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Blocks;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Optional;

/**
 * A one-rank transport of host memory for tests without MPI: messages to itself, matched in
 * order by tag, buffered when no receive waits (so sends complete at once). Point-to-point and
 * allGather only, which is what {@link StagedTransport} needs of its inner transports.
 */
final class LoopbackTransport implements Transport {
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

    @Override public String backend() { return "loopback"; }
    @Override public int rank() { return 0; }
    @Override public int size() { return 1; }
    @Override public int maxTag() { return 1 << 20; }

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
    public Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
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
    public Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
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
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        isend(buffer, count, type, dest, tag);
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        return irecv(buffer, count, type, source, tag).waitFor();
    }

    @Override
    public Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        Request r = irecv(recvBuffer, recvCount, recvType, source, recvTag);
        isend(sendBuffer, sendCount, sendType, dest, sendTag);
        return r.waitFor();
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), 0, type.bytes(count));
    }

    @Override
    public Transport duplicate() {
        return new LoopbackTransport();
    }

    @Override
    public void close() {
    }

    private static UnsupportedOperationException no() {
        return new UnsupportedOperationException("loopback: point-to-point and allGather only");
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return false;
    }

    @Override public void barrier() { }
    @Override public void broadcast(Buffer buffer, long count, DataType type, int root) { }
    @Override public void scatter(Buffer s, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override public void gather(Buffer s, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override public void reduce(Buffer s, Buffer r, long count, DataType type, ReduceOp op, int root) { throw no(); }
    @Override public void allReduce(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override public void allToAll(Buffer s, Buffer r, long count, DataType type) { throw no(); }
    @Override public void scatterV(Buffer s, Blocks sb, Buffer r, long count, DataType type, int root) { throw no(); }
    @Override public void gatherV(Buffer s, long count, Buffer r, Blocks rb, DataType type, int root) { throw no(); }
    @Override public void allGatherV(Buffer s, long count, Buffer r, Blocks rb, DataType type) { throw no(); }
    @Override public void allToAllV(Buffer s, Blocks sb, Buffer r, Blocks rb, DataType type) { throw no(); }
    @Override public void reduceScatterBlock(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override public void reduceScatter(Buffer s, Buffer r, Blocks blocks, DataType type, ReduceOp op) { throw no(); }
    @Override public void scan(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override public void exscan(Buffer s, Buffer r, long count, DataType type, ReduceOp op) { throw no(); }
    @Override public Transport split(int color, int key) { throw no(); }
    @Override public Status probe(int source, int tag) { throw no(); }
    @Override public java.util.Optional<Status> iprobe(int source, int tag) { throw no(); }
    @Override public dev.ferry.MatchedMessage mprobe(int source, int tag) { throw no(); }
    @Override public java.util.Optional<dev.ferry.MatchedMessage> improbe(int source, int tag) { throw no(); }
}
