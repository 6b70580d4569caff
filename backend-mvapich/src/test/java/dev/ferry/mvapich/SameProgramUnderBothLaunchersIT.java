// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.MpiJob;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The same program and class path, with {@code -Dferry.backend=auto}, under MPICH's mpiexec and
 * under Open MPI's mpirun: each launcher gets its own backend, and neither process maps the other
 * family's library (the other provider refuses by family, before loading anything; under Hydra
 * Open MPI's mpi.jar is on the class path and still untouched).
 */
class SameProgramUnderBothLaunchersIT {

    private static List<String> lines(MpiJob.Result r, int np) {
        assertFalse(r.timedOut(), r.tail(40));
        assertEquals(0, r.exitCode(), r.tail(40));
        List<String> lines = r.output().lines().filter(l -> l.startsWith("same-program ")).toList();
        assertEquals(np, lines.size(), r.tail(40));
        return lines;
    }

    @Test
    void underMpichHydraAutoPicksMvapich() throws Exception {
        MpiJob.Result r = MpiJob.of("same-program-mpich", MpiJob.Family.MPICH, 2).property("ferry.backend", "auto")
                .main(SameProgram.class.getName()).timeout(180).run();
        for (String l : lines(r, 2)) {
            assertTrue(l.contains(" size=2 backend=mvapich sum=3 "), l);
            assertTrue(l.contains("libmpich=yes libmpi40=no"), l);
            assertTrue(l.contains("| mvapich=available"), l);
            assertTrue(l.contains("| ompi=unavailable: this process belongs to the MPICH family"), l);
        }
    }

    @Test
    void underOpenMpiAutoPicksOmpi() throws Exception {
        MpiJob.Result r = MpiJob.of("same-program-ompi", MpiJob.Family.OPEN_MPI, 2).property("ferry.backend", "auto")
                .main(SameProgram.class.getName()).timeout(180).run();
        for (String l : lines(r, 2)) {
            assertTrue(l.contains(" size=2 backend=ompi sum=3 "), l);
            assertTrue(l.contains("libmpich=no libmpi40=yes"), l);
            assertTrue(l.contains("| ompi=available"), l);
            assertTrue(l.contains("| mvapich=unavailable: this process belongs to Open MPI"), l);
        }
    }

    @Test
    void doctorUnderMpichOpensMvapich() throws Exception {
        MpiJob.Result r = MpiJob.of("doctor-mpich", MpiJob.Family.MPICH, 2).property("ferry.backend", "auto")
                .main("dev.ferry.tools.Doctor", "--open").timeout(180).run();
        assertEquals(0, r.exitCode(), r.tail(40));
        assertTrue(r.output().contains("opened mvapich: rank 0 of 2"), r.tail(40));
        assertTrue(r.output().contains("opened mvapich: rank 1 of 2"), r.tail(40));
        assertTrue(r.output().contains("library: MPICH") || r.output().contains("library: MVAPICH"), r.tail(40));
    }
}
