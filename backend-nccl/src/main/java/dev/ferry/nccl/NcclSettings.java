// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;

/** The settings of backend nccl. */
public final class NcclSettings implements SettingsCatalog {
    private static final String MODULE = "backend-nccl";

    /** {@code ferry.nccl.inner}: the MPI backend under nccl; unset: chosen by the launch. */
    public static final Setting<String> INNER = Setting.of(MODULE, "ferry.nccl.inner", Setting.STRING, null,
            "the backend whose messages `nccl` uses (`ompi`, `mvapich` or `staged`); unset: chosen by the launch");
    /** {@code ferry.nccl.timeout}: seconds before a NCCL collective is aborted; unset: {@code ferry.timeout}. */
    public static final Setting<Double> TIMEOUT = Setting.derived(MODULE, "ferry.nccl.timeout", Setting.SECONDS, "`ferry.timeout`",
            "seconds a NCCL collective may take before ncclCommAbort and NcclException; 0: no limit");
    /** {@code ferry.nccl.lib}: NCCL's library (file or folder). */
    public static final Setting<String> LIB = Setting.of(MODULE, "ferry.nccl.lib", Setting.STRING, null,
            "NCCL's `libnccl.so.2` (file or folder); unset: searched");
    /** {@code ferry.nccl.wheels}: a folder of NCCL wheels to search. */
    public static final Setting<String> WHEELS = Setting.of(MODULE, "ferry.nccl.wheels", Setting.STRING, null,
            "a folder of unpacked NCCL Python wheels searched for the library");

    @Override
    public List<Setting<?>> settings() {
        return List.of(INNER, TIMEOUT, LIB, WHEELS);
    }
}
