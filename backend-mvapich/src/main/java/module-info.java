// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Backend {@code mvapich}: MPICH-ABI libraries (MVAPICH2, MPICH, Intel MPI) through
 * {@code java.lang.foreign}, and {@link dev.ferry.mvapich.Mvapich}, interop through
 * {@code MPI_Comm} handles.
 */
module dev.ferry.mvapich {
    requires transitive dev.ferry.api;
    requires dev.ferry.cuda;
    requires dev.ferry.mpi;

    exports dev.ferry.mvapich;

    provides dev.ferry.spi.TransportProvider with dev.ferry.mvapich.MvapichProvider;
    provides dev.ferry.spi.SettingsCatalog with dev.ferry.mvapich.MvapichSettings;
}
