// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * The binding of the MPI C API through {@code java.lang.foreign} that the Open MPI and MPICH-family
 * backends share (both ABIs). Not an API of its own: exported to those backends only.
 */
@SuppressWarnings("module") // the qualified export names modules built after this one
module dev.ferry.mpi {
    requires dev.ferry.api;

    exports dev.ferry.mpi to dev.ferry.ompi, dev.ferry.mvapich;

    provides dev.ferry.spi.SettingsCatalog with dev.ferry.mpi.MpiFfmSettings;
}
