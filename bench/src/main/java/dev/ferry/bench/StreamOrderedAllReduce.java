// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.StreamCommunicator;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Locale;

/**
 * allReduce of device buffers enqueued back to back on a stream through a stream-ordered view
 * ({@link Communicator#onStream}), as nccl-tests and {@code nccl_ref} time NCCL: per size, a batch
 * of calls enqueued without waiting, then one synchronize; the time per call is the batch's time
 * over its calls, the slowest rank's, median (min-max) of 7 batches. Beside it, the blocking
 * allReduce of the same buffers, batched the same way. Rank 0 prints one row per size with the
 * algorithm the planner ran it on ("view thread" where the call is run by the view's thread).
 *
 * <p>Run under the launcher: {@code mpirun -np N java ... dev.ferry.bench.StreamOrderedAllReduce [MAX_BYTES [CALLS]]}
 * ({@code CALLS}: the calls of a batch up to 1 MiB, 1000 by default).
 */
public final class StreamOrderedAllReduce {
    private static final long[] SIZES = {8, 1024, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256L << 20};
    private static final int BATCHES = 7;

    private StreamOrderedAllReduce() {
    }

    public static void main(String[] args) {
        long max = args.length > 0 ? Long.parseLong(args[0]) : 256L << 20;
        int smallCalls = args.length > 1 ? Integer.parseInt(args[1]) : 1000; // calls per batch up to 1 MiB
        Cuda.ensureAvailability();
        try (Communicator comm = Ferry.open(); CudaStream s = Cuda.newStream(); StreamCommunicator v = comm.onStream(s);
             HostBuffer t = HostBuffer.allocate(8); HostBuffer tMax = HostBuffer.allocate(8)) {
            boolean zero = comm.rank() == 0;
            if (zero) {
                System.out.println("backend " + comm.backend() + ", " + comm.size() + " ranks; " + Cuda.describe());
                System.out.println("each: the slowest rank's time per call in a batch enqueued back to back, median (min-max) of " + BATCHES + " batches, us");
                System.out.printf(Locale.ROOT, "%12s %8s %26s %26s  %s%n", "bytes", "calls", "stream-ordered", "blocking", "algorithm (stream-ordered)");
            }
            // the process's first thousands of calls run slower (the JIT, the GPU's clocks): a warm-up before any size
            try (DeviceBuffer a = Cuda.allocate(8); DeviceBuffer b = Cuda.allocate(8)) {
                Cuda.fill(a, (byte) 0);
                for (int round = 0; round < 5; round++) {
                    for (int i = 0; i < 2000; i++) v.allReduce(a, b, 2, DataType.FLOAT, ReduceOp.SUM);
                    v.synchronize();
                    for (int i = 0; i < 2000; i++) comm.allReduce(a, b, 2, DataType.FLOAT, ReduceOp.SUM);
                }
            }
            for (long bytes : SIZES) {
                if (bytes > max) break;
                long count = bytes / 4;
                try (DeviceBuffer a = Cuda.allocate(bytes); DeviceBuffer b = Cuda.allocate(bytes)) {
                    Cuda.fill(a, (byte) 0);
                    int calls = bytes <= (1 << 20) ? smallCalls : bytes <= (16 << 20) ? 200 : 20;
                    // warm-up, and the algorithm the planner picks for the stream-ordered call
                    CollectivesDiagnostics.forgetLastAlgorithm();
                    // warm-up: one batch of each (the JIT compiles the calls' paths during the first sizes' batches otherwise)
                    for (int i = 0; i < calls; i++) v.allReduce(a, b, count, DataType.FLOAT, ReduceOp.SUM);
                    v.synchronize();
                    String algorithm = CollectivesDiagnostics.lastAlgorithm();
                    for (int i = 0; i < calls; i++) comm.allReduce(a, b, count, DataType.FLOAT, ReduceOp.SUM);
                    double[] streamed = new double[BATCHES], blocking = new double[BATCHES];
                    for (int k = 0; k < BATCHES; k++) {
                        comm.barrier();
                        long t0 = System.nanoTime();
                        for (int i = 0; i < calls; i++) v.allReduce(a, b, count, DataType.FLOAT, ReduceOp.SUM);
                        v.synchronize();
                        streamed[k] = slowest(comm, t, tMax, (System.nanoTime() - t0) / 1e3 / calls);
                        comm.barrier();
                        t0 = System.nanoTime();
                        for (int i = 0; i < calls; i++) comm.allReduce(a, b, count, DataType.FLOAT, ReduceOp.SUM);
                        blocking[k] = slowest(comm, t, tMax, (System.nanoTime() - t0) / 1e3 / calls);
                    }
                    if (zero) {
                        System.out.printf(Locale.ROOT, "%12d %8d %26s %26s  %s%n", bytes, calls, stats(streamed), stats(blocking),
                                algorithm == null ? "view thread" : algorithm);
                    }
                }
            }
        }
    }

    private static double slowest(Communicator comm, HostBuffer t, HostBuffer tMax, double mine) {
        t.segment().set(ValueLayout.JAVA_DOUBLE, 0, mine);
        comm.allReduce(t, tMax, 1, DataType.DOUBLE, ReduceOp.MAX);
        return tMax.segment().get(ValueLayout.JAVA_DOUBLE, 0);
    }

    private static String stats(double[] a) {
        double[] s = a.clone();
        Arrays.sort(s);
        return String.format(Locale.ROOT, "%.2f (%.2f-%.2f)", s[s.length / 2], s[0], s[s.length - 1]);
    }
}
