// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.CollectiveVariantsContract;
import dev.ferry.testing.MpiJob;
import dev.ferry.testing.VirtualThreadsContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Runs {@link MvapichContract} under MPICH's mpiexec (Hydra) with 2 and 4 ranks, with small pieces, and the selection failure path. */
class MvapichConformanceIT {

    @TestFactory
    List<DynamicNode> conformance() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("mvapich", MpiJob.Family.MPICH, np).classes(MvapichContract.class).property("ferry.backend", "mvapich").asTests());
        }
        return out;
    }

    /**
     * Messages split into pieces: the same suite with 4 KiB pieces, so that 1 MiB messages take 257
     * calls; in the same job the library is loaded RTLD_GLOBAL ({@code ferry.mvapich.rtldGlobal=true}).
     */
    /** The bad-input matrix (jqwik properties, seed {@code ferry.test.seed}), as on ompi. */
    /** Every collective algorithm of the planner forced one by one, at 2 ranks. */
    @TestFactory
    List<DynamicNode> algorithms() {
        return List.of(MpiJob.of("mvapich-algorithms", MpiJob.Family.MPICH, 2).classes(MvapichAlgorithms.class).property("ferry.backend", "mvapich")
                .asTests());
    }

    @TestFactory
    List<DynamicNode> badInputMatrix() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("mvapich-matrix", MpiJob.Family.MPICH, np).classes(MvapichBadInputMatrix.class).property("ferry.backend", "mvapich")
                    .property("ferry.timeout", "60").property("ferry.test.perTestTimeout", "600").asTests());
        }
        return out;
    }

    @TestFactory
    List<DynamicNode> conformanceWithSmallPiecesAndAGlobalLibrary() {
        return List.of(MpiJob.of("mvapich-pieces", MpiJob.Family.MPICH, 2).classes(MvapichContract.class)
                .property("ferry.backend", "mvapich").property("ferry.maxPieceBytes", "4096")
                .property("ferry.mvapich.rtldGlobal", "true").asTests());
    }

    /** The vector collectives, reduce-scatter and prefix reductions at 2 and 4 ranks, and with 4 KiB pieces. */
    @TestFactory
    List<DynamicNode> collectiveVariants() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("mvapich-variants", MpiJob.Family.MPICH, np).classes(CollectiveVariantsContract.class)
                    .property("ferry.backend", "mvapich").asTests());
        }
        out.add(MpiJob.of("mvapich-variants-pieces", MpiJob.Family.MPICH, 2).classes(CollectiveVariantsContract.class)
                .property("ferry.backend", "mvapich").property("ferry.maxPieceBytes", "4096").asTests());
        return out;
    }

    /** Blocking calls on virtual threads with two carriers ({@link VirtualThreadsContract}), at 2 and 4 ranks. */
    @TestFactory
    List<DynamicNode> virtualThreads() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("mvapich-virtual-threads", MpiJob.Family.MPICH, np).classes(MvapichVirtualThreads.class)
                    .property("ferry.backend", "mvapich").jvmArgs(VirtualThreadsContract.TWO_CARRIERS)
                    .property("ferry.test.perTestTimeout", VirtualThreadsContract.PER_TEST_SECONDS).asTests());
        }
        return out;
    }

    @Test
    void unknownBackendFailsAtStartupWithTheProviderTable() throws Exception {
        MpiJob.Result r = MpiJob.of("mvapich-nosuch", MpiJob.Family.MPICH, 2).property("ferry.backend", "nosuch")
                .main("dev.ferry.tools.Doctor", "--open").timeout(120).run();
        assertTrue(r.exitCode() != 0, "the job must fail");
        assertTrue(r.output().contains("unknown backend 'nosuch'"), r.tail(30));
        assertTrue(r.output().contains("mvapich") && r.output().contains("MPICH"), r.tail(30));
        assertEquals(false, r.timedOut());
    }

    @Test
    void theLibrarySettingWinsAndAMissingLibraryIsExplained() throws Exception {
        String lib = System.getProperty("ferry.test.mpichlib", "/usr/lib/x86_64-linux-gnu/libmpich.so.12");
        if (java.nio.file.Files.isRegularFile(java.nio.file.Path.of(lib))) {
            MpiJob.Result ok = MpiJob.of("mvapich-lib-setting", MpiJob.Family.MPICH, 2).property("ferry.mvapich.lib", lib)
                    .main("dev.ferry.tools.Doctor", "--open").timeout(120).run();
            assertEquals(0, ok.exitCode(), ok.tail(30));
            assertTrue(ok.output().contains("found by: -Dferry.mvapich.lib=" + lib), ok.tail(30));
            assertTrue(ok.output().contains("opened mvapich"), ok.tail(30));
        }
        MpiJob.Result missing = MpiJob.of("mvapich-lib-missing", MpiJob.Family.MPICH, 2).property("ferry.mvapich.lib", "/nonexistent/libmpi.so.12")
                .property("ferry.backend", "mvapich").main("dev.ferry.tools.Doctor", "--open").timeout(120).run();
        assertTrue(missing.exitCode() != 0, missing.tail(30));
        assertTrue(missing.output().contains("backend mvapich is unavailable"), missing.tail(30));
        assertTrue(missing.output().contains("/nonexistent/libmpi.so.12") && missing.output().contains("does not exist"), missing.tail(30));
        assertEquals(false, missing.timedOut());
    }
}
