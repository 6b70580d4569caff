// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A one-rank transport of host memory for tests without MPI: every collective of one rank is a
 * copy; it records the operations it was asked for, so that a test sees what the planner asked of it.
 */
final class OneRankHostTransport implements Transport {
    final List<String> calls;

    OneRankHostTransport(List<String> calls) {
        this.calls = calls;
    }

    @Override public String backend() { return "fake"; }
    @Override public int rank() { return 0; }
    @Override public int size() { return 1; }
    @Override public int maxTag() { return 32767; }

    private static void copy(Buffer to, Buffer from, long bytes) {
        if (bytes > 0) MemorySegment.copy(((HostBuffer) from).segment(), 0, ((HostBuffer) to).segment(), 0, bytes);
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return false;
    }

    /** As an MPI library: no 16-bit floating-point types, no value/index pairs. */
    @Override
    public boolean reduces(DataType type, ReduceOp op) {
        return type != DataType.FLOAT16 && type != DataType.BFLOAT16 && type.kind() != DataType.Kind.PAIR;
    }

    @Override
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        calls.add("send");
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        calls.add("recv");
        return new Status(0, tag, 0);
    }

    @Override
    public Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        calls.add("isend");
        return done(tag);
    }

    @Override
    public Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
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
    public Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        calls.add("sendRecv");
        copy(recvBuffer, sendBuffer, sendType.bytes(sendCount));
        return new Status(0, sendTag, sendType.bytes(sendCount));
    }

    @Override
    public void barrier() {
        calls.add("barrier");
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        calls.add("broadcast");
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        calls.add("scatter");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        calls.add("gather");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        calls.add("allGather");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        calls.add("reduce");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("allReduce");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        calls.add("allToAll");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        calls.add("scatterV");
        if (recvCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), sendBlocks.byteOffset(0, type), ((HostBuffer) recvBuffer).segment(), 0, type.bytes(recvCount));
    }

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        calls.add("gatherV");
        if (sendCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), type.bytes(sendCount));
    }

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        calls.add("allGatherV");
        if (sendCount > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), 0, ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), type.bytes(sendCount));
    }

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        calls.add("allToAllV");
        long n = sendBlocks.bytes(0, type);
        if (n > 0) MemorySegment.copy(((HostBuffer) sendBuffer).segment(), sendBlocks.byteOffset(0, type), ((HostBuffer) recvBuffer).segment(), recvBlocks.byteOffset(0, type), n);
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        calls.add("reduceScatterBlock");
        copy(recvBuffer, sendBuffer, type.bytes(recvCount));
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        calls.add("reduceScatter");
        copy(recvBuffer, sendBuffer, blocks.bytes(0, type));
    }

    @Override
    public void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("scan");
        copy(recvBuffer, sendBuffer, type.bytes(count));
    }

    @Override
    public void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        calls.add("exscan"); // one rank: rank 0 receives nothing
    }

    @Override
    public Transport split(int color, int key) {
        calls.add("split");
        return color < 0 ? null : new OneRankHostTransport(calls);
    }

    @Override
    public Transport duplicate() {
        calls.add("duplicate");
        return new OneRankHostTransport(calls);
    }

    @Override
    public void close() {
        calls.add("close");
    }

    @Override
    public Status probe(int source, int tag) {
        calls.add("probe");
        return new Status(0, tag, 0);
    }

    @Override
    public java.util.Optional<Status> iprobe(int source, int tag) {
        calls.add("iprobe");
        return java.util.Optional.empty();
    }

    @Override
    public dev.ferry.MatchedMessage mprobe(int source, int tag) {
        throw new UnsupportedOperationException("one-rank test communicator: no matched messages");
    }

    @Override
    public java.util.Optional<dev.ferry.MatchedMessage> improbe(int source, int tag) {
        calls.add("improbe");
        return java.util.Optional.empty();
    }
}
