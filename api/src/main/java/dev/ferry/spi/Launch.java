// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.util.Locale;
import java.util.Map;

/**
 * How this process was started, read from the launcher's environment variables: which MPI
 * family's launcher, world size, rank and node-local rank. Probes use it to decide which MPI
 * library may be loaded: never two in one process.
 *
 * <p>Launchers of one family fix the family: Open MPI's mpirun ({@code OMPI_COMM_WORLD_*}),
 * MPICH's Hydra and Intel MPI ({@code PMI_*} with {@code MPI_LOCALRANKID}), MVAPICH2's mpirun_rsh
 * ({@code MV2_COMM_WORLD_*}). Slurm's {@code srun} starts either family; its PMI flavour suggests
 * one: {@code --mpi=pmix} ({@code PMIX_RANK}, {@code PMIX_NAMESPACE}, {@code SLURM_MPI_TYPE=pmix*})
 * the Open MPI family, {@code --mpi=pmi2} ({@code PMI_FD}, {@code PMI_RANK}, {@code PMI_SIZE},
 * {@code SLURM_MPI_TYPE=pmi2}) the MPICH family; rank, size and node-local rank come from
 * {@code SLURM_PROCID}, {@code SLURM_NTASKS}/{@code SLURM_NPROCS} and {@code SLURM_LOCALID}. Such a
 * launch {@linkplain #servesAnyFamily() serves any family}: {@code -Dferry.mpi} overrides the
 * suggestion ({@link MpiFamilyChoice}). {@code srun --mpi=none} gives no PMI: every task would
 * be an MPI singleton, so the family is {@link Family#NONE} (with the ranks Slurm gave, and why).
 *
 * @param family    the launcher's MPI family (for srun: the one its PMI flavour suggests)
 * @param evidence  the variables that decided it, for the report
 * @param rank      world rank, or -1 when unknown
 * @param size      world size, or -1 when unknown
 * @param localRank rank among the processes of this node, or -1 when unknown
 * @param launcher  which launcher: {@code mpirun} (Open MPI), {@code mpiexec} (Hydra, Intel MPI, other
 *                  PMI-1/2 launchers), {@code mpirun_rsh} (MVAPICH2), {@code srun} (Slurm), {@code pmix}
 *                  (another PMIx launcher), {@code none}
 */
public record Launch(Family family, String evidence, int rank, int size, int localRank, String launcher) {

    /** MPI families, by launcher. */
    public enum Family {
        /** Open MPI's mpirun/mpiexec/prterun (OMPI_COMM_WORLD_* variables); srun --mpi=pmix. */
        OPEN_MPI,
        /** MPICH's Hydra, MVAPICH2's mpirun_rsh, Intel MPI (PMI_* / MPI_LOCALRANKID / MV2_* variables); srun --mpi=pmi2. */
        MPICH,
        /** No launcher variables: a singleton, or a launcher Ferry does not recognise. */
        NONE
    }

    /** A launch of a family's own launcher (mpirun for Open MPI, mpiexec for MPICH, none for NONE). */
    public Launch(Family family, String evidence, int rank, int size, int localRank) {
        this(family, evidence, rank, size, localRank, switch (family) {
            case OPEN_MPI -> "mpirun";
            case MPICH -> "mpiexec";
            case NONE -> "none";
        });
    }

    /** Reads the current process environment. */
    public static Launch detect() {
        return detect(System.getenv());
    }

    /** Reads the given environment (for tests). */
    public static Launch detect(Map<String, String> env) {
        if (env.containsKey("OMPI_COMM_WORLD_SIZE")) {
            return new Launch(Family.OPEN_MPI, "OMPI_COMM_WORLD_SIZE=" + env.get("OMPI_COMM_WORLD_SIZE"),
                    num(env, "OMPI_COMM_WORLD_RANK"), num(env, "OMPI_COMM_WORLD_SIZE"), num(env, "OMPI_COMM_WORLD_LOCAL_RANK"), "mpirun");
        }
        if (env.containsKey("MV2_COMM_WORLD_SIZE")) {
            return new Launch(Family.MPICH, "MV2_COMM_WORLD_SIZE=" + env.get("MV2_COMM_WORLD_SIZE"),
                    num(env, "MV2_COMM_WORLD_RANK"), num(env, "MV2_COMM_WORLD_SIZE"), num(env, "MV2_COMM_WORLD_LOCAL_RANK"), "mpirun_rsh");
        }
        // Hydra (MPICH, Intel MPI) sets MPI_LOCALRANKID; a Hydra job inside a Slurm step still is Hydra's
        if (env.containsKey("MPI_LOCALRANKID")) {
            String ev = env.containsKey("PMI_SIZE") ? "PMI_SIZE=" + env.get("PMI_SIZE") + ", " : "";
            return new Launch(Family.MPICH, ev + "MPI_LOCALRANKID=" + env.get("MPI_LOCALRANKID"),
                    num(env, "PMI_RANK"), num(env, "PMI_SIZE"), num(env, "MPI_LOCALRANKID"), "mpiexec");
        }
        if (env.containsKey("SLURM_PROCID") && (env.containsKey("SLURM_STEP_ID") || env.containsKey("SLURM_STEPID"))) {
            return slurm(env);
        }
        if (env.containsKey("PMI_SIZE")) {
            return new Launch(Family.MPICH, "PMI_SIZE=" + env.get("PMI_SIZE"), num(env, "PMI_RANK"), num(env, "PMI_SIZE"), -1, "mpiexec");
        }
        if (env.containsKey("PMIX_RANK") || env.containsKey("PMIX_NAMESPACE")) {
            String ev = "PMIX_NAMESPACE=" + env.getOrDefault("PMIX_NAMESPACE", "?") + ", PMIX_RANK=" + env.getOrDefault("PMIX_RANK", "?")
                    + ": a PMIx launcher, which suggests the Open MPI family";
            return new Launch(Family.OPEN_MPI, ev, num(env, "PMIX_RANK"), num(env, "PMIX_SIZE"), num(env, "PMIX_LOCAL_RANK"), "pmix");
        }
        return new Launch(Family.NONE, "no launcher variables", -1, -1, num(env, "SLURM_LOCALID"), "none");
    }

    /** A task of a Slurm job step ({@code SLURM_PROCID} and {@code SLURM_STEP_ID} set): srun. */
    private static Launch slurm(Map<String, String> env) {
        int rank = num(env, "SLURM_PROCID");
        int size = num(env, "SLURM_NTASKS");
        if (size < 0) size = num(env, "SLURM_NPROCS");
        if (size < 0) size = num(env, "SLURM_STEP_NUM_TASKS");
        int local = num(env, "SLURM_LOCALID");
        if (local < 0) local = num(env, "PMIX_LOCAL_RANK");
        String type = env.getOrDefault("SLURM_MPI_TYPE", "").trim().toLowerCase(Locale.ROOT);
        boolean pmix = type.startsWith("pmix") || env.containsKey("PMIX_RANK") || env.containsKey("PMIX_NAMESPACE");
        boolean pmi = type.startsWith("pmi2") || type.equals("pmi") || env.containsKey("PMI_FD") || env.containsKey("PMI_SIZE");
        String mpiType = type.isEmpty() ? "SLURM_MPI_TYPE unset" : "SLURM_MPI_TYPE=" + type;
        if (pmix) {
            if (rank < 0) rank = num(env, "PMIX_RANK");
            return new Launch(Family.OPEN_MPI, "srun --mpi=pmix: " + mpiType
                    + (env.containsKey("PMIX_NAMESPACE") ? ", PMIX_NAMESPACE=" + env.get("PMIX_NAMESPACE") : "")
                    + "; PMIx suggests the Open MPI family", rank, size, local, "srun");
        }
        if (pmi) {
            if (rank < 0) rank = num(env, "PMI_RANK");
            if (size < 0) size = num(env, "PMI_SIZE");
            return new Launch(Family.MPICH, "srun --mpi=" + (type.isEmpty() ? "pmi2" : type) + ": " + mpiType
                    + (env.containsKey("PMI_FD") ? ", PMI_FD" : "") + (env.containsKey("PMI_SIZE") ? ", PMI_SIZE=" + env.get("PMI_SIZE") : "")
                    + "; PMI-2 suggests the MPICH family", rank, size, local, "srun");
        }
        return new Launch(Family.NONE, "srun without a PMI (" + mpiType + "): each task would be an MPI singleton; "
                + "launch with srun --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH family)", rank, size, local, "srun");
    }

    private static int num(Map<String, String> env, String key) {
        String v = env.get(key);
        if (v == null) return -1;
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Whether the launcher starts any MPI family (Slurm's srun, a PMIx launcher): the family is then
     * only what its PMI flavour suggests, and {@code -Dferry.mpi} may override it.
     */
    public boolean servesAnyFamily() {
        return launcher.equals("srun") || launcher.equals("pmix");
    }

    /** One line for reports: "Open MPI launcher (OMPI_COMM_WORLD_SIZE=2), rank 0 of 2". */
    public String describe() {
        String who = switch (launcher) {
            case "srun" -> "Slurm srun";
            case "pmix" -> "PMIx launcher";
            default -> switch (family) {
                case OPEN_MPI -> "Open MPI launcher";
                case MPICH -> "MPICH-family launcher";
                case NONE -> "no MPI launcher (singleton)";
            };
        };
        return who + " (" + evidence + ")" + (rank >= 0 ? ", rank " + rank + " of " + size : "")
                + (servesAnyFamily() ? (localRank >= 0 ? ", node-local rank " + localRank : ", node-local rank unknown") : "");
    }
}
