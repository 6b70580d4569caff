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
 * How long does an all-to-all exchange take when every rank sends {@code size} bytes to every
 * rank? {@code MPI_Alltoall}, back to back; the buffers hold {@code size * ranks} bytes. Every
 * rank times its own calls; the report shows the slowest rank's time per call (secondary metric
 * {@value LockstepProfiler#SLOWEST_RANK}), as a collective is done only when every rank is.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class AllToAll {

    /** A send and a receive buffer of {@code size * ranks} bytes. */
    @State(Scope.Benchmark)
    public static class Group extends JobState {
        Buffer sendBuffer;
        Buffer recvBuffer;

        /** Opens the job and allocates the buffers. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            sendBuffer = memory.allocate(size * ranks);
            recvBuffer = memory.allocate(size * ranks);
        }

        /** Frees the buffers. */
        @TearDown(Level.Trial)
        public void tearDown() {
            Memory.free(sendBuffer);
            Memory.free(recvBuffer);
        }
    }

    /** One call. */
    @Benchmark
    public Buffer allToAll(Group g) {
        g.comm.allToAll(g.sendBuffer, g.recvBuffer, g.size, DataType.BYTE);
        return g.recvBuffer;
    }
}
