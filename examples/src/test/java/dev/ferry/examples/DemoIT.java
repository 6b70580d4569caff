// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.cuda.Cuda;
import dev.ferry.testing.MpiJob;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Runs the demo and every example under Open MPI's mpirun on this machine (GPU or not), as
 * {@code ferry demo} does, and checks exit codes, result lines and the PNG.
 */
class DemoIT {
    private static final Path OUT = Path.of("target", "demo-it");

    static IntStream rankCounts() {
        return IntStream.of(MpiJob.rankCounts());
    }

    /** 2 ranks with the defaults (what {@code ferry demo} runs); more ranks with smaller sizes, to stay quick. */
    @ParameterizedTest(name = "{0} ranks")
    @MethodSource("rankCounts")
    void demoRunsEveryExampleAndVerifiesIt(int np) throws Exception {
        Path out = OUT.resolve("np" + np).toAbsolutePath();
        String[] args = np <= 2 ? new String[] {"--out", out.toString()}
                : new String[] {"--out", out.toString(), "--size", "600x400", "--sizes", "8,64K,4M", "--reps", "50"};
        MpiJob.Result r = MpiJob.of("demo", MpiJob.Family.OPEN_MPI, np).main(Demo.class.getName(), args).timeout(120).run();
        String log = r.output();
        assertFalse(r.timedOut(), "timed out:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), "exit code; output:\n" + r.tail(60));
        assertTrue(log.contains("Ferry demo: " + np + " ranks"), log);
        assertTrue(log.contains("ferry: backend "), "the selection summary: " + log);
        assertTrue(log.contains("Ferry backends (requested: auto"), "the selection table: " + log);
        assertTrue(log.contains("\nCUDA: "), log);
        assertTrue(log.contains("\nversion: "), log);
        assertFalse(log.contains("[FAIL]"), log);

        line(log, "[ok] scatter-shift-gather: " + np + " ranks, 1M floats, mean 0.5");
        assertTrue(line(log, "[ok] scatter-shift-gather: ").contains("every element checked"), log);
        String uneven = line(log, "[ok] uneven-scatter-shift-gather: " + np + " ranks, 1048577 floats in uneven parts of ");
        assertTrue(uneven.contains("(scatterV/gatherV)") && uneven.contains("every element checked"), uneven);
        String mandelbrot = line(log, "[ok] mandelbrot: ");
        assertTrue(mandelbrot.contains(np + " ranks") && mandelbrot.contains("sampled rows equal the CPU's"), mandelbrot);
        String ipc = Cuda.isAvailable() && Cuda.deviceCount() > 0 ? line(log, "[ok] ipc-exchange: ") : line(log, "[skip] ipc-exchange: needs a CUDA device on every rank");
        assertFalse(ipc.isEmpty());
        String pingPong = line(log, "[ok] ping-pong: ");
        assertTrue(pingPong.contains("host 8 B ") && pingPong.contains("echoed data checked"), pingPong);
        assertTrue(log.contains("ferry demo: " + (Cuda.isAvailable() ? 5 : 4) + " passed"), log);

        BufferedImage png = ImageIO.read(out.resolve(Mandelbrot.FILE).toFile());
        assertEquals(np <= 2 ? 1200 : 600, png.getWidth());
        assertEquals(np <= 2 ? 800 : 400, png.getHeight());
        assertEquals(0, png.getRGB(png.getWidth() * 2 / 3, png.getHeight() / 2) & 0xFFFFFF, "main cardioid is black");
        assertNotEquals(0, png.getRGB(2, 2) & 0xFFFFFF, "far outside is coloured");
    }

    @Test
    void everyExampleRunsAsItsOwnMain() throws Exception {
        Path out = OUT.resolve("mains").toAbsolutePath();
        record Run(Class<?> main, List<String> args, String expect) {
        }
        for (Run run : List.of(
                new Run(ScatterShiftGather.class, List.of("--floats", "300000", "--shift", "-1.25"), "[ok] scatter-shift-gather: 2 ranks, 300000 floats"),
                new Run(UnevenScatterShiftGather.class, List.of("--floats", "300001", "--shift", "-1.25"),
                        "[ok] uneven-scatter-shift-gather: 2 ranks, 300001 floats in uneven parts of 150000 to 150001 (scatterV/gatherV)"),
                new Run(Mandelbrot.class, List.of("--out", out.toString(), "--size", "320x200", "--max-iter", "200"), "[ok] mandelbrot: 320x200, 2 ranks (100 rows each)"),
                new Run(IpcExchange.class, List.of(), Cuda.isAvailable() ? "[ok] ipc-exchange: " : "[skip] ipc-exchange: "),
                new Run(PingPong.class, List.of("--sizes", "8,1M", "--reps", "20"), "[ok] ping-pong: "))) {
            MpiJob.Result r = MpiJob.of(run.main().getSimpleName(), MpiJob.Family.OPEN_MPI, 2)
                    .main(run.main().getName(), run.args().toArray(String[]::new)).timeout(90).run();
            assertEquals(0, r.exitCode(), run.main().getSimpleName() + " exit code; output:\n" + r.tail(40));
            line(r.output(), run.expect());
        }
        assertTrue(Files.isRegularFile(out.resolve(Mandelbrot.FILE)));
    }

    @Test
    void aBadOptionExitsWith2AndTheUsage() throws Exception {
        MpiJob.Result r = MpiJob.of("demo-bad-option", MpiJob.Family.OPEN_MPI, 2).main(Demo.class.getName(), "--size", "big").timeout(60).run();
        assertNotEquals(0, r.exitCode());
        assertTrue(r.output().contains("--size takes WIDTHxHEIGHT"), r.tail(30));
    }

    @Test
    void aVersionThatCannotRunHereFailsTheJobAndSaysWhy() throws Exception {
        Assumptions.assumeFalse(Cuda.isAvailable(), "this machine has a GPU");
        MpiJob.Result r = MpiJob.of("demo-device-without-gpu", MpiJob.Family.OPEN_MPI, 2).main(Demo.class.getName(), "--mode", "device").timeout(60).run();
        assertNotEquals(0, r.exitCode());
        assertTrue(r.output().contains("--mode device cannot run on every rank"), r.tail(30));
    }

    /** The line of {@code log} that starts with {@code prefix}; fails when there is none. */
    private static String line(String log, String prefix) {
        return log.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting with '" + prefix + "' in:\n" + log));
    }
}
