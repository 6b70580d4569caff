// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * How many bytes per second cross a pair of ranks when both send at once? Both sides post
 * {@code window} non-blocking receives and {@code window} non-blocking sends of {@code size} bytes
 * and wait for all of them, as OSU's {@code osu_bibw}. One invocation is one window each way:
 * bandwidth = 2 * window * size / score.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class BidirectionalBandwidth {

    /** A send and a receive buffer (every message of a window uses them) and the requests. */
    @State(Scope.Benchmark)
    public static class Streams extends PairState {
        /** Messages in flight per window and direction. */
        @Param("64")
        public int window;

        Buffer sendBuffer;
        Buffer recvBuffer;
        Request[] requests;

        /** Opens the pair and allocates the buffers. */
        @Setup(Level.Trial)
        public void setUp() {
            openPair();
            sendBuffer = memory.allocate(size);
            recvBuffer = memory.allocate(size);
            requests = new Request[2 * window];
        }

        /** Frees the buffers. */
        @TearDown(Level.Trial)
        public void tearDown() {
            Memory.free(sendBuffer);
            Memory.free(recvBuffer);
        }
    }

    /** One window each way. */
    @Benchmark
    public List<Status> window(Streams s) {
        if (s.peer < 0) {
            return null;
        }
        for (int i = 0; i < s.window; i++) {
            s.requests[i] = s.comm.irecv(s.recvBuffer, s.size, DataType.BYTE, s.peer, PairState.DATA);
        }
        for (int i = 0; i < s.window; i++) {
            s.requests[s.window + i] = s.comm.isend(s.sendBuffer, s.size, DataType.BYTE, s.peer, PairState.DATA);
        }
        return Request.waitAll(s.requests);
    }
}
