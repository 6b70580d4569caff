// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;
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
 * How long does a reduce-scatter take when every rank contributes {@code size} bytes?
 * {@code MPI_Reduce_scatter_block} of doubles with SUM, back to back: every rank sends
 * {@code size / 8 / ranks * ranks} doubles and receives its block of {@code size / 8 / ranks}
 * ({@link Question#block}; sizes that do not give every rank one double are not run). Every rank
 * times its own calls; the report shows the slowest rank's time per call (secondary metric
 * {@value LockstepProfiler#SLOWEST_RANK}), as a collective is done only when every rank is.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class ReduceScatter {

    /** A send buffer of {@code block * ranks} doubles and a receive buffer of {@code block} (zeros: no denormals, no overflow). */
    @State(Scope.Benchmark)
    public static class Group extends JobState {
        Buffer sendBuffer;
        Buffer recvBuffer;
        long block;

        /** Opens the job and allocates the buffers; {@link IllegalStateException} for a size that does not split over the ranks. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            block = Question.REDUCE_SCATTER.block(size, ranks);
            if (block < 1) {
                throw new IllegalStateException("reducescatter: " + size + " bytes do not give each of " + ranks + " ranks one double");
            }
            sendBuffer = memory.allocate(DataType.DOUBLE.bytes(block * ranks));
            recvBuffer = memory.allocate(DataType.DOUBLE.bytes(block));
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
    public Buffer reduceScatter(Group g) {
        g.comm.reduceScatterBlock(g.sendBuffer, g.recvBuffer, g.block, DataType.DOUBLE, ReduceOp.SUM);
        return g.recvBuffer;
    }
}
