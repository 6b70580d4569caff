// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.testing.CommunicatorContract;
import dev.ferry.testing.Data;
import dev.ferry.testing.Mem;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite on backend nccl (GPU machines only: run under RankRunner with
 * {@code -Dferry.backend=nccl}; see backend-nccl/README.md, "GPU test plan"), plus NCCL's own
 * cases: NCCL really is used, reduceScatter, a reduction NCCL lacks goes to the inner backend.
 * Not run by Maven (its name matches neither *Test nor *IT): CI has no GPU.
 */
public class NcclContract extends CommunicatorContract {

    protected NcclCollectives nccl() {
        return Nccl.of(comm);
    }

    @Test
    void nccl_runsOnNcclWithOneGpuPerRank() {
        assertEquals("nccl", comm.backend());
        assertEquals(null, nccl().inactiveReason(), () -> "NCCL is off: " + nccl().inactiveReason() + "; " + NcclProvider.runtimeDetails());
        assertTrue(comm.supportsDeviceBuffers());
        try (var s = dev.ferry.cuda.Cuda.allocate(8); var r = dev.ferry.cuda.Cuda.allocate(8)) {
            comm.allReduce(s, r, 2, DataType.INT, ReduceOp.SUM);
            assertEquals("nccl", dev.ferry.collectives.CollectivesDiagnostics.lastAlgorithm(), "backend nccl puts NCCL first");
            assertTrue(nccl().active());
        }
    }

    @Test
    void nccl_reduceScatterOfDeviceBuffers() {
        // not active(): the NCCL communicator is made at the first collective, and this test may make it
        Assumptions.assumeTrue(Cuda.isAvailable() && nccl().inactiveReason() == null,
                () -> "needs NCCL on a GPU" + (Cuda.isAvailable() ? ": " + nccl().inactiveReason() : ""));
        for (long count : new long[] {0, 1, 7, 65_537}) {
            long bytes = DataType.INT.bytes(count);
            try (HostBuffer in = HostBuffer.allocate(Math.max(1, bytes * size)); HostBuffer out = HostBuffer.allocate(Math.max(1, bytes))) {
                for (long i = 0; i < count * size; i++) Data.put(in.segment(), DataType.INT, i, rank * 1000 + i);
                Buffer send = alloc(Mem.DEVICE, Math.max(1, bytes * size)), recv = poisoned(Mem.DEVICE, Math.max(1, bytes));
                Cuda.copy(send, in, bytes * size);
                comm.reduceScatterBlock(send, recv, count, DataType.INT, ReduceOp.SUM);
                Cuda.copy(out, recv, bytes);
                for (long i = 0; i < count; i++) {
                    long k = rank * count + i;
                    double expected = 1000.0 * size * (size - 1) / 2 + size * k;
                    assertEquals(expected, Data.get(out.segment(), DataType.INT, i), "element " + i + " of " + count);
                }
            }
        }
    }

    @Test
    void nccl_reduceScatterBlockOfWhatNcclLacksTakesAnotherAlgorithm() {
        Assumptions.assumeTrue(Cuda.isAvailable() && nccl().inactiveReason() == null && comm.supportsDeviceBuffers(), "needs NCCL on a GPU");
        int count = 3;
        try (HostBuffer in = HostBuffer.allocate(8L * count * size); HostBuffer out = HostBuffer.allocate(8L * count)) {
            for (long i = 0; i < (long) count * size; i++) Data.put(in.segment(), DataType.SHORT, i, rank + i);
            Buffer send = alloc(Mem.DEVICE, 2L * count * size), recv = poisoned(Mem.DEVICE, 2L * count);
            Cuda.copy(send, in, 2L * count * size);
            comm.reduceScatterBlock(send, recv, count, DataType.SHORT, ReduceOp.SUM);
            assertTrue(!"nccl".equals(dev.ferry.collectives.CollectivesDiagnostics.lastAlgorithm()), "NCCL has no SHORT");
            Cuda.copy(out, recv, 2L * count);
            for (int i = 0; i < count; i++) {
                long k = (long) rank * count + i;
                assertEquals(size * (size - 1) / 2.0 + size * k, Data.get(out.segment(), DataType.SHORT, i), "SHORT element " + i);
            }
        }
        assertUsable();
    }

    @Test
    void nccl_aReductionNcclLacksTakesAnotherAlgorithm() {
        Assumptions.assumeTrue(Cuda.isAvailable() && comm.supportsDeviceBuffers(), "the backend carries no device buffers");
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.SHORT, 0, rank + 1);
            Buffer s = alloc(Mem.DEVICE, 8), r = poisoned(Mem.DEVICE, 8);
            Cuda.copy(s, in, 2);
            comm.allReduce(s, r, 1, DataType.SHORT, ReduceOp.SUM);
            Cuda.copy(out, r, 2);
            assertEquals(size * (size + 1) / 2.0, Data.get(out.segment(), DataType.SHORT, 0));
            assertTrue(!"nccl".equals(dev.ferry.collectives.CollectivesDiagnostics.lastAlgorithm()), "NCCL has no SHORT");
        }
        assertEquals(null, nccl().inactiveReason(), "a call on another algorithm leaves NCCL usable");
    }

    @Test
    void nccl_probeDetailsNameVersionLibraryAndEnvironment() {
        var p = dev.ferry.Ferry.lastReport().probe("nccl");
        assertTrue(p.isAvailable(), p.toString());
        assertTrue(p.details().get("library").contains("NCCL " + Nccl.version()), p.details().toString());
        assertTrue(p.details().containsKey("environment") && p.details().containsKey("inner"), p.details().toString());
        assertFalse(NcclProvider.runtimeDetails().keySet().stream().anyMatch(k -> k.contains("aborted")), NcclProvider.runtimeDetails().toString());
    }
}
