// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.testing.TestWorld;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Thousands of open/close cycles of everything Ferry allocates, on real ranks: after a warm-up,
 * the process's resident memory (VmRSS), Ferry's count of open communicators and, where the backend
 * exposes it, the MPI library's handle table must not grow. Run with a fixed, pre-touched heap
 * ({@code -Xms=-Xmx -XX:+AlwaysPreTouch}) so that RSS growth is native memory, and with a small
 * {@code ferry.maxPieceBytes} so that collectives use (and must free) internal duplicates.
 *
 * <p>Cycles: {@code ferry.test.leak.cycles} (default 2000; communicator duplicates get 1.5 times
 * as many, more than MPICH's 2048 context ids, so that a leak there fails outright).
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class LeakCycles {
    static final int N = Integer.getInteger("ferry.test.leak.cycles", 2000);
    static final long MAX_RSS_GROWTH_KIB = Long.getLong("ferry.test.leak.maxRssGrowthKiB", 32 * 1024);
    /** The MPI handle index may move a little (the library's own internal objects), not by the number of cycles. */
    static final long MAX_HANDLE_GROWTH = 16;

    private final Communicator world = TestWorld.world();
    private final int rank = world.rank();
    private final int size = world.size();

    static long rssKiB() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    /** Runs {@code one} a tenth of {@code n} times to warm up, then {@code n} times, and checks that nothing grew. */
    private void cycles(String what, int n, Runnable one) {
        for (int i = 0; i < Math.max(10, n / 10); i++) one.run();
        world.barrier();
        System.gc();
        long rss0 = rssKiB(), open0 = CheckedCommunicator.openCount(), h0 = HandleProbe.index(world);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) one.run();
        double secs = (System.nanoTime() - t0) / 1e9;
        world.barrier();
        System.gc();
        long rss1 = rssKiB(), open1 = CheckedCommunicator.openCount(), h1 = HandleProbe.index(world);
        String line = String.format(Locale.ROOT, "[ferry-leak] rank %d %s: %d cycles in %.1f s; RSS %+d KiB (%d -> %d); open communicators %d -> %d; %s",
                rank, what, n, secs, rss1 - rss0, rss0, rss1, open0, open1,
                h0 < 0 ? "MPI handle index: not available for backend " + world.backend() : "MPI communicator handle index " + h0 + " -> " + h1);
        System.out.println(line);
        assertEquals(open0, open1, "communicators left open: " + line);
        assertTrue(rss1 - rss0 < MAX_RSS_GROWTH_KIB, "resident memory grew: " + line);
        if (h0 >= 0) {
            assertTrue(h1 - h0 <= MAX_HANDLE_GROWTH, "MPI communicator handles grew: " + line);
        }
    }

    @Test
    void a_duplicateAndClose() {
        cycles("duplicate()+close()", N * 3 / 2, () -> world.duplicate().close());
    }

    @Test
    void b_splitAndClose() {
        cycles("split()+close()", N / 2, () -> {
            Communicator half = world.split(rank % 2, -rank);
            assertNotNull(half);
            half.close();
            Communicator none = world.split(rank == 0 ? -1 : 0, 0);
            if (rank == 0) assertNull(none); else none.close();
        });
    }

    @Test
    void c_internalDuplicatesOfSplitCollectives() {
        long piece = Long.getLong("ferry.maxPieceBytes", 1L << 30);
        Assumptions.assumeTrue(piece <= 65536, "needs -Dferry.maxPieceBytes <= 65536 to split collectives");
        int block = (int) piece * 2;
        try (HostBuffer send = HostBuffer.allocate((long) block * size); HostBuffer recv = HostBuffer.allocate(block)) {
            cycles("duplicate()+scatter over internal duplicate+close()", N / 8, () -> {
                try (Communicator c = world.duplicate()) {
                    c.scatter(send, recv, block, DataType.BYTE, 0); // larger than a piece: point-to-point on an internal duplicate
                }
            });
        }
    }

    @Test
    void d_hostBuffers() {
        cycles("HostBuffer.allocate(64 KiB)+slice+close()", N * 10, () -> {
            HostBuffer b = HostBuffer.allocate(64 * 1024);
            b.slice(100, 1000).segment().fill((byte) 1);
            b.close();
        });
    }

    @Test
    void e_pinnedAndDeviceBuffers() {
        dev.ferry.testing.Required.assume("cuda", Cuda.isAvailable(), () -> "needs CUDA: " + Cuda.unavailabilityCause().getMessage());
        long free0 = DeviceMemory.free();
        cycles("Cuda.allocatePinned(1 MiB)+close()", N, () -> Cuda.allocatePinned(1 << 20).close());
        cycles("Cuda.allocate(1 MiB)+close()", N, () -> Cuda.allocate(1 << 20).close());
        long free1 = DeviceMemory.free();
        System.out.printf(Locale.ROOT, "[ferry-leak] rank %d device memory free: %d -> %d bytes%n", rank, free0, free1);
        assertTrue(free0 - free1 < 64L << 20, "device memory lost: " + (free0 - free1) + " bytes");
    }

    @Test
    void f_nonBlockingPairs() {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        try (HostBuffer s = HostBuffer.allocate(4096); HostBuffer r = HostBuffer.allocate(4096)) {
            int[] i = {0};
            cycles("isend+irecv+waitAll / test()", N * 2, () -> {
                Request in = world.irecv(r, 4096, DataType.BYTE, prev, 9);
                Request out = world.isend(s, 1 + (i[0]++ % 4096), DataType.BYTE, next, 9);
                if (i[0] % 2 == 0) {
                    Request.waitAll(in, out);
                } else {
                    while (in.test().isEmpty()) Thread.onSpinWait();
                    out.waitFor();
                }
            });
        }
    }

    @Test
    void g_collectivesOnFreshDuplicates() {
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8 * 64)) {
            cycles("duplicate()+allReduce+allGather+close()", N / 4, () -> {
                try (Communicator c = world.duplicate()) {
                    c.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
                    c.allGather(in, out, 1, DataType.LONG);
                }
            });
        }
    }

    /** MPI's own handle table, where the backend exposes it: the index MPI gives a new communicator. */
    static final class HandleProbe {
        static long index(Communicator world) {
            if (!world.backend().equals("ompi")) return -1;
            return OmpiHandles.nextCommunicatorIndex(world);
        }
    }

    /** Device memory via the CUDA driver (cuMemGetInfo). */
    static final class DeviceMemory {
        static long free() {
            Cuda.defaultDevice().makeCurrent();
            long[] free = new long[1], total = new long[1];
            jcuda.driver.JCudaDriver.cuMemGetInfo(free, total);
            return free[0];
        }
    }
}
