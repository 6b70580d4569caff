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
 * {@code ferry.backend=auto}: the world communicator is nccl with NCCL off and the reason,
 * identical on every rank; device collectives still work through the inner backend; naming nccl
 * with -Dferry.backend=nccl fails with the reason; one-rank communicators split from it do use NCCL.
 * GPU machines only; see backend-nccl/README.md, "GPU test plan".
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class NcclSharedGpuCheck {

    @Test
    void a_theWorldRefusesNcclNamingTheSharedGpu() {
        Communicator w = TestWorld.world();
        assertEquals("nccl", w.backend(), "auto picks nccl where it is available");
        NcclTransport n = NcclTransport.of(w);
        assertFalse(n.ncclActive());
        assertTrue(n.ncclInactiveReason().contains("share the GPU"), n.ncclInactiveReason());
        assertTrue(NcclProvider.runtimeDetails().get("gpu placement").startsWith("refused"), NcclProvider.runtimeDetails().toString());
    }

    @Test
    void b_deviceCollectivesStillWorkThroughTheInnerBackend() {
        Communicator w = TestWorld.world();
        if (!NcclTransport.of(w).inner().supportsDeviceBuffers()) return; // host-only inner: nothing to check
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
            assertTrue(e.getMessage().contains("share the GPU"), e.getMessage());
            return;
        }
        try (Communicator again = Ferry.open("nccl")) {
            NcclTransport n = NcclTransport.of(again);
            assertFalse(n.ncclActive());
            assertTrue(n.ncclInactiveReason().contains("share the GPU"), n.ncclInactiveReason());
        }
    }

    @Test
    void d_oneRankCommunicatorsUseNccl() {
        Communicator w = TestWorld.world();
        try (Communicator one = w.split(w.rank(), 0)) {
            NcclTransport n = NcclTransport.of(one);
            assertNotNull(n);
            assertTrue(n.ncclActive(), () -> "one rank, one GPU: " + n.ncclInactiveReason());
            try (var s = Cuda.allocate(4); var r = Cuda.allocate(4)) {
                Mem.write(s, new byte[] {7, 0, 0, 0});
                one.allReduce(s, r, 1, DataType.INT, ReduceOp.SUM);
                assertEquals(7, Mem.read(r)[0]);
            }
        }
    }
}
