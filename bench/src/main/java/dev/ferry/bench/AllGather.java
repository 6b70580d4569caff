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
 * How long does an all-gather take when every rank receives {@code size} bytes in total?
 * {@code MPI_Allgather} of bytes, back to back: every rank sends a block of {@code size / ranks}
 * bytes and receives {@code size / ranks * ranks} ({@link Question#block}; sizes smaller than the
 * number of ranks are not run). Every rank times its own calls; the report shows the slowest
 * rank's time per call (secondary metric {@value LockstepProfiler#SLOWEST_RANK}), as a collective
 * is done only when every rank is.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class AllGather {

    /** A send buffer of {@code block} bytes and a receive buffer of {@code block * ranks}. */
    @State(Scope.Benchmark)
    public static class Group extends JobState {
        Buffer sendBuffer;
        Buffer recvBuffer;
        long block;

        /** Opens the job and allocates the buffers; {@link IllegalStateException} for a size that does not split over the ranks. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            block = Question.ALLGATHER.block(size, ranks);
            if (block < 1) {
                throw new IllegalStateException("allgather: " + size + " bytes do not give each of " + ranks + " ranks one byte");
            }
            sendBuffer = memory.allocate(block);
            recvBuffer = memory.allocate(block * ranks);
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
    public Buffer allGather(Group g) {
        g.comm.allGather(g.sendBuffer, g.recvBuffer, g.block, DataType.BYTE);
        return g.recvBuffer;
    }
}
