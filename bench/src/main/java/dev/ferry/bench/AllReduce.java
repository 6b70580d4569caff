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
 * How long does an allreduce of {@code size} bytes take? {@code MPI_Allreduce} of {@code size /
 * 8} doubles with SUM, back to back. Every rank times its own calls; the report shows the slowest
 * rank's time per call (secondary metric {@value LockstepProfiler#SLOWEST_RANK}), as a collective
 * is done only when every rank is.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class AllReduce {

    /** A send and a receive buffer of {@code size} bytes (zeros: no denormals, no overflow). */
    @State(Scope.Benchmark)
    public static class Group extends JobState {
        Buffer sendBuffer;
        Buffer recvBuffer;
        long count;

        /** Opens the job and allocates the buffers. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            count = Math.max(1, size / DataType.DOUBLE.size());
            sendBuffer = memory.allocate(DataType.DOUBLE.bytes(count));
            recvBuffer = memory.allocate(DataType.DOUBLE.bytes(count));
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
    public Buffer allReduce(Group g) {
        g.comm.allReduce(g.sendBuffer, g.recvBuffer, g.count, DataType.DOUBLE, ReduceOp.SUM);
        return g.recvBuffer;
    }
}
