// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;

/** The settings of backend mvapich (its library and symbol scope are in mpi-ffm's {@code MpiFfmSettings}). */
public final class MvapichSettings implements SettingsCatalog {
    private static final String MODULE = "backend-mvapich";

    /** {@code ferry.mvapich.stageDeviceReductions}: reduce device buffers on host copies. */
    public static final Setting<String> STAGE_DEVICE_REDUCTIONS = Setting.of(MODULE, "ferry.mvapich.stageDeviceReductions",
            Setting.choice("auto", "true", "false"), "auto",
            "reduce device buffers on host copies: `auto` where the MPI's GPU reductions are known to fail (MPICH before 4.1)");
    /** {@code ferry.mvapich.splitSendRecv}: sendRecv as MPI_Irecv + MPI_Isend. */
    public static final Setting<String> SPLIT_SEND_RECV = Setting.of(MODULE, "ferry.mvapich.splitSendRecv",
            Setting.choice("auto", "true", "false"), "auto",
            "`sendRecv` as `MPI_Irecv` + `MPI_Isend`: `auto` on the ch3 device (MVAPICH2), whose `MPI_Sendrecv` can hang the peer");
    /** {@code ferry.mvapich.sharedGpu}: refuse device buffers when ranks of a node share a GPU. */
    public static final Setting<String> SHARED_GPU = Setting.of(MODULE, "ferry.mvapich.sharedGpu",
            Setting.choice("auto", "refuse", "allow"), "auto",
            "device buffers when two ranks of a node share a GPU: `auto` refuses them on CUDA-aware MPICH before 4.1, `refuse`, `allow`");

    @Override
    public List<Setting<?>> settings() {
        return List.of(STAGE_DEVICE_REDUCTIONS, SPLIT_SEND_RECV, SHARED_GPU);
    }
}
