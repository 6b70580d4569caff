// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.Ferry;

/**
 * Which MPI family's library this process may load: the launcher's, or for a singleton (no
 * launcher variables) the one named by {@code -Dferry.mpi=ompi|mpich}, else the one the requested
 * backend needs, else Open MPI when its mpi.jar is on the class path, else the MPICH family.
 * Under a launcher that starts any family (Slurm's srun) {@code -Dferry.mpi} decides when given,
 * else its PMI flavour: PMI-2 the MPICH family, PMIx Open MPI (when mpi.jar is on the class path).
 * Exactly one family is allowed, so that two MPI libraries never meet in one process.
 *
 * @param family the family allowed to load its library here
 * @param reason why, for the report
 */
public record MpiFamilyChoice(Launch.Family family, String reason) {

    /** The choice for this process. */
    public static MpiFamilyChoice of(Launch launch, Settings settings) {
        if (launch.family() != Launch.Family.NONE && launch.servesAnyFamily()) {
            return anyFamilyLauncher(launch, settings);
        }
        if (launch.family() != Launch.Family.NONE) {
            return new MpiFamilyChoice(launch.family(), "launched by " + launch.describe());
        }
        String forced = settings.get(FerrySettings.MPI);
        if (forced != null) {
            return switch (forced) {
                case "ompi", "openmpi", "open-mpi" -> new MpiFamilyChoice(Launch.Family.OPEN_MPI, "singleton; -Dferry.mpi=" + forced);
                case "mpich", "mvapich" -> new MpiFamilyChoice(Launch.Family.MPICH, "singleton; -Dferry.mpi=" + forced);
                default -> throw new IllegalStateException(forced);
            };
        }
        String backend = settings.get(FerrySettings.BACKEND);
        if (backend.equals("mvapich")) {
            return new MpiFamilyChoice(Launch.Family.MPICH, "singleton; the requested backend mvapich needs the MPICH family");
        }
        if (backend.equals("ompi")) {
            return new MpiFamilyChoice(Launch.Family.OPEN_MPI, "singleton; the requested backend ompi needs Open MPI");
        }
        try {
            Class.forName("mpi.MPI", false, MpiFamilyChoice.class.getClassLoader());
            return new MpiFamilyChoice(Launch.Family.OPEN_MPI, "singleton; Open MPI's mpi.jar is on the class path (-Dferry.mpi=mpich to use MPICH)");
        } catch (ClassNotFoundException e) {
            return new MpiFamilyChoice(Launch.Family.MPICH, "singleton; no Open MPI mpi.jar on the class path");
        }
    }

    /**
     * srun (or another PMIx launcher) starts either family: {@code -Dferry.mpi} decides when given;
     * else PMI-2 means the MPICH family, and PMIx means Open MPI (whose own launcher speaks PMIx; an
     * MPICH-family library built for PMIx needs {@code -Dferry.mpi=mpich}).
     */
    private static MpiFamilyChoice anyFamilyLauncher(Launch launch, Settings settings) {
        String forced = settings.get(FerrySettings.MPI);
        String by = "launched by " + launch.describe();
        if (forced != null) {
            return switch (forced) {
                case "ompi", "openmpi", "open-mpi" -> new MpiFamilyChoice(Launch.Family.OPEN_MPI, by + "; -Dferry.mpi=" + forced + " decides");
                case "mpich", "mvapich" -> new MpiFamilyChoice(Launch.Family.MPICH, by + "; -Dferry.mpi=" + forced + " decides");
                default -> throw new IllegalStateException(forced);
            };
        }
        if (launch.family() == Launch.Family.MPICH) {
            return new MpiFamilyChoice(Launch.Family.MPICH, by + "; PMI-2: the MPICH family (-Dferry.mpi=ompi overrides)");
        }
        // Open MPI is PMIx's own MPI, and Ferry reaches it without mpi.jar (backend ompi's FFM path)
        return new MpiFamilyChoice(Launch.Family.OPEN_MPI, by + "; PMIx: Open MPI (-Dferry.mpi=mpich overrides)");
    }
}
