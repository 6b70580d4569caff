// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.ReduceOp;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.cuda.Cuda;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * Does taking turns between two allReduces cost a call anything, as a training step's buckets do?
 * On device buffers (doubles, SUM), the allReduce of {@code SMALL} bytes and that of {@code LARGE}
 * bytes each {@code CALLS} times alone, then the two in turn {@code CALLS} times; three rounds,
 * after a warm-up. Each call is timed on rank 0 from its start to its return (the median and the
 * 90th percentile, µs), with the planner's algorithm of each size, the first five calls in turn (a
 * change of shape after a long series), and the IPC collectives' counters over the rounds
 * ({@code ipcRepeatedCalls}: calls that skipped the meeting after the mappings).
 *
 * <p>{@code mpirun -np N java -cp ... dev.ferry.bench.ShapesInTurn SMALL LARGE [CALLS] [--distinct]}:
 * with {@code --distinct} each size has buffers of its own (as buckets do), else both use the same.
 */
public final class ShapesInTurn {
    private ShapesInTurn() {
    }

    public static void main(String[] args) {
        long small = Long.parseLong(args[0]), large = Long.parseLong(args[1]);
        int calls = args.length > 2 && !args[2].startsWith("--") ? Integer.parseInt(args[2]) : 2000;
        boolean distinct = Arrays.asList(args).contains("--distinct");
        Cuda.ensureAvailability();
        try (Communicator c = Ferry.open(); DeviceBuffer in = Cuda.allocate(large); DeviceBuffer out = Cuda.allocate(large);
                DeviceBuffer in2 = Cuda.allocate(distinct ? small : 8); DeviceBuffer out2 = Cuda.allocate(distinct ? small : 8)) {
            DeviceBuffer smallIn = distinct ? in2 : in, smallOut = distinct ? out2 : out;
            Runnable a = () -> c.allReduce(smallIn, smallOut, small / 8, DataType.DOUBLE, ReduceOp.SUM);
            Runnable b = () -> c.allReduce(in, out, large / 8, DataType.DOUBLE, ReduceOp.SUM);
            for (int i = 0; i < 3000; i++) a.run();
            String algoA = CollectivesDiagnostics.lastAlgorithm();
            for (int i = 0; i < 300; i++) b.run();
            String algoB = CollectivesDiagnostics.lastAlgorithm();
            if (c.rank() == 0) {
                System.out.printf("%s, %d ranks; allReduce of %d B (%s) and of %d B (%s), %s buffers; %d calls per series; us per call on rank 0%n",
                        c.backend(), c.size(), small, algoA, large, algoB, distinct ? "distinct" : "the same", calls);
            }
            Map<String, Long> before = new TreeMap<>(CollectivesDiagnostics.counters());
            long[] aAlone = new long[calls], bAlone = new long[calls], aTurn = new long[calls], bTurn = new long[calls];
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < calls; i++) aAlone[i] = timed(a);
                for (int i = 0; i < calls; i++) bAlone[i] = timed(b);
                for (int i = 0; i < calls; i++) {
                    aTurn[i] = timed(a);
                    bTurn[i] = timed(b);
                }
                if (c.rank() == 0) {
                    System.out.printf("round %d: %d B alone %s, in turn %s, first five %s | %d B alone %s, in turn %s, first five %s%n", round, small,
                            stats(aAlone), stats(aTurn), firstFive(aTurn), large, stats(bAlone), stats(bTurn), firstFive(bTurn));
                }
            }
            if (c.rank() == 0) {
                Map<String, Long> after = new TreeMap<>(CollectivesDiagnostics.counters());
                StringBuilder sb = new StringBuilder("counters over the rounds (" + 12 * calls + " calls):");
                after.forEach((k, v) -> {
                    long d = v - before.getOrDefault(k, 0L);
                    if (d != 0) sb.append(' ').append(k).append('=').append(d);
                });
                System.out.println(sb);
            }
        }
    }

    private static long timed(Runnable r) {
        long t = System.nanoTime();
        r.run();
        return System.nanoTime() - t;
    }

    private static String stats(long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        return String.format(java.util.Locale.ROOT, "median %.1f p90 %.1f", s[s.length / 2] / 1e3, s[(int) (s.length * 0.9)] / 1e3);
    }

    private static String firstFive(long[] ns) {
        return Arrays.toString(Arrays.stream(ns).limit(5).map(x -> Math.round(x / 1e3)).toArray());
    }
}
