// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.Status;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * How long does one message take from one rank to another? Ping-pong: the initiator sends
 * {@code size} bytes and waits for them to come back. One invocation is a round trip and counts as
 * two operations, so JMH's score is the one-way latency (half the round trip), as OSU's
 * {@code osu_latency} reports it.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class PingPongLatency {

    /** One buffer per rank, of the benchmark's memory kind. */
    @State(Scope.Benchmark)
    public static class Pair extends PairState {
        Buffer buffer;

        /** Opens the pair and allocates the buffer. */
        @Setup(Level.Trial)
        public void setUp() {
            openPair();
            buffer = memory.allocate(size);
        }

        /** Frees the buffer. */
        @TearDown(Level.Trial)
        public void tearDown() {
            Memory.free(buffer);
        }
    }

    /** One round trip. */
    @Benchmark
    public Status roundTrip(Pair p) {
        if (p.peer < 0) {
            return null;
        }
        if (p.initiator) {
            p.comm.send(p.buffer, p.size, DataType.BYTE, p.peer, PairState.DATA);
            return p.comm.recv(p.buffer, p.size, DataType.BYTE, p.peer, PairState.DATA);
        }
        Status s = p.comm.recv(p.buffer, p.size, DataType.BYTE, p.peer, PairState.DATA);
        p.comm.send(p.buffer, p.size, DataType.BYTE, p.peer, PairState.DATA);
        return s;
    }
}
