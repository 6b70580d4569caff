// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
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
 * How long does a broadcast of {@code size} bytes from rank 0 take? {@code MPI_Bcast} back to
 * back. Every rank times its own calls; the report shows the slowest rank's time per call
 * (secondary metric {@value LockstepProfiler#SLOWEST_RANK}), as a collective is done only when
 * every rank is.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class Broadcast {

    /** One buffer per rank. */
    @State(Scope.Benchmark)
    public static class Group extends JobState {
        Buffer buffer;

        /** Opens the job and allocates the buffers. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            buffer = memory.allocate(size);
        }

        /** Frees the buffers. */
        @TearDown(Level.Trial)
        public void tearDown() {
            Memory.free(buffer);
        }
    }

    /** One call. */
    @Benchmark
    public Buffer broadcast(Group g) {
        g.comm.broadcast(g.buffer, g.size, DataType.BYTE, 0);
        return g.buffer;
    }
}
