// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.FerryException;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.testing.Mem;
import dev.ferry.testing.TestWorld;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Two (or more) ranks on one GPU ({@code -Dferry.device=0}, e.g. under MPS), opened with
 * {@code ferry.backend=auto}: NCCL does not serve the world communicator and says why, identically
 * on every rank; device collectives still work on the planner's other algorithms; naming nccl with
 * -Dferry.backend=nccl fails with the reason; one-rank communicators split from it can use NCCL.
 * GPU machines only; see backend-nccl/README.md, "GPU test plan".
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class NcclSharedGpuCheck {

    @Test
    void a_theWorldRefusesNcclNamingTheSharedGpu() {
        Communicator w = TestWorld.world();
        NcclCollectives n = Nccl.of(w);
        assertFalse(n.active());
        assertTrue(n.inactiveReason().contains("share a GPU"), n.inactiveReason());
    }

    @Test
    void b_deviceCollectivesStillWorkThroughTheInnerBackend() {
        Communicator w = TestWorld.world();
        if (!w.supportsDeviceBuffers()) return; // host-only backend: nothing to check
        try (var s = Cuda.allocate(8); var r = Cuda.allocate(8)) {
            Mem.write(s, new byte[] {1, 0, 0, 0});
            w.allReduce(s, r, 1, DataType.INT, ReduceOp.SUM);
            assertEquals(w.size(), Mem.read(r)[0]);
        }
    }

    @Test
    void c_openingNcclAgainGivesTheSameAnswer() {
        // (-Dferry.backend=nccl, the setting, would make this an error at Ferry.open; here the setting is auto)
        if ("nccl".equals(dev.ferry.Settings.process().get(dev.ferry.FerrySettings.BACKEND))) {
            FerryException e = assertThrows(FerryException.class, () -> Ferry.open("nccl"));
            assertTrue(e.getMessage().contains("share"), e.getMessage());
            return;
        }
        FerryException e = assertThrows(FerryException.class, () -> Ferry.open("nccl"), "nccl named: opening fails with the reason");
        assertTrue(e.getMessage().contains("share"), e.getMessage());
    }

    @Test
    void d_oneRankCommunicatorsUseNccl() {
        Communicator w = TestWorld.world();
        try (Communicator one = w.split(w.rank(), 0)) {
            NcclCollectives n = Nccl.of(one);
            assertNotNull(n);
            assertEquals(null, n.inactiveReason(), "one rank, one GPU");
            dev.ferry.collectives.CollectivesDiagnostics.force(one, "allReduce:nccl");
            try (var s = Cuda.allocate(4); var r = Cuda.allocate(4)) {
                Mem.write(s, new byte[] {7, 0, 0, 0});
                one.allReduce(s, r, 1, DataType.INT, ReduceOp.SUM);
                assertEquals(7, Mem.read(r)[0]);
                assertEquals("nccl", dev.ferry.collectives.CollectivesDiagnostics.lastAlgorithm());
                assertTrue(n.active());
            }
        }
    }
}
