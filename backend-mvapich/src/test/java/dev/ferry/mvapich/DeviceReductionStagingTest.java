// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertFalse;
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
}
