// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link MvapichProbeAndRequests} under MPICH's mpiexec with 2 and 4 ranks, with the default pieces
 * and with 4 KiB pieces (probes and matched receives of messages over the piece limit), both with
 * and without MPI-4's large-count calls.
 */
class MvapichProbeAndRequestsIT {

    @TestFactory
    List<DynamicNode> probeAndRequests() {
        List<DynamicNode> out = new ArrayList<>();
        for (int np : MpiJob.rankCounts()) {
            out.add(MpiJob.of("mvapich-probe", MpiJob.Family.MPICH, np).classes(MvapichProbeAndRequests.class)
                    .property("ferry.backend", "mvapich").property("ferry.timeout", "120").asTests());
        }
        for (String largeCount : new String[] {"auto", "false"}) {
            out.add(MpiJob.of("mvapich-probe-pieces-largeCount-" + largeCount, MpiJob.Family.MPICH, 2).classes(MvapichProbeAndRequests.class)
                    .property("ferry.backend", "mvapich").property("ferry.maxPieceBytes", "4096").property("ferry.mpi.largeCount", largeCount)
                    .property("ferry.timeout", "120").asTests());
        }
        return out;
    }
}
