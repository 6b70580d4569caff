// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.MpiJob;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The GPU check run without a GPU under a real {@code mpirun -np 2}: {@code --cpu} (host memory
 * for device memory) with the staged backend's test mode that sends host buffers through the
 * pipeline, so that every part of the check that reads the backend through
 * {@code StagedDiagnostics} runs: IPC off on a duplicate, the counters, the sweep's tunings and the
 * timed native calls of the breakdown.
 */
class StagedCheckIT {

    @Test
    void checkRunsOnHostMemoryThroughThePipeline() throws Exception {
        Path dir = Path.of(System.getProperty("ferry.test.reports", "target/ferry-ranks")).toAbsolutePath();
        Files.createDirectories(dir);
        Path report = dir.resolve("staged-check-cpu.md");
        Files.deleteIfExists(report);
        MpiJob.Result r = MpiJob.of("staged-check-cpu", MpiJob.Family.OPEN_MPI, 2)
                .property("ferry.staged.stageHostBuffers", "true")
                .main(StagedCheck.class.getName(), "--cpu", "--quick", "--sweep", "--max", "4m", "--no-verdict-exit", report.toString())
                .timeout(180).run();
        assertFalse(r.timedOut(), () -> "the check did not finish in time:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), () -> "the check failed:\n" + r.tail(40));
        String md = Files.readString(report);
        assertTrue(md.contains("PASS every byte of every path and size was right"), md);
        assertTrue(md.contains("stage host buffers=yes"), "the settings line comes from the backend: " + md);
        // the breakdown's 4 MiB row: the pipeline's copies as the memcpy engine counts them (StagedCallCountTest's budget)
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| 0 | 4194304 |") && l.contains("cuMemcpyAsync D2H 4.0") && l.contains("cuMemcpyAsync H2D 4.0")), md);
        assertTrue(md.contains("- T1: chunk 4 MiB (fixed), threshold 1 MiB, depth 4"), md);
        assertTrue(md.lines().anyMatch(l -> l.startsWith("staged counters on rank 0: {") && !l.contains("stagedChunksOut=0,")), md);
    }
}
