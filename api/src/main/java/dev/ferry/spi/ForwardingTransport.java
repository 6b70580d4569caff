// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.MatchedMessage;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.Optional;

/**
 * A transport that passes every primitive to the transport it wraps: decorators extend it and
 * override only what they carry themselves. It owns the wrapped transport ({@link #close} closes it).
 */
public abstract class ForwardingTransport implements Transport {
    /** The wrapped transport. */
    protected final Transport inner;

    /** Wraps {@code inner}, taking ownership. */
    protected ForwardingTransport(Transport inner) {
        this.inner = inner;
    }

    @Override
    public String backend() {
        return inner.backend();
    }

    @Override
    public int rank() {
        return inner.rank();
    }

    @Override
    public int size() {
        return inner.size();
    }

    @Override
    public int maxTag() {
        return inner.maxTag();
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return inner.supportsDeviceBuffers();
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
        return inner.deviceBuffersUnsupportedReason();
    }

    @Override
    public boolean reduces(DataType type, ReduceOp op) {
        return inner.reduces(type, op);
    }

    @Override
    public boolean enqueueOnStream(StreamCollective call, dev.ferry.DeviceStream stream) {
        return inner.enqueueOnStream(call, stream);
    }

    @Override
    public boolean enqueuesOnStream(StreamCollective call) {
        return inner.enqueuesOnStream(call);
    }

    @Override
    public boolean waitsForStreamsInDeviceCalls() {
        return inner.waitsForStreamsInDeviceCalls();
    }

    @Override
    public void throwStreamFailure() {
        inner.throwStreamFailure();
    }

    @Override
    public void progress() {
        inner.progress();
    }

    @Override
    public boolean stagesHostBuffers() {
        return inner.stagesHostBuffers();
    }

    @Override
    public String preferredAlgorithm() {
        return inner.preferredAlgorithm();
    }

    /** The wrapped transport. */
    public Transport inner() {
        return inner;
    }

    @Override
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        inner.send(buffer, count, type, dest, tag);
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        return inner.recv(buffer, count, type, source, tag);
    }

    @Override
    public Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        return inner.isend(buffer, count, type, dest, tag);
    }

    @Override
    public Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
        return inner.irecv(buffer, count, type, source, tag);
    }

    @Override
    public Request startRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        return inner.startRecv(buffer, count, type, source, tag);
    }

    @Override
    public Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                           Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        return inner.sendRecv(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag);
    }

    @Override
    public Status probe(int source, int tag) {
        return inner.probe(source, tag);
    }

    @Override
    public Optional<Status> iprobe(int source, int tag) {
        return inner.iprobe(source, tag);
    }

    @Override
    public MatchedMessage mprobe(int source, int tag) {
        return inner.mprobe(source, tag);
    }

    @Override
    public Optional<MatchedMessage> improbe(int source, int tag) {
        return inner.improbe(source, tag);
    }

    @Override
    public void barrier() {
        inner.barrier();
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        inner.broadcast(buffer, count, type, root);
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        inner.scatter(sendBuffer, recvBuffer, count, type, root);
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        inner.gather(sendBuffer, recvBuffer, count, type, root);
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        inner.allGather(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        inner.reduce(sendBuffer, recvBuffer, count, type, op, root);
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        inner.allReduce(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        inner.allToAll(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        inner.scatterV(sendBuffer, sendBlocks, recvBuffer, recvCount, type, root);
    }

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        inner.gatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type, root);
    }

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        inner.allGatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type);
    }

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        inner.allToAllV(sendBuffer, sendBlocks, recvBuffer, recvBlocks, type);
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        inner.reduceScatterBlock(sendBuffer, recvBuffer, recvCount, type, op);
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        inner.reduceScatter(sendBuffer, recvBuffer, blocks, type, op);
    }

    @Override
    public void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        inner.scan(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        inner.exscan(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public Transport split(int color, int key) {
        return inner.split(color, key);
    }

    @Override
    public Transport duplicate() {
        return inner.duplicate();
    }

    @Override
    public void close() {
        inner.close();
    }
}
