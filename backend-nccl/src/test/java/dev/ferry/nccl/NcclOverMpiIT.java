// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.testing.MpiJob;
import dev.ferry.testing.VirtualThreadsContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/** {@link NcclOverMpiRanks} on 2 real ranks under Open MPI's mpirun (inner ompi) and MPICH's mpiexec (inner mvapich). */
class NcclOverMpiIT {
    /** The futures of requests ({@link NcclProbeAndRequests}) and the crossed start of first non-blocking collectives ({@link NcclConformance}). */
    private static final String ASYNC_TESTS = "uture|h_firstNonBlockingCollectivesStartedInCrossedOrder";

    /**
     * On backend nccl's stack without a GPU, under both launchers: futures of requests and the
     * crossed start of first non-blocking collectives at 2 and 4 ranks, and blocking calls on
     * virtual threads with two carriers.
     */
    @TestFactory
    List<DynamicNode> asynchronousCalls() {
        List<DynamicNode> out = new ArrayList<>();
        for (MpiJob.Family family : MpiJob.Family.values()) {
            String inner = family == MpiJob.Family.OPEN_MPI ? "ompi" : "mvapich";
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("nccl-async-over-" + inner, family, np).classes(NcclConformance.class, NcclProbeAndRequests.class)
                        .property("ferry.backend", inner).property("ferry.test.include", ASYNC_TESTS).asTests());
                out.add(MpiJob.of("nccl-virtual-threads-over-" + inner, family, np).classes(NcclVirtualThreads.class)
                        .property("ferry.backend", inner).jvmArgs(VirtualThreadsContract.TWO_CARRIERS)
                        .property("ferry.test.perTestTimeout", VirtualThreadsContract.PER_TEST_SECONDS).asTests());
            }
        }
        return out;
    }

    @TestFactory
    List<DynamicNode> overOpenMpiAndMpich() {
        return List.of(
                MpiJob.of("nccl-over-ompi", MpiJob.Family.OPEN_MPI, 2).classes(NcclOverMpiRanks.class).property("ferry.backend", "ompi").asTests(),
                MpiJob.of("nccl-over-mpich", MpiJob.Family.MPICH, 2).classes(NcclOverMpiRanks.class).property("ferry.backend", "mvapich").asTests());
    }
}
