// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.cuda.Cuda;
import dev.ferry.testing.MpiJob;
import dev.ferry.testing.Mvapich2;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The demo under MVAPICH2's own mpiexec ({@code ./ferry demo --mpi mvapich2}; the installation
 * comes from {@code -Dferry.test.mvapich2.home}, see {@link Mvapich2}): {@code auto} must choose
 * backend mvapich on MVAPICH2 (not Debian's MPICH), and every example must verify its result.
 */
class Mvapich2DemoIT {

    @TestFactory
    List<DynamicNode> demoUnderMvapich2() {
        return List.of(Mvapich2.rows("demo under MVAPICH2", () -> org.junit.jupiter.api.DynamicContainer.dynamicContainer("demo under MVAPICH2",
                Stream.of(MpiJob.rankCounts()).flatMapToInt(java.util.Arrays::stream).mapToObj(np ->
                        DynamicTest.dynamicTest(np + " ranks", () -> demo(np))))));
    }

    private static void demo(int np) throws Exception {
        Path out = Path.of("target", "demo-it-mvapich2", "np" + np).toAbsolutePath();
        String[] args = np <= 2 ? new String[] {"--out", out.toString()}
                : new String[] {"--out", out.toString(), "--size", "600x400", "--sizes", "8,64K,4M", "--reps", "50"};
        MpiJob.Result r = Mvapich2.job("demo-mvapich2", np).main(Demo.class.getName(), args).timeout(180).run();
        String log = r.output();
        assertFalse(r.timedOut(), "timed out:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), "exit code; output:\n" + r.tail(60));
        assertTrue(log.contains("Ferry demo: " + np + " ranks"), log);
        String chosen = log.lines().filter(l -> l.startsWith("ferry: backend ")).findFirst().orElse("");
        assertTrue(chosen.startsWith("ferry: backend mvapich: auto") && chosen.contains("MVAPICH2 2."), "auto must choose mvapich on MVAPICH2: " + chosen + "\n" + r.tail(40));
        assertFalse(log.contains("[FAIL]"), log);
        assertTrue(log.contains("[ok] scatter-shift-gather: " + np + " ranks"), log);
        assertTrue(log.contains("[ok] mandelbrot: "), log);
        assertTrue(log.contains("[ok] ping-pong: "), log);
        assertTrue(log.contains("[ok] uneven-scatter-shift-gather: " + np + " ranks"), log);
        assertTrue(log.contains("ferry demo: " + (Cuda.isAvailable() ? 5 : 4) + " passed"), log);
    }
}
