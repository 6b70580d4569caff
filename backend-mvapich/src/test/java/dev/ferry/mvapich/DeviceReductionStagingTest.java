// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DeviceReductionStagingTest {
    @Test
    void mpichBefore41StagesDeviceReductions() {
        assertTrue(DeviceReductionStaging.isBefore41("MPICH 4.0.2"));
        assertTrue(DeviceReductionStaging.isBefore41("3.4.3"));
        assertFalse(DeviceReductionStaging.isBefore41("MPICH 4.1"));
        assertFalse(DeviceReductionStaging.isBefore41("MPICH 4.2.1"));
        assertFalse(DeviceReductionStaging.isBefore41("MPICH"));
    }

    @Test
    void cudaAwareMpichBefore41StagesDeviceGathersAndScatters() {
        LibraryVersion mpich402 = LibraryVersion.parse("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\n");
        assertNotNull(DeviceReductionStaging.decideTrees(mpich402, true));
        assertNull(DeviceReductionStaging.decideTrees(mpich402, false), "a library that is not CUDA-aware never sees device memory");
        assertNull(DeviceReductionStaging.decideTrees(LibraryVersion.parse("MPICH Version:\t4.2.1\nMPICH Device:\tch4:ucx\n"), true));
        assertNull(DeviceReductionStaging.decideTrees(LibraryVersion.parse("MVAPICH2 Version       :\t2.3.7\nMVAPICH2 Device       :\tch3:mrail\n"), true));
    }
}
