// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.MpiJob;
import java.awt.image.BufferedImage;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

/**
 * End to end under a real {@code mpirun -np 2}: the tiny suite (2 sizes, the ompi backend, a few
 * batches) through {@link BenchMain}, the native C reference with the arguments BenchMain prints,
 * then {@link Report}; checks the JMH JSON, the CSV, the markdown table and the PNG.
 */
class BenchIT {
    private static final List<String> ARGS = List.of("--suite", "tiny", "--backends", "ompi", "--benchmarks",
            "latency,bw,allreduce,reducescatter,allgather");

    /** {@code name} under the tests' report folder, emptied (the end-to-end tests write their results there). */
    static Path emptyReportDir(String name) throws java.io.IOException {
        Path out = Path.of(System.getProperty("ferry.test.reports", "target/ferry-ranks")).resolve(name).toAbsolutePath();
        if (Files.exists(out)) {
            try (var s = Files.walk(out)) {
                s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return out;
    }

    @Test
    void tinySuiteEndToEnd() throws Exception {
        Path out = emptyReportDir("bench-tiny-results");
        List<String> args = new ArrayList<>(ARGS);
        args.addAll(List.of("--out", out.toString()));
        MpiJob.Result r = MpiJob.of("bench-tiny", MpiJob.Family.OPEN_MPI, 2).main(BenchMain.class.getName(), args.toArray(String[]::new))
                .timeout(120).run();
        assertFalse(r.timedOut(), () -> "the tiny suite did not finish in time:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), () -> "the tiny suite failed:\n" + r.tail(40));
        // reducescatter at 8 B gives each of 2 ranks less than one double: skipped, said so
        assertTrue(r.output().contains("[bench] skip reducescatter at 8 B: too small to give each of 2 ranks one element"), () -> r.tail(40));
        assertTrue(r.output().contains("[bench 9/9] allgather ompi/pageable 4 KiB"), () -> r.tail(40));
        // no device memory here: no copy reference, and the run says why
        assertTrue(r.output().contains("[bench] no device-to-device copy reference: "), () -> r.tail(40));
        assertFalse(Files.exists(DeviceCopy.file(out, "openmpi")), "no d2dcopy rows without device memory");

        Path json = out.resolve("jmh-openmpi.json");
        List<Measurement> java = Measurement.readJmh(json, "openmpi");
        assertEquals(9, java.size(), "4 benchmarks x 2 sizes, reducescatter at 4 KiB only");
        assertEquals(List.of(4096L), java.stream().filter(m -> m.question() == Question.REDUCE_SCATTER).map(Measurement::size).toList());
        assertEquals(2, java.stream().filter(m -> m.question() == Question.ALLGATHER).count());
        for (Measurement m : java) {
            assertEquals(3, m.time().n(), m + ": 3 measured batches");
            assertTrue(m.time().median() > 0, m + ": a positive time");
        }
        assertTrue(Files.readString(out.resolve("run-openmpi.properties")).contains("backend.ompi="));

        Path bin = Path.of(System.getProperty("ferry.bench.native", "target/native/ferry-osu"));
        boolean haveNative = Files.isExecutable(bin);
        if (haveNative) {
            runNative(bin, out.resolve("native-openmpi.csv"));
            List<Measurement> c = Measurement.readNative(out.resolve("native-openmpi.csv"), "openmpi");
            assertEquals(9, c.size(), "the C reference ran the same runs: 4 benchmarks x 2 sizes, reducescatter at 4 KiB only");
            // the same batches on both sides: the suite's policy reached the C program intact
            Map<String, Integer> javaReps = java.stream().collect(Collectors.toMap(m -> m.question().id() + m.size(), Measurement::reps));
            for (Measurement m : c) {
                assertEquals(javaReps.get(m.question().id() + m.size()), m.reps(), "reps of " + m.question() + " at " + m.size());
            }
        } else {
            System.out.println("[bench-it] no native reference at " + bin + " (mpicc missing?): checking the Java side only");
        }

        Path[] written = Report.write(out, out, "auto");
        String md = Files.readString(written[0]);
        assertTrue(md.contains("## Ping-pong latency (one way) [us]"), md);
        assertTrue(md.contains("| 8 B |") && md.contains("| 4 KiB |"), md);
        assertTrue(md.contains("ompi / pageable"), md);
        assertTrue(md.contains("## Reduce-scatter (SUM, doubles, size sent per rank) [us]"), md);
        assertTrue(md.contains("## All-gather (size received per rank) [us]"), md);
        assertTrue(md.contains("**No device-to-device copy reference**") && !md.contains("/ copy |"), md);
        assertTrue(md.contains("- device-to-device copy reference: not measured: "), md);
        if (haveNative) {
            assertTrue(md.contains("C / pageable"), md);
        }
        BufferedImage png = ImageIO.read(written[1].toFile());
        assertTrue(png.getWidth() >= 1200 && png.getHeight() >= 600, "a readable plot: " + png.getWidth() + "x" + png.getHeight());
    }

    private static void runNative(Path bin, Path csv) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add("mpirun");
        if ("root".equals(System.getProperty("user.name"))) cmd.add("--allow-run-as-root");
        cmd.addAll(List.of("--oversubscribe", "-np", "2", bin.toString()));
        cmd.addAll(BenchMain.Options.parse(ARGS.toArray(String[]::new)).nativeArguments());
        cmd.addAll(List.of("--out", csv.toString()));
        Path log = csv.resolveSibling("native.log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putIfAbsent("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
        pb.environment().putIfAbsent("OMPI_MCA_btl_base_warn_component_unused", "0");
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the C reference did not finish in 60 s");
        assertEquals(0, p.exitValue(), () -> String.join(" ", cmd) + "\n" + read(log));
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }

    static {
        System.setProperty("java.awt.headless", "true");
        assert File.separatorChar == '/';
    }
}
