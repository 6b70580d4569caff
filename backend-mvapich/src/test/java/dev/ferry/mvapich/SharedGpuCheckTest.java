package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.FerryException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SharedGpuCheckTest {
    private static final LibraryVersion MPICH_402 = LibraryVersion.parse("MPICH Version:      4.0.2\nMPICH Device:       ch4:ofi\nMPICH configure:    --with-cuda=/usr/local/cuda");
    private static final LibraryVersion MPICH_421 = LibraryVersion.parse("MPICH Version:      4.2.1\nMPICH Device:       ch4:ofi\nMPICH configure:    --with-cuda=/usr/local/cuda");

    @AfterEach
    void clear() {
        System.clearProperty("ferry.mvapich.sharedGpu");
    }

    @Test
    void appliesToCudaAwareMpichBefore41Only() {
        assertTrue(SharedGpuCheck.applies(MPICH_402, true));
        assertFalse(SharedGpuCheck.applies(MPICH_402, false), "not CUDA-aware: no device buffers anyway");
        assertFalse(SharedGpuCheck.applies(MPICH_421, true));
    }

    @Test
    void theSettingOverrides() {
        System.setProperty("ferry.mvapich.sharedGpu", "allow");
        assertFalse(SharedGpuCheck.applies(MPICH_402, true));
        System.setProperty("ferry.mvapich.sharedGpu", "refuse");
        assertTrue(SharedGpuCheck.applies(MPICH_421, true));
        System.setProperty("ferry.mvapich.sharedGpu", "sometimes");
        FerryException e = assertThrows(FerryException.class, () -> SharedGpuCheck.applies(MPICH_402, true));
        assertTrue(e.getMessage().contains("auto, refuse or allow"), e.getMessage());
    }

    @Test
    void mpich402IsParsedAsMpich() {
        assertEquals(LibraryVersion.Flavor.MPICH, MPICH_402.flavor());
        assertTrue(DeviceReductionStaging.isBefore41(MPICH_402.name()), MPICH_402.name());
    }
}
