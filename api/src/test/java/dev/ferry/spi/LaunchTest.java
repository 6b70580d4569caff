// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Settings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link Launch#detect(Map)} for each launcher, from environments as the launchers make them. */
class LaunchTest {

    private static final Settings NONE = Settings.of(Map.of());

    /** What Slurm 22.05's srun gives every task (the variables common to all --mpi types), task 1 of 4 on its node's slot 1. */
    private static Map<String, String> srunTask(String mpiType) {
        Map<String, String> env = new HashMap<>();
        env.put("SLURM_JOB_ID", "6");
        env.put("SLURM_STEP_ID", "0");
        env.put("SLURM_STEPID", "0");
        env.put("SLURM_PROCID", "3");
        env.put("SLURM_NTASKS", "4");
        env.put("SLURM_NPROCS", "4");
        env.put("SLURM_LOCALID", "1");
        env.put("SLURM_NODEID", "1");
        env.put("SLURM_STEP_NUM_TASKS", "4");
        if (mpiType != null) env.put("SLURM_MPI_TYPE", mpiType);
        return env;
    }

    @Test
    void srunPmixIsOpenMpiFamilyWithSlurmRanks() {
        Map<String, String> env = srunTask("pmix");
        env.put("PMIX_RANK", "3");
        env.put("PMIX_NAMESPACE", "slurm.pmix.6.0");
        env.put("PMIX_SERVER_URI4", "pmix-server.4980;tcp4://127.0.0.1:40883");
        Launch l = Launch.detect(env);
        assertEquals(Launch.Family.OPEN_MPI, l.family());
        assertEquals("srun", l.launcher());
        assertEquals(3, l.rank());
        assertEquals(4, l.size());
        assertEquals(1, l.localRank());
        assertTrue(l.servesAnyFamily());
        assertTrue(l.describe().contains("Slurm srun"), l.describe());
        assertTrue(l.describe().contains("SLURM_MPI_TYPE=pmix"), l.describe());
        assertTrue(l.describe().contains("node-local rank 1"), l.describe());
    }

    @Test
    void srunPmixV4TypeAndPmixVariablesOnly() {
        Map<String, String> env = srunTask("pmix_v4");
        assertEquals(Launch.Family.OPEN_MPI, Launch.detect(env).family());
        Map<String, String> noType = srunTask(null);
        noType.put("PMIX_NAMESPACE", "slurm.pmix.7.0");
        noType.put("PMIX_RANK", "3");
        assertEquals(Launch.Family.OPEN_MPI, Launch.detect(noType).family());
    }

    @Test
    void srunPmi2IsMpichFamilyWithSlurmLocalRank() {
        Map<String, String> env = srunTask("pmi2");
        env.put("PMI_FD", "11");
        env.put("PMI_RANK", "3");
        env.put("PMI_SIZE", "4");
        env.put("PMI_JOBID", "6.0");
        Launch l = Launch.detect(env);
        assertEquals(Launch.Family.MPICH, l.family());
        assertEquals("srun", l.launcher());
        assertEquals(3, l.rank());
        assertEquals(4, l.size());
        assertEquals(1, l.localRank(), "SLURM_LOCALID: PMI-2 gives no node-local rank");
        assertTrue(l.describe().contains("PMI-2"), l.describe());
    }

    @Test
    void srunWithoutPmiIsNoFamilyButKeepsRanksAndSaysWhy() {
        Launch l = Launch.detect(srunTask("none"));
        assertEquals(Launch.Family.NONE, l.family());
        assertEquals(3, l.rank());
        assertEquals(4, l.size());
        assertEquals(1, l.localRank());
        assertTrue(l.evidence().contains("--mpi=pmix"), l.evidence());
    }

    @Test
    void sizeFromNprocsWhenNtasksIsMissing() {
        Map<String, String> env = srunTask("pmi2");
        env.remove("SLURM_NTASKS");
        env.remove("SLURM_STEP_NUM_TASKS");
        env.put("SLURM_NPROCS", "8");
        assertEquals(8, Launch.detect(env).size());
    }

    @Test
    void launchersOfOneFamilyWinOverTheSlurmStepTheyRunIn() {
        // mpirun inside an srun step (or a batch step): Open MPI's variables decide
        Map<String, String> env = srunTask("pmix");
        env.put("OMPI_COMM_WORLD_SIZE", "2");
        env.put("OMPI_COMM_WORLD_RANK", "1");
        env.put("OMPI_COMM_WORLD_LOCAL_RANK", "0");
        Launch l = Launch.detect(env);
        assertEquals("mpirun", l.launcher());
        assertEquals(1, l.rank());
        assertEquals(0, l.localRank());
        assertFalse(l.servesAnyFamily());
        // Hydra inside a Slurm step: MPI_LOCALRANKID decides
        Map<String, String> hydra = srunTask(null);
        hydra.put("PMI_RANK", "0");
        hydra.put("PMI_SIZE", "2");
        hydra.put("PMI_FD", "6");
        hydra.put("MPI_LOCALRANKID", "0");
        Launch h = Launch.detect(hydra);
        assertEquals("mpiexec", h.launcher());
        assertEquals(Launch.Family.MPICH, h.family());
        assertEquals(0, h.localRank());
    }

    @Test
    void batchScriptWithoutStepIsASingletonWithSlurmLocalId() {
        Map<String, String> env = new HashMap<>();
        env.put("SLURM_JOB_ID", "6");
        env.put("SLURM_PROCID", "0");
        env.put("SLURM_LOCALID", "0");
        Launch l = Launch.detect(env);
        assertEquals(Launch.Family.NONE, l.family());
        assertEquals("none", l.launcher());
        assertEquals(0, l.localRank());
    }

    @Test
    void otherPmixLauncher() {
        Launch l = Launch.detect(Map.of("PMIX_RANK", "2", "PMIX_NAMESPACE", "prterun-x-1", "PMIX_LOCAL_RANK", "0"));
        assertEquals(Launch.Family.OPEN_MPI, l.family());
        assertEquals("pmix", l.launcher());
        assertEquals(2, l.rank());
        assertEquals(0, l.localRank());
    }

    @Test
    void existingLaunchersUnchanged() {
        Launch o = Launch.detect(Map.of("OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "0"));
        assertEquals(Launch.Family.OPEN_MPI, o.family());
        assertEquals(2, o.rank());
        Launch p = Launch.detect(Map.of("PMI_SIZE", "4", "PMI_RANK", "1"));
        assertEquals(Launch.Family.MPICH, p.family());
        assertEquals(1, p.rank());
        assertEquals(-1, p.localRank());
        Launch m = Launch.detect(Map.of("MV2_COMM_WORLD_SIZE", "2", "MV2_COMM_WORLD_RANK", "0", "MV2_COMM_WORLD_LOCAL_RANK", "0"));
        assertEquals("mpirun_rsh", m.launcher());
        Launch none = Launch.detect(Map.of());
        assertEquals(Launch.Family.NONE, none.family());
        assertEquals(-1, none.localRank());
    }

    @Test
    void familyChoiceUnderSrun() {
        Map<String, String> pmix = srunTask("pmix");
        pmix.put("PMIX_RANK", "3");
        Map<String, String> pmi2 = srunTask("pmi2");
        pmi2.put("PMI_FD", "11");
        // PMIx: Open MPI, with or without mpi.jar (backend ompi's FFM path needs none)
        MpiFamilyChoice c = MpiFamilyChoice.of(Launch.detect(pmix), NONE);
        assertEquals(Launch.Family.OPEN_MPI, c.family());
        assertTrue(c.reason().contains("PMIx: Open MPI"), c.reason());
        MpiFamilyChoice c2 = MpiFamilyChoice.of(Launch.detect(pmi2), NONE);
        assertEquals(Launch.Family.MPICH, c2.family());
        assertTrue(c2.reason().contains("PMI-2"), c2.reason());
        // ferry.mpi overrides under srun, not under mpirun
        Settings ompi = Settings.of(Map.of("ferry.mpi", "ompi"));
        assertEquals(Launch.Family.OPEN_MPI, MpiFamilyChoice.of(Launch.detect(pmi2), ompi).family());
        assertTrue(MpiFamilyChoice.of(Launch.detect(pmi2), ompi).reason().contains("-Dferry.mpi=ompi decides"));
        Settings mpich = Settings.of(Map.of("ferry.mpi", "mpich"));
        assertEquals(Launch.Family.OPEN_MPI, MpiFamilyChoice.of(Launch.detect(Map.of("OMPI_COMM_WORLD_SIZE", "2")), mpich).family());
    }

    @Test
    void nodeLocalRankFallsBackToTheSplit() {
        Launch none = Launch.detect(Map.of("PMIX_RANK", "1", "PMIX_NAMESPACE", "x"));
        assertEquals(-1, none.localRank());
        NodeLocal.record(1, 2, none);
        assertEquals(1, NodeLocal.rank(none));
        assertTrue(NodeLocal.describe().contains("the launcher gave none"), NodeLocal.describe());
        Launch given = Launch.detect(srunTask("pmi2"));
        assertEquals(1, NodeLocal.rank(given));
        NodeLocal.record(0, 2, given);
        assertEquals(1, NodeLocal.rank(given), "the launcher's node-local rank wins");
        assertTrue(NodeLocal.split().orElseThrow().disagrees());
    }
}
