package dev.ferry.spi;

import java.util.Map;

/**
 * How this process was started, read from the launcher's environment variables: which MPI
 * family's launcher, world size, rank and node-local rank. Probes use it to decide which MPI
 * library may be loaded: never two in one process.
 *
 * @param family    the launcher's MPI family
 * @param evidence  the variable that decided it, for the report
 * @param rank      world rank, or -1 when unknown
 * @param size      world size, or -1 when unknown
 * @param localRank rank among the processes of this node, or -1 when unknown
 */
public record Launch(Family family, String evidence, int rank, int size, int localRank) {

    /** MPI families, by launcher. */
    public enum Family {
        /** Open MPI's mpirun/mpiexec/prterun (OMPI_COMM_WORLD_* variables). */
        OPEN_MPI,
        /** MPICH's Hydra, MVAPICH2's mpirun_rsh, Intel MPI (PMI_* / MPI_LOCALRANKID / MV2_* variables). */
        MPICH,
        /** No launcher variables: a singleton, or a launcher Ferry does not recognise. */
        NONE
    }

    /** Reads the current process environment. */
    public static Launch detect() {
        return detect(System.getenv());
    }

    /** Reads the given environment (for tests). */
    public static Launch detect(Map<String, String> env) {
        if (env.containsKey("OMPI_COMM_WORLD_SIZE")) {
            return new Launch(Family.OPEN_MPI, "OMPI_COMM_WORLD_SIZE=" + env.get("OMPI_COMM_WORLD_SIZE"),
                    num(env, "OMPI_COMM_WORLD_RANK"), num(env, "OMPI_COMM_WORLD_SIZE"), num(env, "OMPI_COMM_WORLD_LOCAL_RANK"));
        }
        if (env.containsKey("MV2_COMM_WORLD_SIZE")) {
            return new Launch(Family.MPICH, "MV2_COMM_WORLD_SIZE=" + env.get("MV2_COMM_WORLD_SIZE"),
                    num(env, "MV2_COMM_WORLD_RANK"), num(env, "MV2_COMM_WORLD_SIZE"), num(env, "MV2_COMM_WORLD_LOCAL_RANK"));
        }
        if (env.containsKey("PMI_SIZE") || env.containsKey("MPI_LOCALRANKID")) {
            String ev = env.containsKey("PMI_SIZE") ? "PMI_SIZE=" + env.get("PMI_SIZE") : "MPI_LOCALRANKID=" + env.get("MPI_LOCALRANKID");
            return new Launch(Family.MPICH, ev, num(env, "PMI_RANK"), num(env, "PMI_SIZE"), num(env, "MPI_LOCALRANKID"));
        }
        return new Launch(Family.NONE, "no launcher variables", -1, -1, num(env, "SLURM_LOCALID"));
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

    /** One line for reports: "Open MPI launcher (OMPI_COMM_WORLD_SIZE=2), rank 0 of 2". */
    public String describe() {
        String who = switch (family) {
            case OPEN_MPI -> "Open MPI launcher";
            case MPICH -> "MPICH-family launcher";
            case NONE -> "no MPI launcher (singleton)";
        };
        return who + " (" + evidence + ")" + (rank >= 0 ? ", rank " + rank + " of " + size : "");
    }
}
