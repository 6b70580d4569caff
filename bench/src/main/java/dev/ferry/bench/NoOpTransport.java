// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.MatchedMessage;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.Transport;
import java.util.Optional;

/**
 * A transport whose operations do nothing, under a {@code CheckedCommunicator}: what the checked
 * front (argument checks, call tracking, buffer pins, the flight recorder) costs a call by itself,
 * without MPI's time and its noise ({@link FlightRecorderCost#frontAlone}). Rank 0 of 2; no peer
 * is ever reached.
 */
final class NoOpTransport implements Transport {
    @Override public String backend() { return "no-op"; }
    @Override public int rank() { return 0; }
    @Override public int size() { return 2; }
    @Override public int maxTag() { return 32767; }
    @Override public boolean supportsDeviceBuffers() { return false; }
    @Override public void send(Buffer b, long c, DataType t, int d, int g) { }
    @Override public Status recv(Buffer b, long c, DataType t, int s, int g) { return null; }
    @Override public Request isend(Buffer b, long c, DataType t, int d, int g) { return null; }
    @Override public Request irecv(Buffer b, long c, DataType t, int s, int g) { return null; }
    @Override public Status sendRecv(Buffer a, long b, DataType c, int d, int e, Buffer f, long g, DataType h, int i, int j) { return null; }
    @Override public Status probe(int s, int g) { return null; }
    @Override public Optional<Status> iprobe(int s, int g) { return Optional.empty(); }
    @Override public MatchedMessage mprobe(int s, int g) { return null; }
    @Override public Optional<MatchedMessage> improbe(int s, int g) { return Optional.empty(); }
    @Override public void barrier() { }
    @Override public void broadcast(Buffer b, long c, DataType t, int r) { }
    @Override public void scatter(Buffer a, Buffer b, long c, DataType t, int r) { }
    @Override public void gather(Buffer a, Buffer b, long c, DataType t, int r) { }
    @Override public void allGather(Buffer a, Buffer b, long c, DataType t) { }
    @Override public void reduce(Buffer a, Buffer b, long c, DataType t, ReduceOp o, int r) { }
    @Override public void allReduce(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
    @Override public void allToAll(Buffer a, Buffer b, long c, DataType t) { }
    @Override public void scatterV(Buffer a, Blocks ab, Buffer b, long c, DataType t, int r) { }
    @Override public void gatherV(Buffer a, long c, Buffer b, Blocks bb, DataType t, int r) { }
    @Override public void allGatherV(Buffer a, long c, Buffer b, Blocks bb, DataType t) { }
    @Override public void allToAllV(Buffer a, Blocks ab, Buffer b, Blocks bb, DataType t) { }
    @Override public void reduceScatterBlock(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
    @Override public void reduceScatter(Buffer a, Buffer b, Blocks bb, DataType t, ReduceOp o) { }
    @Override public void scan(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
    @Override public void exscan(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
    @Override public Transport split(int color, int key) { return null; }
    @Override public Transport duplicate() { return null; }
    @Override public void close() { }
}
