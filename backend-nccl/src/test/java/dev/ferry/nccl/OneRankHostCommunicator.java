package dev.ferry.nccl;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A one-rank communicator of host memory for tests without MPI: every collective of one rank is a
 * copy; it records the operations it was asked for, so that a test sees what the decorator delegated.
 */
final class OneRankHostCommunicator extends AbstractCommunicator {
    final List<String> calls;

    OneRankHostCommunicator(List<String> calls) {
        super("fake", 0, 1, 32767);
        this.calls = calls;
    }

    private static void copy(Buffer to, Buffer from, long bytes) {
        if (bytes > 0) MemorySegment.copy(((HostBuffer) from).segment(), 0, ((HostBuffer) to).segment(), 0, bytes);
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return false;
    }

    @Override
    protected void doSend(Buffer buffer, long count, DataType type, int dest, int tag) {
        calls.add("send");
    }

    @Override
    protected Status doRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        calls.add("recv");
        return new Status(0, tag, 0);
    }

    @Override
    protected Request doIsend(Buffer buffer, long count, DataType type, int dest, int tag) {
        calls.add("isend");
        return done(tag);
    }

    @Override
    protected Request doIrecv(Buffer buffer, long count, DataType type, int source, int tag) {
        calls.add("irecv");
        return done(tag);
    }

    private static Request done(int tag) {
        return new Request() {
            @Override
            public Status waitFor() {
                return new Status(0, tag, 0);
            }

            @Override
            public Optional<Status> test() {
                return Optional.of(waitFor());
            }
        };
    }

    @Override
    protected Status doSendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        calls.add("sendRecv");
        copy(recvBuffer, sendBuffer, sendType.bytes(sendCount));
        return new Status(0, sendTag, sendType.bytes(sendCount));
    }

    @Override
    protected void doBarrier() {
        calls.add("barrier");
    }

    @Override
    protected void doBroadcast(Buffer buffer, long count, DataType type, int root) {
        calls.add("broadcast");
    }

    @Override
    protected void doScatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        calls.add("scatter");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        calls.add("gather");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doAllGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        calls.add("allGather");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        calls.add("reduce");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doAllReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("allReduce");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doAllToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        calls.add("allToAll");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doScatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        calls.add("scatterV");
        if (recvCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), sendBlocks.byteOffset(0, type), ((HostBuffer) recvBuffer).segment(), 0, type.bytes(recvCount));
    }

    @Override
    protected void doGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        calls.add("gatherV");
        if (sendCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), type.bytes(sendCount));
    }

    @Override
    protected void doAllGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        calls.add("allGatherV");
        if (sendCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), type.bytes(sendCount));
    }

    @Override
    protected void doAllToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        calls.add("allToAllV");
        long n = sendBlocks.bytes(0, type);
        if (n > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), sendBlocks.byteOffset(0, type), ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), n);
    }

    @Override
    protected void doReduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        calls.add("reduceScatterBlock");
        copy(recvBuffer, sendBuffer, type.bytes(recvCount));
    }

    @Override
    protected void doReduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        calls.add("reduceScatter");
        copy(recvBuffer, sendBuffer, blocks.bytes(0, type));
    }

    @Override
    protected void doScan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("scan");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    protected void doExscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("exscan"); // one rank: rank 0 receives nothing
    }

    @Override
    protected Communicator doSplit(int color, int key) {
        calls.add("split");
        return color < 0 ? null : new OneRankHostCommunicator(calls);
    }

    @Override
    protected Communicator doDuplicate() {
        calls.add("duplicate");
        return new OneRankHostCommunicator(calls);
    }

    @Override
    protected void doClose() {
        calls.add("close");
    }

    @Override
    protected Status doProbe(int source, int tag) {
        calls.add("probe");
        return new Status(0, tag, 0);
    }

    @Override
    protected java.util.Optional<Status> doIprobe(int source, int tag) {
        calls.add("iprobe");
        return java.util.Optional.empty();
    }

    @Override
    protected dev.ferry.MatchedMessage doMprobe(int source, int tag) {
        throw new UnsupportedOperationException("one-rank test communicator: no matched messages");
    }

    @Override
    protected java.util.Optional<dev.ferry.MatchedMessage> doImprobe(int source, int tag) {
        calls.add("improbe");
        return java.util.Optional.empty();
    }
}
