package dev.ferry.mvapich;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link MvapichMessageMatching} under MPICH's mpiexec with 2 and 4 ranks and 4 KiB pieces, once
 * with MPI-4's large-count calls (MPICH 4 exports MPI_Send_c) and once with derived datatypes
 * ({@code ferry.mpi.largeCount=false}).
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
        return out;
    }
}
