// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.testing.MpiJob;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/** {@link NcclOverMpiRanks} on 2 real ranks under Open MPI's mpirun (inner ompi) and MPICH's mpiexec (inner mvapich). */
class NcclOverMpiIT {

    @TestFactory
    List<DynamicNode> overOpenMpiAndMpich() {
        return List.of(
                MpiJob.of("nccl-over-ompi", MpiJob.Family.OPEN_MPI, 2).classes(NcclOverMpiRanks.class).property("ferry.backend", "ompi").asTests(),
                MpiJob.of("nccl-over-mpich", MpiJob.Family.MPICH, 2).classes(NcclOverMpiRanks.class).property("ferry.backend", "mvapich").asTests());
    }
}
