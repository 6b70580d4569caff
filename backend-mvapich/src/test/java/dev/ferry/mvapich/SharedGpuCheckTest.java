// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.InvalidSettingException;
import dev.ferry.Settings;
import java.util.Map;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SharedGpuCheckTest {
    private static final LibraryVersion MPICH_402 = LibraryVersion.parse("MPICH Version:      4.0.2\nMPICH Device:       ch4:ofi\nMPICH configure:    --with-cuda=/usr/local/cuda");
    private static final LibraryVersion MPICH_421 = LibraryVersion.parse("MPICH Version:      4.2.1\nMPICH Device:       ch4:ofi\nMPICH configure:    --with-cuda=/usr/local/cuda");

    private static final Settings DEFAULTS = Settings.of(Map.of());

    private static Settings sharedGpu(String value) {
        return Settings.of(Map.of("ferry.mvapich.sharedGpu", value));
    }

    @Test
    void appliesToCudaAwareMpichBefore41Only() {
        assertTrue(SharedGpuCheck.applies(DEFAULTS, MPICH_402, true));
        assertFalse(SharedGpuCheck.applies(DEFAULTS, MPICH_402, false), "not CUDA-aware: no device buffers anyway");
        assertFalse(SharedGpuCheck.applies(DEFAULTS, MPICH_421, true));
    }

    @Test
    void theSettingOverrides() {
        assertFalse(SharedGpuCheck.applies(sharedGpu("allow"), MPICH_402, true));
        assertTrue(SharedGpuCheck.applies(sharedGpu("Refuse"), MPICH_421, true));
        InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> SharedGpuCheck.applies(sharedGpu("sometimes"), MPICH_402, true));
        assertEquals("ferry.mvapich.sharedGpu", e.key());
        assertTrue(e.getMessage().contains("auto, refuse, allow"), e.getMessage());
    }

    @Test
    void mpich402IsParsedAsMpich() {
        assertEquals(LibraryVersion.Flavor.MPICH, MPICH_402.flavor());
        assertTrue(DeviceReductionStaging.isBefore41(MPICH_402.name()), MPICH_402.name());
    }
}
