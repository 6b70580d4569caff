// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.SelectionReport;
import dev.ferry.Status;
import dev.ferry.TruncationException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Probe;
import dev.ferry.testing.CommunicatorContract;
import dev.ferry.testing.Data;
import dev.ferry.testing.Mem;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite on backend staged, plus the cases of its own protocol: chunked messages
 * received into larger buffers, truncated, with wildcards, in MPI order, to itself; and that
 * staging buffers and transfers are all returned afterwards, also over a loop of open and close.
 */
public class StagedContract extends CommunicatorContract {
    /** Large enough for several chunks with the default settings too (4 MiB chunks). */
    static final int BIG = (9 << 20) + 5;

    private int peer() {
        return rank % 2 == 0 ? rank + 1 : rank - 1;
    }

    @Test
    void staged_runsOnStagedAndReportsItsInnerBackend() {
        assertEquals("staged", comm.backend());
        SelectionReport r = Ferry.lastReport();
        assertNotNull(r, "the runner opened through Ferry.open()");
        Probe p = r.probe("staged");
        assertTrue(p.isAvailable(), p.toString());
        String inner = StagedProvider.preferredInner(dev.ferry.spi.Launch.detect(), dev.ferry.Settings.process());
        assertTrue(p.details().get("inner").startsWith(inner), "the launcher's family (" + inner + "): " + p.details());
        for (String key : List.of("chunk", "depth", "threshold", "eager", "ipc", "peer access")) {
            assertTrue(p.details().containsKey(key), key + " in " + p.details());
        }
        assertEquals(Cuda.isAvailable(), p.has(Capability.CUDA_DEVICE_BUFFERS));
        assertEquals(Cuda.isAvailable(), comm.supportsDeviceBuffers());
        assertTrue(p.reason().contains(inner), p.reason());
        assertEquals(Cuda.isAvailable() ? StagedProvider.PRIORITY_CUDA : StagedProvider.PRIORITY_HOST, p.priority());
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_bigMessageIntoALargerBuffer(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer >= size) return;
        byte[] mine = Data.bytes(41, rank, BIG);
        Buffer recv = poisoned(m, BIG + 4099);
        Request r = comm.irecv(recv, BIG + 4099, DataType.BYTE, peer, 5);
        Status s = null;
        if (rank % 2 == 0) {
            comm.send(filled(m, mine), BIG, DataType.BYTE, peer, 5);
            s = r.waitFor();
        } else {
            s = r.waitFor();
            comm.send(filled(m, mine), BIG, DataType.BYTE, peer, 5);
        }
        assertEquals(BIG, s.byteCount());
        assertEquals(peer, s.source());
        assertReceived(Data.bytes(41, peer, BIG), Mem.read(recv), "big message");
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_truncatedBigMessageIsDrainedAndTheCommunicatorSurvives(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < size) {
            int n = (1 << 20) + 3, keep = 300_001;
            if (rank % 2 == 0) {
                comm.send(filled(m, Data.bytes(8, rank, n)), n, DataType.BYTE, peer, 23);
                comm.send(filled(m, Data.bytes(9, rank, 77)), 77, DataType.BYTE, peer, 23);
            } else {
                Buffer recv = poisoned(m, n);
                TruncationException e = assertThrows(TruncationException.class, () -> comm.recv(recv, keep, DataType.BYTE, peer, 23));
                assertTrue(e.getMessage().contains(Integer.toString(n)), e.getMessage());
                assertReceived(Arrays.copyOf(Data.bytes(8, peer, n), keep), Mem.read(recv), "the first bytes of a truncated message");
                Buffer next = poisoned(m, 100);
                Status s = comm.recv(next, 100, DataType.BYTE, peer, 23);
                assertEquals(77, s.byteCount(), "the next message is intact");
                assertReceived(Data.bytes(9, peer, 77), Mem.read(next), "the message after a truncated one");
            }
        }
        assertUsable();
    }

    @Test
    void staged_chunkedDatatypeMismatch() {
        int peer = peer();
        if (peer < size) {
            int n = (1 << 20) + 3;
            if (rank % 2 == 0) {
                comm.send(filled(Mem.PAGEABLE, Data.bytes(2, rank, n)), n, DataType.BYTE, peer, 24);
            } else {
                Buffer recv = poisoned(Mem.PAGEABLE, n + 1);
                DataTypeMismatchException e = assertThrows(DataTypeMismatchException.class, () -> comm.recv(recv, (n + 1) / 4, DataType.INT, peer, 24));
                assertTrue(e.getMessage().contains(n + " bytes"), e.getMessage());
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_anySourceBigMessagesFromEveryRank(Mem m) {
        m.assume(comm);
        int n0 = 300_000;
        if (rank == 0) {
            List<Request> reqs = new ArrayList<>();
            List<Buffer> bufs = new ArrayList<>();
            for (int k = 1; k < size; k++) {
                Buffer b = poisoned(m, n0 + size * 1000L + 7);
                bufs.add(b);
                reqs.add(comm.irecv(b, b.byteSize(), DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG));
            }
            List<Status> st = Request.waitAll(reqs);
            boolean[] seen = new boolean[size];
            for (int i = 0; i < st.size(); i++) {
                Status s = st.get(i);
                int from = s.source();
                assertEquals(200 + from, s.tag());
                assertEquals(n0 + from * 1000L, s.byteCount());
                assertTrue(!seen[from], "one message per rank");
                seen[from] = true;
                assertReceived(Data.bytes(12, from, n0 + from * 1000), Mem.read(bufs.get(i)), "message of rank " + from);
            }
        } else {
            int n = n0 + rank * 1000;
            comm.send(filled(m, Data.bytes(12, rank, n)), n, DataType.BYTE, 0, 200 + rank);
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_messagesWithOneTagArriveInOrder(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer >= size) return;
        int[] sizes = {BIG, 5, 70_000, 0, 1_500_000, 300};
        if (rank % 2 == 0) {
            List<Request> reqs = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                reqs.add(comm.isend(filled(m, Data.bytes(100 + i, rank, sizes[i])), sizes[i], DataType.BYTE, peer, 9));
            }
            Request.waitAll(reqs);
        } else {
            List<Request> reqs = new ArrayList<>();
            List<Buffer> bufs = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                Buffer b = poisoned(m, BIG + 1);
                bufs.add(b);
                reqs.add(comm.irecv(b, BIG + 1, DataType.BYTE, i % 2 == 0 ? peer : Communicator.ANY_SOURCE, i % 3 == 0 ? 9 : Communicator.ANY_TAG));
            }
            List<Status> st = Request.waitAll(reqs);
            for (int i = 0; i < sizes.length; i++) {
                assertEquals(sizes[i], st.get(i).byteCount(), "message " + i + " matched in order");
                assertReceived(Data.bytes(100 + i, peer, sizes[i]), Mem.read(bufs.get(i)), "message " + i);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_bigMessageToSelf(Mem m) {
        m.assume(comm);
        Buffer recv = poisoned(m, BIG);
        Request r = comm.irecv(recv, BIG, DataType.BYTE, rank, 3);
        Request s = comm.isend(filled(m, Data.bytes(13, rank, BIG)), BIG, DataType.BYTE, rank, 3);
        Request.waitAll(s, r);
        assertReceived(Data.bytes(13, rank, BIG), Mem.read(recv), "message to self");
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_bothSendBigBeforeReceiving(Mem m) {
        // both ranks start large sends first: the staging pool must not let them wait on each other
        m.assume(comm);
        int peer = peer();
        if (peer >= size) return;
        List<Request> sends = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sends.add(comm.isend(filled(m, Data.bytes(60 + i, rank, BIG)), BIG, DataType.BYTE, peer, 40 + i));
        }
        for (int i = 2; i >= 0; i--) {
            Buffer b = poisoned(m, BIG);
            comm.recv(b, BIG, DataType.BYTE, peer, 40 + i);
            assertReceived(Data.bytes(60 + i, peer, BIG), Mem.read(b), "message " + i);
        }
        Request.waitAll(sends);
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_largeCollectives(Mem m) {
        m.assume(comm);
        int root = size - 1;
        byte[] data = Data.bytes(77, root, BIG);
        Buffer b = rank == root ? filled(m, data) : poisoned(m, BIG);
        comm.broadcast(b, BIG, DataType.BYTE, root);
        assertReceived(data, Mem.read(b), "large broadcast");

        int count = (3 << 20) / 8 + 1; // longs: several chunks
        var in = Data.reductionInput(DataType.LONG, ReduceOp.SUM, rank, count);
        Buffer send = filled(m, Mem.read(in));
        in.close();
        Buffer recv = poisoned(m, 8L * count);
        comm.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM);
        var got = java.lang.foreign.MemorySegment.ofArray(Mem.read(recv));
        for (int i = 0; i < count; i += 997) {
            assertEquals(Data.expected(DataType.LONG, ReduceOp.SUM, size, i), Data.get(got, DataType.LONG, i), "allReduce element " + i);
        }
        assertEquals(Data.expected(DataType.LONG, ReduceOp.SUM, size, count - 1), Data.get(got, DataType.LONG, count - 1), "last element");

        int block = (1 << 20) + 9;
        Buffer mine = filled(m, Data.bytes(78, rank, block));
        Buffer all = poisoned(m, (long) block * size + 3);
        comm.allGather(mine, all, block, DataType.BYTE);
        byte[] got2 = Mem.read(all);
        for (int r = 0; r < size; r++) {
            assertTrue(Arrays.equals(Data.bytes(78, r, block), Arrays.copyOfRange(got2, r * block, (r + 1) * block)), "allGather block of rank " + r);
        }
    }

    // ---- GPU only: skipped without CUDA, with the reason ---------------------------------------

    private static void assumeGpu() {
        dev.ferry.testing.Required.assume("cuda", Cuda.isAvailable(), () -> "needs a GPU: " + Cuda.unavailabilityCause().getMessage());
    }

    private DeviceBuffer device(long bytes) {
        DeviceBuffer d = Cuda.allocate(bytes);
        Mem.poison(d);
        return d;
    }

    /** The staged transport under a communicator of this backend. */
    private static StagedTransport staged(dev.ferry.Communicator c) {
        dev.ferry.spi.Transport t = ((dev.ferry.spi.CheckedCommunicator) c).transport();
        while (t instanceof dev.ferry.spi.ForwardingTransport f) t = f.inner(); // the planner's, and any other layer, over it
        return (StagedTransport) t;
    }

    /** IPC between the two ranks of the pair, else the test is skipped with the reason. */
    private StagedRuntime assumeIpcWith(int peer) {
        StagedRuntime rt = staged(comm).runtime();
        boolean mine = rt.ipcEnabled() && staged(comm).peers().ipcPeer(peer);
        Assumptions.assumeTrue(dev.ferry.testing.TestWorld.allAgree(comm, mine), "CUDA IPC is not possible between every pair here (ferry.ipc=false, or ranks on different nodes)");
        return rt;
    }

    @Test
    void staged_gpu_deviceToHostAndHostToDevice() {
        // MPI lets a send from device memory match a receive into host memory and back: the wire protocol does not depend on the kind
        assumeGpu();
        int peer = peer();
        if (peer < size) {
            for (int n : new int[] {7, 20_000, 700_000, BIG}) {
                for (int dir = 0; dir < 2; dir++) {
                    boolean iSend = (rank % 2 == 0) == (dir == 0);
                    Mem sendKind = dir == 0 ? Mem.DEVICE : Mem.PAGEABLE, recvKind = dir == 0 ? Mem.PAGEABLE : Mem.DEVICE;
                    if (iSend) {
                        comm.send(filled(sendKind, Data.bytes(n + dir, rank, n)), n, DataType.BYTE, peer, 70 + dir);
                    } else {
                        Buffer b = poisoned(recvKind, n + 100);
                        Status s = comm.recv(b, n + 100, DataType.BYTE, peer, 70 + dir);
                        assertEquals(n, s.byteCount());
                        assertReceived(Data.bytes(n + dir, peer, n), Mem.read(b), n + " bytes " + sendKind + " -> " + recvKind);
                    }
                }
            }
        }
        assertUsable();
    }

    @Test
    void staged_gpu_ipcMapsEachAllocationOnceAndNoticesAFree() {
        assumeGpu();
        int peer = peer();
        if (peer >= size) {
            assumeIpcWith(rank);
            return;
        }
        StagedRuntime rt = assumeIpcWith(peer);
        long[] cache0 = rt.ipc.mappings().stats();
        long copies0 = rt.stats.ipcCopies.sum(), refused0 = rt.stats.ipcRefused.sum();
        int slice = 1 << 20;
        if (rank % 2 == 0) {
            DeviceBuffer d = Cuda.allocate(BIG);
            for (int i = 0; i < 4; i++) {
                Mem.write(d, Data.bytes(80 + i, rank, BIG));
                comm.send(d, BIG, DataType.BYTE, peer, 80 + i);
            }
            Mem.write(d, Data.bytes(90, rank, BIG));
            comm.send(d.slice(4099, slice), slice, DataType.BYTE, peer, 90);
            d.close(); // the peer's mapping is now stale; it learns at the next offer of this address
            DeviceBuffer e = Cuda.allocate(BIG);
            Mem.write(e, Data.bytes(91, rank, BIG));
            comm.send(e, BIG, DataType.BYTE, peer, 91);
            e.close();
            assertEquals(0, rt.stats.ipcRefused.sum() - refused0, "every offer was taken");
        } else {
            DeviceBuffer r = device(BIG);
            for (int i = 0; i < 4; i++) {
                comm.recv(r, BIG, DataType.BYTE, peer, 80 + i);
                assertReceived(Data.bytes(80 + i, peer, BIG), Mem.read(r), "IPC transfer " + i);
            }
            DeviceBuffer part = device(slice);
            comm.recv(part, slice, DataType.BYTE, peer, 90);
            assertReceived(Arrays.copyOfRange(Data.bytes(90, peer, BIG), 4099, 4099 + slice), Mem.read(part), "a slice 4099 bytes into its allocation");
            comm.recv(r, BIG, DataType.BYTE, peer, 91);
            assertReceived(Data.bytes(91, peer, BIG), Mem.read(r), "a new allocation (perhaps at the freed one's address)");
            long[] cache = rt.ipc.mappings().stats();
            assertEquals(6, rt.stats.ipcCopies.sum() - copies0, "six copies from the peer's GPU");
            assertEquals(2, cache[0] - cache0[0], "two allocations mapped, once each: " + Arrays.toString(cache));
            assertEquals(4, cache[1] - cache0[1], "three repeats and the slice were hits: " + Arrays.toString(cache));
            assertTrue(rt.ipc.mappings().size() <= dev.ferry.Settings.process().get(dev.ferry.collectives.ipc.IpcSettings.CACHE_SIZE));
            r.close();
            part.close();
        }
    }

    @Test
    void staged_gpu_wrappedPointerInsideAnAllocation() {
        assumeGpu();
        int peer = peer();
        if (peer < size) {
            int n = (1 << 20) + 3;
            if (rank % 2 == 0) {
                DeviceBuffer owner = Cuda.allocate(2 << 20);
                DeviceBuffer w = DeviceBuffer.wrap(owner.device(), owner.address() + 12345, n);
                Mem.write(w, Data.bytes(92, rank, n));
                comm.send(w, n, DataType.BYTE, peer, 92);
                comm.send(w.slice(1), n - 1, DataType.BYTE, peer, 93);
                owner.close();
            } else {
                Buffer r = poisoned(Mem.DEVICE, n + 9);
                comm.recv(r, n + 9, DataType.BYTE, peer, 92);
                assertReceived(Data.bytes(92, peer, n), Mem.read(r), "borrowed device memory");
                Mem.poison(r);
                comm.recv(r, n + 9, DataType.BYTE, peer, 93);
                assertReceived(Arrays.copyOfRange(Data.bytes(92, peer, n), 1, n), Mem.read(r), "a slice of borrowed device memory");
            }
        }
        assertUsable();
    }

    @Test
    void staged_gpu_collectivesWithDeviceAndHostBuffersOnDifferentRanks() {
        assumeGpu();
        Mem m = rank % 2 == 0 ? Mem.DEVICE : Mem.PAGEABLE;
        int root = size - 1;
        for (int n : new int[] {1000, BIG}) {
            byte[] data = Data.bytes(94 + n, root, n);
            Buffer b = rank == root ? filled(m, data) : poisoned(m, n + 1);
            comm.broadcast(b, n, DataType.BYTE, root);
            assertReceived(data, Mem.read(b), "broadcast of " + n + " bytes into " + m);
            int count = n / 8;
            var in = Data.reductionInput(DataType.LONG, ReduceOp.SUM, rank, count);
            Buffer send = filled(m, Mem.read(in));
            in.close();
            Buffer recv = poisoned(m, 8L * count);
            comm.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM);
            var got = java.lang.foreign.MemorySegment.ofArray(Mem.read(recv));
            for (int i = 0; i < count; i += 101) {
                assertEquals(Data.expected(DataType.LONG, ReduceOp.SUM, size, i), Data.get(got, DataType.LONG, i), "allReduce element " + i + " in " + m);
            }
            Buffer mine = filled(m, Data.bytes(95 + n, rank, n));
            Buffer all = poisoned(m, (long) n * size);
            comm.allGather(mine, all, n, DataType.BYTE);
            byte[] got2 = Mem.read(all);
            for (int r = 0; r < size; r++) {
                assertTrue(Arrays.equals(Data.bytes(95 + n, r, n), Arrays.copyOfRange(got2, r * n, (r + 1) * n)), "allGather block " + r + " in " + m);
            }
        }
    }

    @Test
    void staged_gpu_managedMemory() {
        assumeGpu();
        int peer = peer();
        if (peer < size) {
            try (DeviceBuffer s = Cuda.allocateManaged(BIG); DeviceBuffer r = Cuda.allocateManaged(BIG)) {
                Mem.write(s, Data.bytes(96, rank, BIG));
                Mem.poison(r);
                comm.sendRecv(s, BIG, DataType.BYTE, peer, 96, r, BIG, DataType.BYTE, peer, 96);
                assertReceived(Data.bytes(96, peer, BIG), Mem.read(r), "managed memory, staged (never offered by IPC)");
            }
        }
        assertUsable();
    }

    @Test
    void staged_z_resourcesAreReturnedAndOpenCloseLeavesNothing() {
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt, "a staged communicator is open, so is its runtime");
        for (int i = 0; i < 8; i++) {
            try (Communicator c = Ferry.open("staged"); Communicator d = c.duplicate()) {
                int peer = (rank + 1) % size, from = (rank + size - 1) % size;
                Buffer s = filled(Mem.PAGEABLE, Data.bytes(i, rank, 200_003));
                Buffer r = poisoned(Mem.PAGEABLE, 200_003);
                d.sendRecv(s, 200_003, DataType.BYTE, peer, 1, r, 200_003, DataType.BYTE, from, 1);
                assertReceived(Data.bytes(i, from, 200_003), Mem.read(r), "exchange on an opened communicator");
            }
        }
        assertTrue(rt == StagedRuntime.currentOrNull(), "the runtime lives while the world communicator does");
        assertEquals(0, rt.progress.inFlight(), "no transfer left in flight");
        assertEquals(0, rt.chunks.outstanding(), "every staging buffer was returned");
        assertEquals(0, rt.slots.outstanding(), "every first-piece slot was returned");
        // buffers beyond the bound are kept through a burst and freed once it has been over for a while
        try {
            Thread.sleep(PinnedPool.DEFAULT_TRIM_AFTER_NANOS / 1_000_000 + 100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        rt.chunks.trim();
        assertTrue(rt.chunks.allocatedBytes() <= rt.chunks.capacityBytes(), "the pool keeps at most its bound after a burst: " + rt.chunks.allocatedBytes());
    }

    /** The configuration's own path really carried the traffic of the suite (a test mode that silently went straight would prove nothing). */
    @Test
    void staged_z_theConfiguredPathsWereTaken() {
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt);
        var st = rt.stats.snapshot();
        System.out.println("rank " + rank + ": staged counters " + st + ", pool: " + rt.chunks.allocations() + " allocations, peak "
                + rt.chunks.peak() + " lent at once" + (!rt.ipcEnabled() ? "" : ", ipc cache " + Arrays.toString(rt.ipc.mappings().stats())));
        assertTrue(st.get("eagerSends") > 0 && st.get("framedSends") > 0, st.toString());
        if (rt.settings.stageHostBuffers()) {
            assertTrue(st.get("stagedChunksOut") > 100 && st.get("stagedChunksIn") > 100, "host buffers went through the staging pipeline: " + st);
            assertTrue(rt.chunks.peak() >= 2, "chunks were pipelined (several staging buffers lent at once): peak " + rt.chunks.peak());
            assertTrue(st.get("collectiveSteps") > 100 && st.get("collectivesByMessages") > 0, "collectives went through staging: " + st);
        } else if (!Cuda.isAvailable()) {
            assertEquals(0L, st.get("stagedChunksOut"), "host buffers go straight: " + st);
            assertTrue(st.get("straightChunksOut") > 0, st.toString());
        }
        if (rt.settings.offerIpcForHost() && size > 1) {
            assertTrue(st.get("ipcOffers") > 0 && st.get("ipcRefused").equals(st.get("ipcOffers")), "host buffers were offered and refused: " + st);
        }
    }
}
