// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link OmpiMessageMatching} under Open MPI's mpirun with 2 and 4 ranks and 4 KiB pieces, on both
 * paths of backend ompi (java.lang.foreign: derived datatypes on Open MPI 4.1, which has no
 * MPI_Send_c; mpi.jar: messages over the limit through the same FFM binding). A path given with
 * {@code -Dferry.ompi.binding=java|ffm} runs alone. With {@code ferry.matchReceives=all} (every
 * receive matched by Ferry first, as device receives always are), with {@link OmpiProbeAndRequests}.
 */
class OmpiMessageMatchingIT {

    @TestFactory
    List<DynamicNode> matching() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : OmpiConformanceIT.bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-matching-" + binding, MpiJob.Family.OPEN_MPI, np).classes(OmpiMessageMatching.class)
                        .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding)
                        .property("ferry.maxPieceBytes", "4096").asTests());
            }
        }
        for (String binding : OmpiConformanceIT.bindings()) {
            // every receive matched by Ferry before MPI receives into it (what device receives always get)
            out.add(MpiJob.of("ompi-matching-ferry-" + binding, MpiJob.Family.OPEN_MPI, 2).classes(OmpiMessageMatching.class, OmpiProbeAndRequests.class)
                    .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).property("ferry.matchReceives", "all")
                    .property("ferry.maxPieceBytes", "4096").property("ferry.timeout", "120").asTests());
        }
        if (OmpiConformanceIT.bindings().contains("ffm")) {
            // libmpi.so.40 loaded RTLD_LOCAL through SymbolLookup.libraryLookup alone: MPI_Init and its
            // components must work without the RTLD_GLOBAL load (they do with Debian's Open MPI 4.1.4)
            out.add(MpiJob.of("ompi-matching-ffm-rtld-local", MpiJob.Family.OPEN_MPI, 2).classes(OmpiMessageMatching.class)
                    .property("ferry.backend", "ompi").property("ferry.ompi.binding", "ffm").property("ferry.ompi.rtldGlobal", "false")
                    .property("ferry.maxPieceBytes", "4096").asTests());
        }
        return out;
    }
}
