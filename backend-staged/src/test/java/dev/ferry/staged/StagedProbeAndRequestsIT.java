// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link StagedProbeAndRequests} with 2 and 4 ranks under both launchers (Open MPI's mpirun: inner
 * ompi; MPICH's mpiexec: inner mvapich), as configured by default, and through the staging
 * pipeline (host buffers staged, a 256-byte eager limit: most messages travel as a first piece
 * and chunks, whose probes must report the user's message).
 */
class StagedProbeAndRequestsIT {

    @TestFactory
    List<DynamicNode> probeAndRequests() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("staged-probe", MpiJob.Family.OPEN_MPI, np).classes(StagedProbeAndRequests.class)
                    .property("ferry.backend", "staged").property("ferry.timeout", "120").asTests());
            out.add(StagedConformanceIT.stagedHost("staged-host-probe", np, StagedProbeAndRequests.class).property("ferry.timeout", "120").asTests());
            out.add(MpiJob.of("staged-probe-mpich", MpiJob.Family.MPICH, np).classes(StagedProbeAndRequests.class)
                    .property("ferry.backend", "staged").property("ferry.timeout", "120").asTests());
        }
        return out;
    }
}
