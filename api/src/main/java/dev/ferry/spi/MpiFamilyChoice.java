package dev.ferry.spi;

import dev.ferry.Ferry;
import java.util.Locale;

/**
 * Which MPI family's library this process may load: the launcher's, or for a singleton (no
 * launcher variables) the one named by {@code -Dferry.mpi=ompi|mpich}, else the one the requested
 * backend needs, else Open MPI when its mpi.jar is on the class path, else the MPICH family.
 * Exactly one family is allowed, so that two MPI libraries never meet in one process.
 *
 * @param family the family allowed to load its library here
 * @param reason why, for the report
 */
public record MpiFamilyChoice(Launch.Family family, String reason) {

    /** The choice for this process. */
    public static MpiFamilyChoice of(Launch launch) {
        if (launch.family() != Launch.Family.NONE) {
            return new MpiFamilyChoice(launch.family(), "launched by " + launch.describe());
        }
        String forced = Ferry.setting("ferry.mpi", null);
        if (forced != null) {
            return switch (forced.toLowerCase(Locale.ROOT)) {
                case "ompi", "openmpi", "open-mpi" -> new MpiFamilyChoice(Launch.Family.OPEN_MPI, "singleton; -Dferry.mpi=" + forced);
                case "mpich", "mvapich" -> new MpiFamilyChoice(Launch.Family.MPICH, "singleton; -Dferry.mpi=" + forced);
                default -> throw new IllegalArgumentException("ferry.mpi='" + forced + "': expected ompi or mpich");
            };
        }
        String backend = Ferry.setting("ferry.backend", "auto").toLowerCase(Locale.ROOT);
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
}
