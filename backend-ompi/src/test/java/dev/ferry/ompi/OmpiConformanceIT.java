// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

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

/**
 * Runs {@link OmpiContract} under Open MPI's mpirun with 2 and 4 ranks on both paths of backend
 * ompi ({@code ferry.ompi.binding=ffm} and {@code java}), and the selection failure path. CI runs
 * one path per row with {@code -Dferry.ompi.binding=ffm|java} (see {@link #bindings()}).
 */
class OmpiConformanceIT {

    /** The paths to test: {@code ferry.ompi.binding} of the test JVM when set, else both. */
    static List<String> bindings() {
        String only = System.getProperty("ferry.ompi.binding");
        return only == null || only.isBlank() || only.equals("auto") ? List.of("ffm", "java") : List.of(only.trim());
    }

    @TestFactory
    List<DynamicNode> conformance() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-" + binding, MpiJob.Family.OPEN_MPI, np).classes(OmpiContract.class).property("ferry.backend", "ompi")
                        .property("ferry.ompi.binding", binding).asTests());
            }
        }
        return out;
    }

    /** Every collective algorithm of the planner forced one by one, on the FFM path, at 2 and 4 ranks. */
    @TestFactory
    List<DynamicNode> algorithms() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("ompi-algorithms", MpiJob.Family.OPEN_MPI, np).classes(OmpiAlgorithms.class).property("ferry.backend", "ompi")
                    .property("ferry.ompi.binding", bindings().get(0)).asTests());
        }
        return out;
    }

    /** Ompi.wrap/unwrap on the mpi.jar path (built only with mpi.jar: profile mpi-jar). */
    @TestFactory
    List<DynamicNode> interopOnTheJavaPath() throws Exception {
        if (!bindings().contains("java")) {
            return List.of();
        }
        Class<?> interop = Class.forName("dev.ferry.ompi.OmpiInteropContract");
        return List.of(MpiJob.of("ompi-interop-java", MpiJob.Family.OPEN_MPI, 2).classes(interop)
                .property("ferry.backend", "ompi").property("ferry.ompi.binding", "java").asTests());
    }

    /** Messages over the piece limit: the same suite with 4 KiB pieces, so that 1 MiB messages go through the large-message calls. */
    @TestFactory
    List<DynamicNode> conformanceWithSmallPieces() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings()) {
            out.add(MpiJob.of("ompi-pieces-" + binding, MpiJob.Family.OPEN_MPI, 2).classes(OmpiContract.class)
                    .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).property("ferry.maxPieceBytes", "4096").asTests());
        }
        return out;
    }

    /**
     * The bad-input matrix (jqwik properties, seed {@code ferry.test.seed}); a hang would end in
     * the watchdog's message naming the stuck call instead of the per-test timeout.
     */
    @TestFactory
    List<DynamicNode> badInputMatrix() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-matrix-" + binding, MpiJob.Family.OPEN_MPI, np).classes(OmpiBadInputMatrix.class).property("ferry.backend", "ompi")
                        .property("ferry.ompi.binding", binding).property("ferry.timeout", "60").property("ferry.test.perTestTimeout", "600").asTests());
            }
        }
        return out;
    }

    /**
     * The vector collectives, reduce-scatter and prefix reductions ({@link CollectiveVariantsContract})
     * on both paths at 2 and 4 ranks, and with 4 KiB pieces, so that large blocks take the
     * point-to-point and per-block paths.
     */
    @TestFactory
    List<DynamicNode> collectiveVariants() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-variants-" + binding, MpiJob.Family.OPEN_MPI, np).classes(CollectiveVariantsContract.class)
                        .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).asTests());
            }
            out.add(MpiJob.of("ompi-variants-pieces-" + binding, MpiJob.Family.OPEN_MPI, 2).classes(CollectiveVariantsContract.class)
                    .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).property("ferry.maxPieceBytes", "4096").asTests());
        }
        return out;
    }

    /** Blocking calls on virtual threads with two carriers ({@link VirtualThreadsContract}), at 2 and 4 ranks, on each path. */
    @TestFactory
    List<DynamicNode> virtualThreads() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-virtual-threads-" + binding, MpiJob.Family.OPEN_MPI, np).classes(OmpiVirtualThreads.class)
                        .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).jvmArgs(VirtualThreadsContract.TWO_CARRIERS)
                        .property("ferry.test.perTestTimeout", VirtualThreadsContract.PER_TEST_SECONDS).asTests());
            }
        }
        return out;
    }

    @Test
    void unknownBackendFailsAtStartupWithTheProviderTable() throws Exception {
        MpiJob.Result r = MpiJob.of("nosuch", MpiJob.Family.OPEN_MPI, 2).property("ferry.backend", "nosuch")
                .main("dev.ferry.tools.Doctor", "--open").timeout(120).run();
        assertTrue(r.exitCode() != 0, "the job must fail");
        assertTrue(r.output().contains("unknown backend 'nosuch'"), r.tail(30));
        assertTrue(r.output().contains("ompi") && r.output().contains("available"), r.tail(30));
        assertEquals(false, r.timedOut());
    }
}
