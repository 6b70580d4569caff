package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.ReduceOp;
import dev.ferry.UnsupportedBufferException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The decorator without a GPU (this machine, CI): the start-up placement allGather refuses NCCL
 * (no GPU on the rank), and every operation then goes to the inner communicator, which a fake of
 * one rank records. What runs on NCCL is for the GPU plan (NcclContract and friends).
 */
class NcclTransportTest {

    @Test
    void withoutAGpuTheWorldDelegatesEverythingAndSaysWhy() {
        List<String> calls = new ArrayList<>();
        try (Communicator c = new CheckedCommunicator(NcclTransport.world(new OneRankHostTransport(calls)));
             HostBuffer a = HostBuffer.allocate(64); HostBuffer b = HostBuffer.allocate(64)) {
            assertEquals(List.of("allGather"), calls, "one allGather of host name and GPU at start-up");
            assertEquals("nccl", c.backend());
            assertFalse(NcclTransport.of(c).ncclActive());
            assertTrue(Nccl.inactiveReason(c).orElseThrow().contains("no usable GPU"), Nccl.inactiveReason(c).toString());
            assertTrue(NcclProvider.runtimeDetails().get("gpu placement").startsWith("refused: rank 0"), NcclProvider.runtimeDetails().toString());
            calls.clear();
            c.allReduce(a, b, 4, DataType.INT, ReduceOp.SUM);
            c.broadcast(a, 4, DataType.INT, 0);
            c.reduce(a, b, 4, DataType.SHORT, ReduceOp.BXOR, 0);
            c.allGather(a, b, 4, DataType.INT);
            c.gather(a, b, 4, DataType.INT, 0);
            c.scatter(a, b, 4, DataType.INT, 0);
            c.allToAll(a, b, 4, DataType.INT);
            c.barrier();
            c.send(a, 1, DataType.BYTE, 0, 3);
            c.recv(b, 1, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
            c.isend(a, 1, DataType.BYTE, 0, 3).waitFor();
            c.irecv(b, 1, DataType.BYTE, 0, 3).waitFor();
            assertEquals(List.of("allReduce", "broadcast", "reduce", "allGather", "gather", "scatter", "allToAll", "barrier", "send", "recv",
                    "isend", "irecv"), calls, "no agreement round either: NCCL is off on every rank");
            assertFalse(c.supportsDeviceBuffers(), "neither NCCL nor the fake inner backend carries device memory");
            assertThrows(UnsupportedBufferException.class,
                    () -> c.allReduce(dev.ferry.DeviceBuffer.wrap(0, 0x1000, 64), b, 4, DataType.INT, ReduceOp.SUM));
            calls.clear();
            c.reduceScatterBlock(a, b, 4, DataType.INT, ReduceOp.SUM);
            c.reduceScatter(a, b, new long[] {4}, DataType.INT, ReduceOp.SUM);
            c.scan(a, b, 4, DataType.INT, ReduceOp.SUM);
            c.exscan(a, b, 4, DataType.INT, ReduceOp.SUM);
            c.scatterV(a, new long[] {4}, new long[] {0}, b, 4, DataType.INT, 0);
            c.gatherV(a, 4, b, new long[] {4}, new long[] {0}, DataType.INT, 0);
            c.allGatherV(a, 4, b, new long[] {4}, new long[] {0}, DataType.INT);
            c.allToAllV(a, new long[] {4}, new long[] {0}, b, new long[] {4}, new long[] {0}, DataType.INT);
            assertEquals(List.of("reduceScatterBlock", "reduceScatter", "scan", "exscan", "scatterV", "gatherV", "allGatherV", "allToAllV"), calls,
                    "with NCCL off, the new collectives go to the inner communicator");
        }
    }

    @Test
    void inactiveReasonOfAnotherBackendsCommunicatorIsASpecificException() {
        try (Communicator other = new CheckedCommunicator(new OneRankHostTransport(new ArrayList<>()))) {
            dev.ferry.InvalidArgumentException e = assertThrows(dev.ferry.InvalidArgumentException.class, () -> Nccl.inactiveReason(other));
            assertTrue(e.getMessage().contains("is not a communicator of backend nccl"), e.getMessage());
        }
    }

    @Test
    void splitAndDuplicateCheckTheirOwnRanksAgainAndNoColorGivesNull() {
        List<String> calls = new ArrayList<>();
        try (Communicator c = new CheckedCommunicator(NcclTransport.world(new OneRankHostTransport(calls)))) {
            calls.clear();
            try (Communicator d = c.duplicate()) {
                assertEquals(List.of("duplicate", "allGather"), calls, "a communicator refused for its GPUs checks the new one's ranks");
                assertEquals("nccl", d.backend());
                assertFalse(NcclTransport.of(d).ncclActive());
            }
            calls.clear();
            assertNull(c.split(-1, 0));
            assertEquals(List.of("split"), calls);
            try (Communicator s = c.split(5, 0)) {
                assertEquals(1, s.size());
            }
        }
        assertTrue(calls.contains("close"));
    }

    @Test
    void timeoutComesFromTheSettings() {
        assertEquals(2_500_000_000L, NcclTransport.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.nccl.timeout", "2.5"))));
        assertEquals(3_000_000_000L, NcclTransport.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "3"))), "ferry.timeout is the fallback");
        assertEquals(0, NcclTransport.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "3", "ferry.nccl.timeout", "0"))));
        assertThrows(InvalidArgumentException.class,
                () -> NcclTransport.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.nccl.timeout", "soon"))));
    }
}
