// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link MvapichMessageMatching} under MPICH's mpiexec with 2 and 4 ranks and 4 KiB pieces, once
 * with MPI-4's large-count calls (MPICH 4 exports MPI_Send_c) and once with derived datatypes
 * ({@code ferry.mpi.largeCount=false}); and with {@code ferry.matchReceives=all} (every receive
 * matched by Ferry first, as device receives always are), with {@link MvapichProbeAndRequests}.
 */
class MvapichMessageMatchingIT {

    @TestFactory
    List<DynamicNode> matching() {
        List<DynamicNode> out = new ArrayList<>();
        for (String largeCount : List.of("auto", "false")) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("mvapich-matching-largeCount-" + largeCount, MpiJob.Family.MPICH, np).classes(MvapichMessageMatching.class)
                        .property("ferry.backend", "mvapich").property("ferry.mpi.largeCount", largeCount)
                        .property("ferry.maxPieceBytes", "4096").asTests());
            }
        }
        // every receive matched by Ferry before MPI receives into it (what device receives always get)
        out.add(MpiJob.of("mvapich-matching-ferry", MpiJob.Family.MPICH, 2).classes(MvapichMessageMatching.class, MvapichProbeAndRequests.class)
                .property("ferry.backend", "mvapich").property("ferry.matchReceives", "all").property("ferry.maxPieceBytes", "4096")
                .property("ferry.timeout", "120").asTests());
        return out;
    }
}
