// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The main job ({@code ferry demo}): opens the world with the backend {@link Ferry#open() auto}
 * selects, says (rank 0) which backend was chosen and why, what CUDA sees and which version of
 * the examples runs, then runs {@link ScatterShiftGather}, {@link UnevenScatterShiftGather} (on one
 * float more than {@code --floats}, so that the parts differ), {@link Mandelbrot}, {@link IpcExchange}
 * and {@link PingPong} on the same communicator, each printing one verified result line:
 *
 * <pre>
 * [ok] scatter-shift-gather: 2 ranks, 1M floats, mean 0.4998 -> 2.4998 (shift 2.0), every element checked; ...
 * [ok] uneven-scatter-shift-gather: 2 ranks, 1048577 floats in uneven parts of 524288 to 524289 (scatterV/gatherV), ...
 * [ok] mandelbrot: 1200x800, 2 ranks (400 rows each), ..., wrote ferry-demo-out/mandelbrot.png
 * [skip] ipc-exchange: no CUDA device (...)
 * [ok] ping-pong: ompi, host 8 B 1.92 us, 64 KiB 3.10 GB/s, ...; echoed data checked
 * </pre>
 *
 * <p>Exit code 0 when no check failed (skips are not failures), 1 when one failed, 2 for bad
 * options. An exception on a rank aborts the whole job (Ferry's uncaught-exception handler), so
 * that no rank waits forever.
 *
 * <p>Run: {@code mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp "examples/target/ferry-examples-*.jar:examples/target/lib/*:mpi.jar" dev.ferry.examples.Demo --out DIR}
 */
public final class Demo {
    private Demo() {
    }

    /** {@code ferry demo}: every example on one communicator; see the class comment for the exit codes. */
    public static void main(String[] args) {
        long t0 = System.nanoTime();
        int code;
        try (Communicator world = Ferry.open()) {
            int rank = world.rank();
            Options options = Examples.parse(args, rank);
            if (options == null) {
                code = 2;
            } else {
                code = run(world, options, t0) ? 0 : 1;
            }
        }
        System.out.flush();
        System.exit(code);
    }

    /** Runs every example on {@code world}; true when none failed (collective; printing on rank 0). */
    public static boolean run(Communicator world, Options options, long startNanos) {
        boolean root = world.rank() == 0;
        Mode mode = Mode.agree(world, options.mode());
        int[] gpus = gpus(world);
        if (root) {
            System.out.println("Ferry demo: " + world.size() + " ranks");
            System.out.println(Ferry.lastReport().summary());
            System.out.print(Ferry.lastReport().table());
            System.out.println("CUDA: " + Cuda.describe());
            System.out.println("GPUs: " + gpuLine(gpus));
            if (mode.usesGpu()) {
                System.out.println("kernels: " + Kernels.describe());
            }
            System.out.println("version: " + mode.describe(world));
            System.out.println();
            System.out.flush();
        }
        Map<String, BiFunction<Communicator, Options, Outcome>> examples = new LinkedHashMap<>();
        examples.put(ScatterShiftGather.NAME, ScatterShiftGather::run);
        // one float more than the even version, so that the parts differ between ranks
        examples.put(UnevenScatterShiftGather.NAME, (c, o) -> UnevenScatterShiftGather.run(c, new Options(o.out(), o.mode(), o.floats() + 1,
                o.shift(), o.seed(), o.width(), o.height(), o.maxIter(), o.ipcInts(), o.sizes(), o.reps())));
        examples.put(Mandelbrot.NAME, Mandelbrot::run);
        examples.put(IpcExchange.NAME, IpcExchange::run);
        examples.put(PingPong.NAME, PingPong::run);
        List<Outcome> outcomes = new ArrayList<>();
        for (Map.Entry<String, BiFunction<Communicator, Options, Outcome>> e : examples.entrySet()) {
            Outcome outcome;
            try {
                outcome = e.getValue().apply(world, options);
            } catch (RuntimeException | Error ex) {
                // the other ranks may be waiting for this one: say what happened, then let Ferry abort the job
                System.out.println(Outcome.Status.FAIL.tag() + " " + e.getKey() + ": rank " + world.rank() + ": " + ex);
                System.out.flush();
                throw ex;
            }
            outcomes.add(outcome);
            if (root) {
                System.out.println(outcome.line());
                System.out.flush();
            }
        }
        long ok = outcomes.stream().filter(o -> o.status() == Outcome.Status.OK).count();
        long skipped = outcomes.stream().filter(o -> o.status() == Outcome.Status.SKIP).count();
        long failed = outcomes.size() - ok - skipped;
        if (root) {
            System.out.println();
            System.out.printf("ferry demo: %d passed, %d skipped, %d failed on %s with %d ranks in %s%n", ok, skipped, failed,
                    world.backend(), world.size(), Fmt.millis((System.nanoTime() - startNanos) / 1000));
        }
        return failed == 0;
    }

    /** Every rank's GPU ordinal, -1 without one (collective). */
    private static int[] gpus(Communicator world) {
        try (HostBuffer mine = HostBuffer.allocate(4); HostBuffer all = HostBuffer.allocate(4L * world.size())) {
            mine.segment().set(ValueLayout.JAVA_INT, 0, Cuda.isAvailable() ? Cuda.defaultDevice().ordinal() : -1);
            world.allGather(mine, all, 1, DataType.INT);
            return all.segment().toArray(ValueLayout.JAVA_INT);
        }
    }

    private static String gpuLine(int[] gpus) {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < gpus.length; r++) {
            sb.append(r == 0 ? "" : ", ").append("rank ").append(r).append(gpus[r] < 0 ? " none" : " GPU " + gpus[r]);
        }
        return sb.toString();
    }
}
