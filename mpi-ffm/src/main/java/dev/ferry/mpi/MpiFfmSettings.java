// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;

/** The settings of the FFM MPI binding (mpi-ffm), shared by backends ompi and mvapich. */
public final class MpiFfmSettings implements SettingsCatalog {
    private static final String MODULE = "mpi-ffm";

    /** {@code ferry.ompi.lib}: Open MPI's {@code libmpi.so.40} (file or folder) for backend ompi's ffm path. */
    public static final Setting<String> OMPI_LIB = Setting.of(MODULE, "ferry.ompi.lib", Setting.STRING, null,
            "Open MPI's `libmpi.so.40` (file or folder) for backend ompi's `ffm` path; unset: searched");
    /** {@code ferry.ompi.rtldGlobal}: load Open MPI's library with RTLD_GLOBAL. */
    public static final Setting<String> OMPI_RTLD_GLOBAL = Setting.of(MODULE, "ferry.ompi.rtldGlobal", Setting.choice("true", "false"), "true",
            "load Open MPI's library RTLD_GLOBAL, so that its plugins resolve its symbols");
    /** {@code ferry.mvapich.lib}: the MPICH-ABI library (file or folder) for backend mvapich. */
    public static final Setting<String> MVAPICH_LIB = Setting.of(MODULE, "ferry.mvapich.lib", Setting.STRING, null,
            "the MPICH-ABI `libmpi.so.12` (file or folder) for backend mvapich; unset: searched");
    /** {@code ferry.mvapich.rtldGlobal}: load the MPICH-ABI library RTLD_GLOBAL ({@code auto}: promote after MPI_Init when needed). */
    public static final Setting<String> MVAPICH_RTLD_GLOBAL = Setting.of(MODULE, "ferry.mvapich.rtldGlobal", Setting.choice("auto", "true", "false"), "auto",
            "load the MPICH-ABI library RTLD_GLOBAL: `auto` loads it RTLD_LOCAL and promotes it after `MPI_Init` when needed");

    @Override
    public List<Setting<?>> settings() {
        return List.of(OMPI_LIB, OMPI_RTLD_GLOBAL, MVAPICH_LIB, MVAPICH_RTLD_GLOBAL);
    }
}
