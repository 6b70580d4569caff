// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.spi.Transport;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Probe;
import dev.ferry.testing.Data;
import dev.ferry.testing.TestWorld;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * On real MPI ranks without a GPU (CI, the build machine): backend nccl's transport under the
 * planner. NCCL cannot serve (no GPU) identically on every rank; every operation then runs on the
 * planner's other algorithms over the inner backend with the right results;
 * the probe under the real launcher names the right inner backend and the missing CUDA driver.
 * Run by {@link NcclOverMpiIT} under RankRunner.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class NcclOverMpiRanks {

    /** Backend nccl's stack (the planner over PreferNccl) over a duplicate of the inner backend's world: what Ferry.open gives on a machine with GPUs. */
    static Communicator open() {
        Transport world = ((CheckedCommunicator) TestWorld.world()).transport();
        return new CheckedCommunicator(new dev.ferry.collectives.PlannedTransport(new NcclProvider.PreferNccl(world.duplicate()),
                dev.ferry.Settings.process()));
    }

    @Test
    void a_placementRefusesNcclIdenticallyOnEveryRank() {
        try (Communicator c = open()) {
            String why = Nccl.inactiveReason(c).orElseThrow();
            assertTrue(why.contains("not every rank has a GPU") || why.contains("NCCL library is unavailable"), why);
            assertEquals(TestWorld.world().size(), c.size());
            assertEquals(TestWorld.world().rank(), c.rank());
        }
    }

    @Test
    void b_everyOperationGoesToTheInnerBackendWithTheRightResult() {
        try (Communicator c = open(); HostBuffer a = HostBuffer.allocate(8L * 64); HostBuffer b = HostBuffer.allocate(8L * 64)) {
            int rank = c.rank(), size = c.size();
            Data.put(a.segment(), DataType.LONG, 0, rank + 1);
            c.allReduce(a, b, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals(size * (size + 1) / 2.0, Data.get(b.segment(), DataType.LONG, 0));
            Data.put(a.segment(), DataType.INT, 0, rank == size - 1 ? 42 : -1);
            c.broadcast(a, 1, DataType.INT, size - 1);
            assertEquals(42, Data.get(a.segment(), DataType.INT, 0));
            for (int j = 0; j < size; j++) Data.put(a.segment(), DataType.INT, j, rank * 100 + j);
            c.allToAll(a, b, 1, DataType.INT);
            for (int j = 0; j < size; j++) assertEquals(j * 100 + rank, Data.get(b.segment(), DataType.INT, j), "allToAll block " + j);
            Data.put(a.segment(), DataType.INT, 0, rank);
            c.allGather(a, b, 1, DataType.INT);
            for (int j = 0; j < size; j++) assertEquals(j, Data.get(b.segment(), DataType.INT, j));
            Data.put(a.segment(), DataType.SHORT, 0, 1 << rank);
            c.allReduce(a, b, 1, DataType.SHORT, ReduceOp.BOR);
            assertEquals((1 << size) - 1, Data.get(b.segment(), DataType.SHORT, 0), "an operation NCCL lacks");
            Data.put(a.segment(), DataType.INT, 0, rank);
            c.sendRecv(a, 1, DataType.INT, (rank + 1) % size, 9, b, 1, DataType.INT, Communicator.ANY_SOURCE, 9);
            assertEquals((rank - 1 + size) % size, Data.get(b.segment(), DataType.INT, 0));
            c.barrier();
        }
    }

    @Test
    void c_splitAndDuplicateFindTheirOwnTopology() {
        try (Communicator c = open()) {
            try (Communicator half = c.split(c.rank() % 2, 0); Communicator dup = c.duplicate()) {
                assertNotNull(half);
                assertEquals("nccl", half.backend());
                assertEquals("nccl", dup.backend());
                assertTrue(Nccl.inactiveReason(half).isPresent());
                assertTrue(TestWorld.allAgree(dup, true));
            }
        }
    }

    @Test
    void d_theProbeUnderThisLauncherNamesItsInnerBackendAndTheMissingDriver() {
        Probe p = Ferry.report().probe("nccl");
        assertFalse(p.isAvailable(), p.toString());
        assertTrue(p.reason().startsWith("no CUDA here"), p.reason());
        String inner = TestWorld.world().backend();
        assertTrue(p.details().get("inner").startsWith(inner + " ("), inner + " expected: " + p.details());
        assertTrue(p.details().get("library").startsWith("NCCL "), p.details().toString());
    }
}
