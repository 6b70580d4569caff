// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.testing.CollectiveVariantsContract;
import dev.ferry.testing.MpiJob;
import dev.ferry.testing.VirtualThreadsContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * Runs {@link StagedContract} on backend staged over Open MPI's mpirun: as configured by default
 * (host buffers straight, device buffers staged where there is a GPU), and with host buffers sent
 * through the whole staging pipeline in small chunks, so that chunking, pipelining, wildcards,
 * non-blocking requests, truncation and collectives through staging are exercised without a GPU.
 */
class StagedConformanceIT {

    /** The test mode: host buffers staged with threaded memcpy, 64 KiB chunks, 1 KiB threshold, 256-byte eager limit. */
    static MpiJob stagedHost(String name, int np) {
        return stagedHost(name, np, StagedContract.class);
    }

    static MpiJob stagedHost(String name, int np, Class<?>... suites) {
        return MpiJob.of(name, MpiJob.Family.OPEN_MPI, np).classes(suites)
                .property("ferry.backend", "staged")
                .property("ferry.staged.stageHostBuffers", "true")
                .property("ferry.staged.chunk", "64k")
                .property("ferry.staged.threshold", "1k")
                .property("ferry.staged.eager", "256")
                .property("ferry.staged.depth", "4")
                .property("ferry.staged.pool", "6");
    }

    @TestFactory
    List<DynamicNode> conformance() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("staged", MpiJob.Family.OPEN_MPI, np).classes(StagedContract.class).property("ferry.backend", "staged").asTests());
        }
        return out;
    }

    @TestFactory
    List<DynamicNode> conformanceThroughTheStagingPipeline() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(stagedHost("staged-host", np).asTests());
        }
        return out;
    }

    /**
     * The vector collectives, reduce-scatter and prefix reductions, as configured by default and
     * through the staging pipeline (host buffers staged: small calls through one staged inner call,
     * large blocks as staged messages, reduce-scatter per block, scans chunk by chunk).
     */
    @TestFactory
    List<DynamicNode> collectiveVariants() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("staged-variants", MpiJob.Family.OPEN_MPI, np).classes(CollectiveVariantsContract.class)
                    .property("ferry.backend", "staged").asTests());
            out.add(stagedHost("staged-host-variants", np, CollectiveVariantsContract.class).asTests());
        }
        return out;
    }

    /**
     * Every collective algorithm of the planner forced one by one ({@link StagedAlgorithms}): as
     * configured by default, and through the staging pipeline, where host buffers take the protocols
     * of the GPU folds (chain, gathered through host memory), at 2 and 4 ranks.
     */
    @TestFactory
    List<DynamicNode> algorithms() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("staged-algorithms", MpiJob.Family.OPEN_MPI, np).classes(StagedAlgorithms.class).property("ferry.backend", "staged").asTests());
            out.add(stagedHost("staged-host-algorithms", np, StagedAlgorithms.class).asTests());
        }
        return out;
    }

    /**
     * Reductions across nodes, node by node, through the staging pipeline: groups of two consecutive
     * ranks count as nodes ({@code ferry.staged.test.nodeGroup=2}), 2 nodes of 2 ranks and 2 nodes of
     * 2 and 1 (uneven); the reduction families of the suite, and the algorithms (the node-by-node test
     * with its counters among them).
     */
    @TestFactory
    List<DynamicNode> reductionsAcrossNodes() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : new int[] {3, 4}) {
            out.add(stagedHost("staged-host-nodes", np, StagedContract.class, StagedAlgorithms.class).property("ferry.staged.test.nodeGroup", "2")
                    .property("ferry.test.include", "c_allReduce|c_reduce|c_minloc|i_|staged_largeCollectives|a_every|h_reductionsAcrossNodes")
                    .asTests());
        }
        return out;
    }

    /**
     * Blocking calls on virtual threads with two carriers ({@link VirtualThreadsContract}): as
     * configured by default and through the staging pipeline, at 2 and 4 ranks.
     */
    @TestFactory
    List<DynamicNode> virtualThreads() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("staged-virtual-threads", MpiJob.Family.OPEN_MPI, np).classes(StagedVirtualThreads.class)
                    .property("ferry.backend", "staged").jvmArgs(VirtualThreadsContract.TWO_CARRIERS)
                    .property("ferry.test.perTestTimeout", VirtualThreadsContract.PER_TEST_SECONDS).asTests());
            out.add(stagedHost("staged-host-virtual-threads", np, StagedVirtualThreads.class).jvmArgs(VirtualThreadsContract.TWO_CARRIERS)
                    .property("ferry.test.perTestTimeout", VirtualThreadsContract.PER_TEST_SECONDS).asTests());
        }
        return out;
    }

    /** IPC offers for host buffers, which receivers refuse: the offer, reply and fallback path of the IPC protocol. */
    @TestFactory
    List<DynamicNode> conformanceThroughTheIpcFallback() {
        return List.of(stagedHost("staged-ipc-fallback", 2).property("ferry.staged.test.offerIpc", "true").asTests());
    }

    /**
     * The bad-input matrix on staged, through the staging pipeline (host buffers staged in small
     * chunks) and with the inner binding's pieces small, so that every rejection is checked on
     * the paths a device buffer takes.
     */
    @TestFactory
    List<DynamicNode> badInputMatrix() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(stagedHost("staged-matrix", np, StagedBadInputMatrix.class).property("ferry.maxPieceBytes", "65536")
                    .property("ferry.timeout", "60").property("ferry.test.perTestTimeout", "600").asTests());
        }
        return out;
    }
}
