// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;

/** The settings of CUDA IPC between the ranks of one node (collectives, and staged's messages). */
public final class IpcSettings implements SettingsCatalog {
    private static final String MODULE = "collectives";

    /** {@code ferry.ipc}: CUDA IPC between device buffers of one node's ranks. */
    public static final Setting<Boolean> IPC = Setting.of(MODULE, "ferry.ipc", Setting.BOOLEAN, true,
            "CUDA IPC between device buffers of one node's ranks: collectives over it, and staged's messages; false: none");
    /** {@code ferry.ipc.cacheSize}: peer mappings kept open. */
    public static final Setting<Integer> CACHE_SIZE = Setting.of(MODULE, "ferry.ipc.cacheSize",
            new Setting.Parser<>("a whole number, at least 1", s -> {
                int v = Integer.parseInt(s);
                if (v < 1) throw new IllegalArgumentException();
                return v;
            }), 64, "peer allocations kept mapped by CUDA IPC, the least recently used unmapped beyond");

    @Override
    public List<Setting<?>> settings() {
        return List.of(IPC, CACHE_SIZE);
    }
}
