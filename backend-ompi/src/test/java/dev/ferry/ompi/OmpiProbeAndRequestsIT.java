// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link OmpiProbeAndRequests} under Open MPI's mpirun with 2 and 4 ranks on both paths of backend
 * ompi (a path given with {@code -Dferry.ompi.binding} runs alone), and with 4 KiB pieces, so that
 * probes and matched receives of messages over the piece limit (one derived datatype each) run.
 */
class OmpiProbeAndRequestsIT {

    @TestFactory
    List<DynamicNode> probeAndRequests() {
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : OmpiConformanceIT.bindings()) {
            for (int np : MpiJob.rankCounts()) {
                out.add(MpiJob.of("ompi-probe-" + binding, MpiJob.Family.OPEN_MPI, np).classes(OmpiProbeAndRequests.class)
                        .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).property("ferry.timeout", "120").asTests());
            }
            out.add(MpiJob.of("ompi-probe-pieces-" + binding, MpiJob.Family.OPEN_MPI, 2).classes(OmpiProbeAndRequests.class)
                    .property("ferry.backend", "ompi").property("ferry.ompi.binding", binding).property("ferry.maxPieceBytes", "4096")
                    .property("ferry.timeout", "120").asTests());
        }
        return out;
    }
}
