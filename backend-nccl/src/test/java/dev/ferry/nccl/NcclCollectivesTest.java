// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.spi.Transport;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.ReduceOp;
import dev.ferry.UnsupportedBufferException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * NCCL as an algorithm of the planner without a GPU (this machine, CI): it cannot serve (no GPU on
 * the rank) and says why; every collective then runs on the planner's other algorithms over the
 * backend's transport, which a fake of one rank records, and messages go to it straight. What runs
 * on NCCL is for the GPU plan (NcclContract and friends).
 */
class NcclCollectivesTest {
    private static Communicator planned(Transport mover) {
        return new CheckedCommunicator(new dev.ferry.collectives.PlannedTransport(mover, dev.ferry.Settings.of(java.util.Map.of())));
    }

    @Test
    void withoutAGpuNcclSaysWhyAndEveryCollectiveTakesTheBackendsOwn() {
        List<String> calls = new ArrayList<>();
        try (Communicator c = planned(new NcclProvider.PreferNccl(new OneRankHostTransport(calls)));
             HostBuffer a = HostBuffer.allocate(64); HostBuffer b = HostBuffer.allocate(64)) {
            assertEquals(List.of("allGather", "allReduce"), calls, "the topology: one allGather of every rank's record and one agreement at start-up");
            assertEquals("nccl", c.backend());
            assertTrue(Nccl.inactiveReason(c).orElseThrow().contains("not every rank has a GPU")
                    || Nccl.inactiveReason(c).orElseThrow().contains("NCCL library is unavailable"), Nccl.inactiveReason(c).toString());
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
                    "isend", "irecv"), calls, "no vote either: NCCL cannot serve on any rank");
            assertFalse(c.supportsDeviceBuffers(), "the fake backend carries no device memory");
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
            assertEquals(List.of("reduceScatter", "reduceScatter", "scan", "exscan", "scatterV", "gatherV", "allGatherV", "allToAllV"), calls,
                    "reduceScatterBlock is the planner's reduceScatter of equal blocks");
        }
    }

    @Test
    void inactiveReasonOfACommunicatorWithoutAPlannerIsASpecificException() {
        try (Communicator other = new CheckedCommunicator(new OneRankHostTransport(new ArrayList<>()))) {
            dev.ferry.InvalidArgumentException e = assertThrows(dev.ferry.InvalidArgumentException.class, () -> Nccl.inactiveReason(other));
            assertTrue(e.getMessage().contains("has no NCCL collectives"), e.getMessage());
        }
    }

    @Test
    void splitAndDuplicateFindTheirOwnTopologyAndNoColorGivesNull() {
        List<String> calls = new ArrayList<>();
        try (Communicator c = planned(new NcclProvider.PreferNccl(new OneRankHostTransport(calls)))) {
            calls.clear();
            try (Communicator d = c.duplicate()) {
                assertEquals(List.of("duplicate", "allGather", "allReduce"), calls, "a duplicate finds its ranks' topology");
                assertEquals("nccl", d.backend());
                assertTrue(Nccl.inactiveReason(d).isPresent());
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
        assertEquals(2_500_000_000L, NcclCollectives.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.nccl.timeout", "2.5"))));
        assertEquals(3_000_000_000L, NcclCollectives.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "3"))), "ferry.timeout is the fallback");
        assertEquals(0, NcclCollectives.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "3", "ferry.nccl.timeout", "0"))));
        assertThrows(InvalidArgumentException.class,
                () -> NcclCollectives.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.nccl.timeout", "soon"))));
    }
}
