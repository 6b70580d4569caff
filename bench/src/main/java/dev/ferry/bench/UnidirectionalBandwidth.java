// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
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
 * How many bytes per second can one rank stream to another? The initiator starts {@code window}
 * non-blocking sends of {@code size} bytes, waits for them, then waits for a one-byte
 * acknowledgement (host memory) that the receiver sends once its {@code window} receives completed,
 * as OSU's {@code osu_bw}. One invocation is one window: bandwidth = window * size / score.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class UnidirectionalBandwidth {

    /** One payload buffer (every message of the window uses it), an acknowledgement buffer, the requests. */
    @State(Scope.Benchmark)
    public static class Stream extends PairState {
        /** Messages in flight per window. */
        @Param("64")
        public int window;

        Buffer buffer;
        HostBuffer ack;
        Request[] requests;

        /** Opens the pair and allocates the buffers. */
        @Setup(Level.Trial)
        public void setUp() {
            openPair();
            buffer = memory.allocate(size);
            ack = HostBuffer.allocate(1);
            requests = new Request[window];
        }

        /** Frees the buffers. */
        @TearDown(Level.Trial)
        public void tearDown() {
            Memory.free(buffer);
            ack.close();
        }
    }

    /** One window and its acknowledgement. */
    @Benchmark
    public List<Status> window(Stream s) {
        if (s.peer < 0) {
            return null;
        }
        if (s.initiator) {
            for (int i = 0; i < s.window; i++) {
                s.requests[i] = s.comm.isend(s.buffer, s.size, DataType.BYTE, s.peer, PairState.DATA);
            }
            List<Status> done = Request.waitAll(s.requests);
            s.comm.recv(s.ack, 1, DataType.BYTE, s.peer, PairState.ACK);
            return done;
        }
        for (int i = 0; i < s.window; i++) {
            s.requests[i] = s.comm.irecv(s.buffer, s.size, DataType.BYTE, s.peer, PairState.DATA);
        }
        List<Status> done = Request.waitAll(s.requests);
        s.comm.send(s.ack, 1, DataType.BYTE, s.peer, PairState.ACK);
        return done;
    }
}
