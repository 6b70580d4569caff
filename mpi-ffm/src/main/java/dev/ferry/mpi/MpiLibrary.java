// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.Settings;

/**
 * Which MPI family this process binds, chosen once by the backend that touches {@link Mpi} first
 * (before loading it), since a process can hold only one MPI library. A backend of the other
 * family then finds {@link #requested()} differs from its own and reports itself unavailable.
 */
public final class MpiLibrary {
    private static MpiFamily requested;

    private MpiLibrary() {
    }

    /**
     * Asks for {@code family}; returns the family this process binds (the first one asked for).
     * Must be called before anything touches {@link Mpi}.
     */
    public static synchronized MpiFamily request(MpiFamily family) {
        if (requested == null) {
            requested = family;
        }
        return requested;
    }

    /** The family asked for, MPICH ABI when nobody asked (the binding's historical default). */
    static synchronized MpiFamily requested() {
        return requested == null ? MpiFamily.MPICH_ABI : requested;
    }

    /**
     * Whether the library is loaded {@code RTLD_GLOBAL} (symbols visible to the plugins it opens
     * and to libraries loaded later). MPICH ABI: {@code ferry.mvapich.rtldGlobal} = {@code auto}
     * (default: load RTLD_LOCAL, promote after MPI_Init when needed, see the mvapich backend),
     * {@code true} or {@code false}. Open MPI: {@code ferry.ompi.rtldGlobal} = {@code true}
     * (default: Open MPI's dlopened components resolve {@code libmpi}/{@code libopen-pal} symbols
     * from the global scope, as mpi.jar's libmpi_java arranges with dlopen(RTLD_GLOBAL)) or
     * {@code false}.
     */
    public static String rtldMode(MpiFamily family) {
        if (family == MpiFamily.OPEN_MPI) {
            return Settings.process().get(MpiFfmSettings.OMPI_RTLD_GLOBAL);
        }
        return Settings.process().get(MpiFfmSettings.MVAPICH_RTLD_GLOBAL);
    }
}
