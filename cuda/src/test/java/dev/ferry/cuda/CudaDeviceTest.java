// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Test;

/** How a GPU's PCI bus id becomes the one int that processes of a node compare ({@link CudaDevice#pciLocation()}). */
class CudaDeviceTest {
    @Test
    void pciLocationPacksDomainBusDeviceFunction() {
        assertEquals(0x0000_0630, CudaDevice.pciLocation("0000:06:06.0")); // bus 0x06, device 6 (<< 3), function 0
        assertEquals(0x0001_0000 | 0x07 << 3 | 1, CudaDevice.pciLocation("0001:00:07.1"));
        assertEquals(0xffff_0000 | 0xff << 8 | 0x1f << 3 | 7, CudaDevice.pciLocation("FFFF:FF:1F.7"));
    }

    @Test
    void theTwoGpusOfTheTwoGpuMachineDiffer() {
        assertNotEquals(CudaDevice.pciLocation("0000:00:06.0"), CudaDevice.pciLocation("0000:00:07.0"));
    }

    @Test
    void aBusIdThatIsNotOneGivesZero() {
        assertEquals(0, CudaDevice.pciLocation("?"));
        assertEquals(0, CudaDevice.pciLocation("0000:zz:06.0"));
    }
}
