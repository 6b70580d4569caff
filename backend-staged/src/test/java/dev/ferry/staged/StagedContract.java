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
        return (StagedTransport) ((dev.ferry.spi.CheckedCommunicator) c).transport();
    }

    /** IPC between the two ranks of the pair, else the test is skipped with the reason. */
    private StagedRuntime assumeIpcWith(int peer) {
        StagedRuntime rt = staged(comm).runtime();
        boolean mine = rt.ipcEnabled() && staged(comm).peers().ipcPeer(peer);
        Assumptions.assumeTrue(dev.ferry.testing.TestWorld.allAgree(comm, mine), "CUDA IPC is not possible between every pair here (ferry.staged.ipc=false, or ranks on different nodes)");
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
        long[] cache0 = rt.ipcCache.stats();
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
            long[] cache = rt.ipcCache.stats();
            assertEquals(6, rt.stats.ipcCopies.sum() - copies0, "six copies from the peer's GPU");
            assertEquals(2, cache[0] - cache0[0], "two allocations mapped, once each: " + Arrays.toString(cache));
            assertEquals(4, cache[1] - cache0[1], "three repeats and the slice were hits: " + Arrays.toString(cache));
            assertTrue(rt.ipcCache.size() <= rt.settings.ipcCacheSize());
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

    /**
     * Node-local device collectives take the path ferry.staged.deviceCollectives names: over CUDA IPC
     * with the reduction on the GPU (auto and ipc, when every rank is on this node with IPC on), or
     * staged through host memory (host); the results are right either way.
     */
    @ParameterizedTest
    @EnumSource(value = Mem.class, names = "DEVICE")
    void staged_deviceCollectivesTakeTheConfiguredPath(Mem m) {
        m.assume(comm);
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt);
        IpcCollectives ipc = staged(comm).collectivesForTests().ipc();
        StagedTransport sc = staged(comm);
        boolean expectIpc = rt.settings.deviceCollectives() != StagedSettings.DeviceCollectives.HOST && size > 1 && rt.ipcEnabled()
                && sc.peers().localCount() == size;
        assertEquals(expectIpc, ipc.applicable(), "the IPC path applies exactly when the setting allows, IPC is on and every rank is on this node");
        boolean meet = expectIpc && shortAllReducesMeetOnGpu(m); // before the counters: its host collectives count board rounds too
        long before = rt.stats.ipcCollectives.sum(), gpu = rt.stats.gpuReductions.sum(), onEvents = rt.stats.ipcEventWaits.sum();
        long across = rt.stats.hierarchicalReductions.sum(), onBoard = rt.stats.boardRounds.sum();
        long onGpu = rt.stats.shortAllReduces.sum();
        ipc.offerEvents(true); // the second ending (off by default) is checked here too
        for (int count : SHORT_ONE_SLICED) {
            allReduceRankSums(comm, alloc(m, 8L * count), alloc(m, 8L * count), count);
        }
        ipc.offerEvents(false);
        long took = rt.stats.ipcCollectives.sum() - before;
        if (expectIpc) {
            assertEquals(3, took, "the three allReduces went over CUDA IPC (" + rt.settings.deviceCollectives() + ")");
            assertEquals(3, rt.stats.gpuReductions.sum() - gpu, "and reduced on the GPU");
            assertEquals(meet ? 1 : 0, rt.stats.shortAllReduces.sum() - onGpu,
                    "the 16-byte one met on the GPU where the ranks' kernels run at once: " + rt.stats);
            assertEquals(Boolean.TRUE, ipc.verified(), "every rank mapped every peer");
            assertEquals(meet ? 2 : 3, rt.stats.ipcEventWaits.sum() - onEvents,
                    "the host-driven ones ended on the ranks' interprocess events (turned on above)");
            // (without a GPU meeting, the first short call of a communicator also exchanged the records that found it off)
            assertEquals(meet ? 3 : 4, rt.stats.boardRounds.sum() - onBoard, "each exchanged its records on the node's shared-memory board once");
            // reduceScatterBlock: each rank folds its block of every rank's input on its GPU (no host reduction)
            long ipcRs = rt.stats.ipcCollectives.sum(), gpuRs = rt.stats.gpuReductions.sum();
            int per = 3;
            Buffer in = alloc(m, 8L * per * size), out = alloc(m, 8L * per);
            try (dev.ferry.HostBuffer h = dev.ferry.HostBuffer.allocate(8L * per * size)) {
                for (int i = 0; i < per * size; i++) Data.put(h.segment(), DataType.LONG, i, rank * 1000 + i);
                Cuda.copy(in, h, 8L * per * size);
                comm.reduceScatterBlock(in, out, per, DataType.LONG, ReduceOp.SUM);
                Cuda.copy(h, out, 8L * per);
                for (int i = 0; i < per; i++) {
                    long want = 1000L * size * (size - 1) / 2 + (long) size * (rank * per + i);
                    assertEquals(want, (long) Data.get(h.segment(), DataType.LONG, i), "reduceScatterBlock element " + i);
                }
            }
            assertEquals(1, rt.stats.ipcCollectives.sum() - ipcRs, "the reduceScatterBlock went over CUDA IPC");
            assertEquals(1, rt.stats.gpuReductions.sum() - gpuRs, "and reduced on the GPU");
        } else if (rt.stats.hierarchicalReductions.sum() == across) { // node by node, the node-local steps take IPC
            assertEquals(0, took, "staged through host memory (" + rt.settings.deviceCollectives() + ", applicable " + ipc.applicable() + ")");
        }
        if (rt.settings.deviceCollectives() == StagedSettings.DeviceCollectives.IPC && size > 1 && ipc.applicable()) {
            // forced: a device collective that cannot take the path fails on every rank alike (a misaligned INT buffer)
            Buffer in = alloc(m, 64), out = alloc(m, 64);
            assertThrows(dev.ferry.UnsupportedBufferException.class, () -> comm.allReduce(in.slice(1, 8), out, 2, DataType.INT, ReduceOp.SUM));
            assertUsable();
        }
    }

    /**
     * Large reduce and allReduce of staged buffers on ranks of several nodes, one node holding several
     * of them (on one machine: {@code ferry.staged.test.nodeGroup}), run node by node: counted by the
     * runtime on every rank, folded on the GPU for device memory (node-local folds and broadcasts over
     * CUDA IPC where it is on), results equal to the host's rank-order fold (inputs exact in any order).
     * Device memory needs a GPU; the no-GPU test mode ({@code stageHostBuffers}) runs the same protocol
     * with host buffers.
     */
    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_reductionsAcrossNodesRunNodeByNode(Mem m) {
        m.assume(comm);
        StagedTransport sc = staged(comm);
        StagedRuntime rt = sc.runtime();
        HierarchicalReductions h = sc.collectivesForTests().hierarchical();
        Assumptions.assumeTrue(h.applies(), () -> "the " + size + " ranks are on " + h.nodes() + " node(s): this needs several nodes, one of several"
                + " ranks (on one machine: -Dferry.staged.test.nodeGroup=2 with 3 or more ranks), and deviceCollectives other than host");
        assumeStaged(sc, m);
        long count = Math.max(3 * rt.settings.chunk(), 2 * rt.settings.threshold()) / 8 + 1001; // over the threshold, several chunks
        Stats st = rt.stats;
        long across0 = st.hierarchicalReductions.sum(), ipc0 = st.ipcCollectives.sum(), gpu0 = st.gpuReductions.sum();
        List<String> wrong = new ArrayList<>();
        int calls = 0;
        Object[][] cases = {{DataType.LONG, ReduceOp.SUM}, {DataType.DOUBLE, ReduceOp.SUM}, {DataType.FLOAT, ReduceOp.MAX}};
        for (Object[] c : cases) {
            DataType t = (DataType) c[0];
            ReduceOp op = (ReduceOp) c[1];
            byte[] expected = Data.orderFreeInput(t, op, 0, count);
            for (int r = 1; r < size; r++) {
                dev.ferry.spi.HostReduction.apply(t, op, java.lang.foreign.MemorySegment.ofArray(expected),
                        java.lang.foreign.MemorySegment.ofArray(Data.orderFreeInput(t, op, r, count)), count);
            }
            Buffer send = filled(m, Data.orderFreeInput(t, op, rank, count));
            Buffer recv = poisoned(m, t.bytes(count));
            comm.allReduce(send, recv, count, t, op);
            calls++;
            if (!Arrays.equals(expected, Mem.read(recv))) wrong.add("allReduce " + op + " of " + t);
            for (int root = 0; root < size; root++) {
                Buffer out = rank == root ? poisoned(m, t.bytes(count)) : null;
                comm.reduce(send, out, count, t, op, root);
                calls++;
                if (out != null && !Arrays.equals(expected, Mem.read(out))) wrong.add("reduce " + op + " of " + t + " to root " + root);
                if (out != null) close(out);
            }
            close(send);
            close(recv);
        }
        assertTrue(wrong.isEmpty(), "wrong results on rank " + rank + ": " + wrong);
        assertEquals(calls, st.hierarchicalReductions.sum() - across0, "every call ran node by node: " + st);
        if (m == Mem.DEVICE) {
            dev.ferry.HostBuffer mine = closeAfter(dev.ferry.HostBuffer.allocate(8)), all = closeAfter(dev.ferry.HostBuffer.allocate(8));
            Data.put(mine.segment(), DataType.LONG, 0, st.gpuReductions.sum() - gpu0);
            comm.allReduce(mine, all, 1, DataType.LONG, ReduceOp.SUM);
            assertTrue(Data.get(all.segment(), DataType.LONG, 0) >= calls, "the folds ran on the GPUs: " + st);
            if (rt.ipcEnabled() && sc.peers().localCount() > 1) {
                // every call: one node-local reduction over CUDA IPC, and for allReduce one node-local broadcast
                assertEquals(calls + cases.length, st.ipcCollectives.sum() - ipc0, "the node-local steps went over CUDA IPC: " + st);
            }
        }
    }

    /** Skips unless {@code sc} stages memory of kind {@code m} (device memory; host memory only in the test mode). */
    /** allReduce counts of the IPC path's three ways: met on the GPU, one rank folds all, sliced. */
    static final int[] SHORT_ONE_SLICED = {2, 3000, 100_003};

    /**
     * An allReduce (SUM) of {@code count} LONGs, {@code rank + i} at element i on every rank, between
     * {@code in} and {@code out} (device memory of the test), checked at every 997th element.
     */
    static void allReduceRankSums(Communicator comm, Buffer in, Buffer out, int count) {
        int rank = comm.rank(), size = comm.size();
        try (dev.ferry.HostBuffer h = dev.ferry.HostBuffer.allocate(8L * count)) {
            for (int i = 0; i < count; i++) Data.put(h.segment(), DataType.LONG, i, rank + i);
            Cuda.copy(in, h, 8L * count);
            comm.allReduce(in, out, count, DataType.LONG, ReduceOp.SUM);
            Cuda.copy(h, out, 8L * count);
            for (int i = 0; i < count; i += 997) {
                assertEquals(size * (size - 1) / 2 + (long) size * i, (long) Data.get(h.segment(), DataType.LONG, i), "allReduce element " + i);
            }
        }
    }

    private void assumeStaged(StagedTransport sc, Mem m) {
        Buffer kind = alloc(m, 16);
        boolean staged = sc.staged(kind);
        close(kind);
        Assumptions.assumeTrue(staged, () -> m + " memory is not staged here (host buffers go straight to the inner MPI)");
    }

    /**
     * Small reductions of staged buffers (device memory) that the node's IPC path does not carry are
     * folded on the GPU, never on the host ({@link GatheredReductions}): scan and exscan everywhere,
     * and where the IPC path does not apply (several nodes, IPC off) allReduce, reduce to every root
     * and reduceScatterBlock too. Results equal the host's rank-order fold, and every call on every
     * rank is counted by the path. The no-GPU test mode ({@code stageHostBuffers}) runs the same
     * protocol with host buffers.
     */
    @ParameterizedTest
    @EnumSource(Mem.class)
    void staged_smallReductionsOfStagedBuffersFoldOnTheGpus(Mem m) {
        m.assume(comm);
        StagedTransport sc = staged(comm);
        StagedRuntime rt = sc.runtime();
        Assumptions.assumeTrue(size > 1 && rt.settings.deviceCollectives() != StagedSettings.DeviceCollectives.HOST,
                "needs 2 or more ranks and deviceCollectives other than host");
        assumeStaged(sc, m);
        boolean ipcCarries = sc.collectivesForTests().ipc().applicable();
        long count = 5;
        Stats st = rt.stats;
        long gathered0 = st.gatheredReductions.sum();
        List<String> wrong = new ArrayList<>();
        int calls = 0;
        Object[][] cases = {{DataType.LONG, ReduceOp.SUM}, {DataType.DOUBLE, ReduceOp.SUM}, {DataType.FLOAT, ReduceOp.MAX}, {DataType.INT, ReduceOp.BXOR}};
        for (Object[] c : cases) {
            DataType t = (DataType) c[0];
            ReduceOp op = (ReduceOp) c[1];
            byte[][] prefix = new byte[size][]; // prefix[r]: the fold of ranks 0..r
            prefix[0] = Data.orderFreeInput(t, op, 0, count);
            for (int r = 1; r < size; r++) {
                prefix[r] = prefix[r - 1].clone();
                dev.ferry.spi.HostReduction.apply(t, op, java.lang.foreign.MemorySegment.ofArray(prefix[r]),
                        java.lang.foreign.MemorySegment.ofArray(Data.orderFreeInput(t, op, r, count)), count);
            }
            Buffer send = filled(m, Data.orderFreeInput(t, op, rank, count));
            Buffer recv = poisoned(m, t.bytes(count));
            comm.scan(send, recv, count, t, op);
            calls++;
            if (!Arrays.equals(prefix[rank], Mem.read(recv))) wrong.add("scan " + op + " of " + t);
            Buffer ex = rank == 0 ? null : poisoned(m, t.bytes(count));
            comm.exscan(send, ex, count, t, op);
            calls++;
            if (ex != null && !Arrays.equals(prefix[rank - 1], Mem.read(ex))) wrong.add("exscan " + op + " of " + t);
            if (ex != null) close(ex);
            if (!ipcCarries) {
                comm.allReduce(send, recv, count, t, op);
                calls++;
                if (!Arrays.equals(prefix[size - 1], Mem.read(recv))) wrong.add("allReduce " + op + " of " + t);
                for (int root = 0; root < size; root++) {
                    Buffer out = rank == root ? poisoned(m, t.bytes(count)) : null;
                    comm.reduce(send, out, count, t, op, root);
                    calls++;
                    if (out != null && !Arrays.equals(prefix[size - 1], Mem.read(out))) wrong.add("reduce " + op + " of " + t + " to root " + root);
                    if (out != null) close(out);
                }
                // reduceScatterBlock: block b of every rank's send (count elements per block) folded into rank b
                byte[] mine = Data.orderFreeInput(t, op, rank, count * size);
                byte[] expected = java.util.Arrays.copyOfRange(Data.orderFreeInput(t, op, 0, count * size), (int) t.bytes(count * rank), (int) t.bytes(count * (rank + 1)));
                for (int r = 1; r < size; r++) {
                    byte[] theirs = java.util.Arrays.copyOfRange(Data.orderFreeInput(t, op, r, count * size), (int) t.bytes(count * rank), (int) t.bytes(count * (rank + 1)));
                    dev.ferry.spi.HostReduction.apply(t, op, java.lang.foreign.MemorySegment.ofArray(expected), java.lang.foreign.MemorySegment.ofArray(theirs), count);
                }
                Buffer all = filled(m, mine);
                comm.reduceScatterBlock(all, recv, count, t, op);
                calls++;
                if (!Arrays.equals(expected, Mem.read(recv))) wrong.add("reduceScatterBlock " + op + " of " + t);
                close(all);
            }
            close(send);
            close(recv);
        }
        assertTrue(wrong.isEmpty(), "wrong results on rank " + rank + ": " + wrong);
        assertEquals(calls, st.gatheredReductions.sum() - gathered0, "every call was gathered and folded where the data is: " + st);
    }

    /**
     * Short allReduces of device buffers meet on the GPU, one kernel per rank: many rounds with inputs
     * that change every round (a slot reused too early shows as a wrong sum), in two types, with one
     * rank late now and then (the others wait for its record on the host; a kernel that comes back
     * after its patience is DeviceReductionTest's), with one rank not offering the path (every rank takes the host-driven one), and a
     * close that waits for the peers' acknowledgements, not for its time limit.
     */
    @ParameterizedTest
    @EnumSource(value = Mem.class, names = "DEVICE")
    void staged_shortAllReducesMeetOnTheGpu(Mem m) {
        m.assume(comm);
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt);
        dev.ferry.Communicator d = comm.duplicate();
        IpcCollectives ipc = staged(d).collectivesForTests().ipc();
        Assumptions.assumeTrue(ipc.applicable(), "the IPC path does not apply here (one rank, IPC off, several nodes, or deviceCollectives=host)");
        Assumptions.assumeTrue(size <= 8, "the GPU meeting takes at most 8 ranks");
        int count = (int) (ShortAllReduce.SLOT_BYTES / 8);
        Buffer in = alloc(m, 8L * count), out = alloc(m, 8L * count);
        dev.ferry.HostBuffer h = closeAfter(dev.ferry.HostBuffer.allocate(8L * count));
        Stats st = rt.stats;
        long met0 = st.shortAllReduces.sum();
        List<String> wrong = new ArrayList<>();
        int rounds = 300;
        for (int round = 0; round < rounds; round++) {
            int n = 1 + (round * 37) % count; // 1 to 2048 elements
            DataType t = round % 2 == 0 ? DataType.LONG : DataType.DOUBLE;
            for (int i = 0; i < n; i++) {
                long v = rank * 1000L + round * 7L + i;
                if (t == DataType.LONG) Data.put(h.segment(), t, i, v); else Data.put(h.segment(), t, i, (double) v);
            }
            Cuda.copy(in, h, 8L * n);
            if (round % 50 == 25 && rank == (round / 50) % size) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            d.allReduce(in, out, n, t, ReduceOp.SUM);
            Cuda.copy(h, out, 8L * n);
            for (int i = 0; i < n; i++) {
                long want = 1000L * size * (size - 1) / 2 + (long) size * (round * 7L + i);
                long got = t == DataType.LONG ? (long) Data.get(h.segment(), t, i) : (long) (double) Data.get(h.segment(), t, i);
                if (got != want) {
                    wrong.add("round " + round + " (" + n + " " + t + ") element " + i + ": " + got + " instead of " + want);
                    break;
                }
            }
        }
        assertTrue(wrong.isEmpty(), "wrong sums on rank " + rank + ": " + wrong);
        boolean meet = shortAllReducesMeetOnGpu(m);
        assertEquals(meet ? rounds : 0, st.shortAllReduces.sum() - met0,
                (meet ? "every round met on the GPU: " : "ranks sharing a GPU without MPS take the host-driven path: ") + st);
        // one rank not offering: every rank takes the host-driven path, with the right result
        if (rank == size - 1) ipc.offerShort(false);
        long met1 = st.shortAllReduces.sum(), ipc1 = st.ipcCollectives.sum();
        for (int i = 0; i < 8; i++) Data.put(h.segment(), DataType.LONG, i, rank + i);
        Cuda.copy(in, h, 64);
        d.allReduce(in, out, 8, DataType.LONG, ReduceOp.SUM);
        Cuda.copy(h, out, 64);
        for (int i = 0; i < 8; i++) {
            assertEquals(size * (size - 1) / 2 + (long) size * i, (long) Data.get(h.segment(), DataType.LONG, i), "element " + i + " host-driven");
        }
        assertEquals(0, st.shortAllReduces.sum() - met1, "no rank met on the GPU while one did not offer it");
        assertEquals(1, st.ipcCollectives.sum() - ipc1, "the call took the host-driven IPC path");
        ipc.offerShort(true);
        long t0 = System.nanoTime();
        d.close();
        long closeMillis = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(closeMillis < 2000, "closing waited " + closeMillis + " ms: the peers' acknowledgements did not arrive");
        assertUsable();
    }

    /**
     * Buffer churn under the IPC collectives, as a bench or an application makes it: small device
     * buffers allocated, used by an allToAll, a broadcast and an allReduce, and freed, again and
     * again with changing sizes. The owner's allocator puts new buffers in blocks that peers still
     * have mapped for freed ones; every call must still map them (never CUDA_ERROR_ALREADY_MAPPED)
     * and give the right bytes.
     */
    @ParameterizedTest
    @EnumSource(value = Mem.class, names = "DEVICE")
    void staged_ipcCollectivesSurviveBufferChurn(Mem m) {
        m.assume(comm);
        for (int round = 0; round < 24; round++) {
            int block = 8 << (round % 12); // 8 B to 16 KiB per rank
            byte[][] out = new byte[size][], in = new byte[size][];
            for (int k = 0; k < size; k++) {
                out[k] = Data.bytes(block, round * 131 + rank * 17 + k, block);
                in[k] = Data.bytes(block, round * 131 + k * 17 + rank, block);
            }
            Buffer send = m.allocate((long) block * size), recv = m.allocate((long) block * size);
            Buffer root = m.allocate(block), sum = m.allocate(8L * 4), sumIn = m.allocate(8L * 4);
            try {
                Mem.write(send, cat(out));
                comm.allToAll(send, recv, block, DataType.BYTE);
                assertArrayEquals(cat(in), Mem.read(recv), "round " + round + ": allToAll of " + block + " B blocks");
                byte[] fromRoot = Data.bytes(block, round, block);
                if (rank == round % size) Mem.write(root, fromRoot);
                comm.broadcast(root, block, DataType.BYTE, round % size);
                assertArrayEquals(fromRoot, Mem.read(root), "round " + round + ": broadcast of " + block + " B");
                byte[] four = new byte[32];
                for (int i = 0; i < 4; i++) java.nio.ByteBuffer.wrap(four).order(java.nio.ByteOrder.nativeOrder()).putLong(8 * i, rank + i + round);
                Mem.write(sumIn, four);
                comm.allReduce(sumIn, sum, 4, DataType.LONG, ReduceOp.SUM);
                java.nio.ByteBuffer got = java.nio.ByteBuffer.wrap(Mem.read(sum)).order(java.nio.ByteOrder.nativeOrder());
                for (int i = 0; i < 4; i++) {
                    assertEquals((long) size * (size - 1) / 2 + (long) size * (i + round), got.getLong(8 * i), "round " + round + ": allReduce element " + i);
                }
            } finally {
                comm.barrier(); // no peer still reads these buffers
                for (Buffer b : new Buffer[] {send, recv, root, sum, sumIn}) close(b);
            }
        }
        // many small buffers alive at once, allocated after the communicator's own device memory (the short
        // allReduce's scratch, mapped by every peer): each is mapped by the peers, whatever block CUDA puts it in
        Buffer recv = alloc(m, 1024L * size);
        for (int j = 0; j < 96; j++) {
            Buffer send = alloc(m, 1024L * size);
            byte[][] out = new byte[size][], in = new byte[size][];
            for (int k = 0; k < size; k++) {
                out[k] = Data.bytes(1024, j * 7 + rank * 3 + k, 1024);
                in[k] = Data.bytes(1024, j * 7 + k * 3 + rank, 1024);
            }
            Mem.write(send, cat(out));
            comm.allToAll(send, recv, 1024, DataType.BYTE);
            assertArrayEquals(cat(in), Mem.read(recv), "small buffer " + j + ": allToAll");
        }
        assertUsable();
    }

    /**
     * Whether short allReduces of {@code m} buffers meet on the GPU here: the ranks' kernels must run
     * at once, so no two ranks may share a GPU unless it runs CUDA MPS (the same answer on every rank).
     */
    private boolean shortAllReducesMeetOnGpu(Mem m) {
        Buffer probe = alloc(m, 8);
        int device = probe.device();
        close(probe);
        dev.ferry.HostBuffer mine = closeAfter(dev.ferry.HostBuffer.allocate(4)), all = closeAfter(dev.ferry.HostBuffer.allocate(4L * size));
        mine.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, device);
        comm.allGather(mine, all, 1, DataType.INT);
        boolean shared = false;
        for (int r = 0; r < size; r++) {
            shared |= r != rank && all.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, r) == device;
        }
        return dev.ferry.testing.TestWorld.allAgree(comm, !shared || Cuda.mpsEnabled(device));
    }

    /**
     * On a fresh communicator, broadcasts alone agree once on the pairs they map (root 0 and every
     * other rank); an allReduce then proves the remaining pairs once; after that no call agrees.
     */
    @ParameterizedTest
    @EnumSource(value = Mem.class, names = "DEVICE")
    void staged_ipcCollectivesAgreeOncePerPairOfRanks(Mem m) {
        m.assume(comm);
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt);
        try (dev.ferry.Communicator d = comm.duplicate()) {
            IpcCollectives ipc = staged(d).collectivesForTests().ipc();
            Assumptions.assumeTrue(ipc.applicable(), "the IPC path does not apply here (one rank, IPC off, several nodes, or deviceCollectives=host)");
            ipc.offerShort(false); // short allReduces met on the GPU map no buffer of the call: this is about those that do
            Buffer b = alloc(m, 64), out = alloc(m, 64);
            long before = rt.stats.ipcAgreements.sum(), calls = rt.stats.ipcCollectives.sum();
            for (int i = 0; i < 3; i++) d.broadcast(b, 8, DataType.LONG, 0);
            assertEquals(3, rt.stats.ipcCollectives.sum() - calls, "the broadcasts took the IPC path");
            assertEquals(1, rt.stats.ipcAgreements.sum() - before, "one agreement for three broadcasts from rank 0");
            assertNull(ipc.verified(), "broadcasts from rank 0 leave pairs of other ranks unproven");
            d.allReduce(b, out, 8, DataType.LONG, ReduceOp.SUM);
            assertEquals(2, rt.stats.ipcAgreements.sum() - before, "the allReduce proves the other pairs");
            assertEquals(Boolean.TRUE, ipc.verified());
            d.broadcast(b, 8, DataType.LONG, size - 1);
            d.allReduce(b, out, 8, DataType.LONG, ReduceOp.SUM);
            assertEquals(2, rt.stats.ipcAgreements.sum() - before, "no agreement once every pair is proven");
        }
        assertUsable();
    }

    /**
     * The node's shared-memory board on real ranks of one machine: every rank sees every rank's record
     * of the same call (records of alternate calls in alternate slots), and the barrier holds every
     * rank until the last arrives.
     */
    @Test
    void staged_nodeBoardExchangesRecordsAndMeets() {
        StagedTransport t = staged(comm);
        Assumptions.assumeTrue(dev.ferry.testing.TestWorld.allAgree(comm, t.peers().localCount() == size), "ranks on several nodes");
        StagedRuntime rt = t.runtime();
        int bytes = 40;
        try (NodeBoard board = NodeBoard.open(t.user(), bytes, rt.progress::poll); dev.ferry.HostBuffer mine = dev.ferry.HostBuffer.allocate(bytes);
             dev.ferry.HostBuffer all = dev.ferry.HostBuffer.allocate((long) bytes * size); dev.ferry.HostBuffer stamp = dev.ferry.HostBuffer.allocate(8);
             dev.ferry.HostBuffer latest = dev.ferry.HostBuffer.allocate(8)) {
            assertNotNull(board, "every rank mapped the board in /dev/shm");
            for (int call = 1; call <= 2000; call++) {
                for (int i = 0; i < bytes; i += 8) mine.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, i, call * 1000L + rank * 10L + i / 8);
                board.exchange(mine.segment(), all.segment(), bytes, rt.progress::poll);
                for (int r = 0; r < size; r++) {
                    for (int i = 0; i < bytes; i += 8) {
                        long got = all.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, (long) r * bytes + i);
                        if (got != call * 1000L + r * 10L + i / 8) {
                            fail("call " + call + ": rank " + r + "'s record word " + i / 8 + " is " + got);
                        }
                    }
                }
            }
            // the barrier: the last rank to arrive sleeps first; nobody leaves before its arrival time
            for (int round = 0; round < 3; round++) {
                if (rank == (round % size)) {
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                long before = System.currentTimeMillis();
                stamp.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, rank == (round % size) ? before : 0);
                board.barrier(rt.progress::poll);
                long after = System.currentTimeMillis();
                comm.allReduce(stamp, latest, 1, DataType.LONG, ReduceOp.MAX);
                assertTrue(after >= latest.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0),
                        "round " + round + ": rank " + rank + " left the barrier before rank " + (round % size) + " arrived");
            }
        }
        assertUsable();
    }

    @Test
    void staged_deviceCollectivesSettingIsChecked() {
        assertThrows(dev.ferry.InvalidArgumentException.class, () -> StagedSettings.read(dev.ferry.Settings.of(java.util.Map.of("ferry.staged.deviceCollectives", "gpu"))));
        assertEquals(StagedSettings.DeviceCollectives.HOST,
                StagedSettings.read(dev.ferry.Settings.of(java.util.Map.of("ferry.staged.deviceCollectives", " Host "))).deviceCollectives());
        assertEquals(StagedSettings.DeviceCollectives.AUTO, StagedSettings.read(dev.ferry.Settings.of(java.util.Map.of())).deviceCollectives());
    }

    @Test
    void staged_deviceCollectiveSlicesCoverTheBufferInAlignedPieces() {
        for (DataType t : DataType.values()) {
            for (int n = 1; n <= 5; n++) {
                for (long count : new long[] {1, 7, 64, 1001, 300_007}) {
                    long next = 0;
                    for (int r = 0; r < n; r++) {
                        long[] s = IpcCollectives.slice(count, t, r, n);
                        if (s[1] > 0) {
                            assertEquals(next, s[0], t + " slice " + r + " of " + n + " starts where the last ended");
                            assertEquals(0, t.bytes(s[0]) % 16, "slice starts at a 16-byte boundary");
                        }
                        next = s[0] + s[1];
                    }
                    assertEquals(count, next, "slices of " + count + " " + t + " over " + n + " ranks cover it");
                }
            }
        }
    }

    /** The configuration's own path really carried the traffic of the suite (a test mode that silently went straight would prove nothing). */
    @Test
    void staged_z_theConfiguredPathsWereTaken() {
        StagedRuntime rt = StagedRuntime.currentOrNull();
        assertNotNull(rt);
        var st = rt.stats.snapshot();
        System.out.println("rank " + rank + ": staged counters " + st + ", pool: " + rt.chunks.allocations() + " allocations, peak "
                + rt.chunks.peak() + " lent at once" + (rt.ipcCache == null ? "" : ", ipc cache " + Arrays.toString(rt.ipcCache.stats())));
        assertTrue(st.get("eagerSends") > 0 && st.get("framedSends") > 0, st.toString());
        if (rt.settings.stageHostBuffers()) {
            assertTrue(st.get("stagedChunksOut") > 100 && st.get("stagedChunksIn") > 100, "host buffers went through the staging pipeline: " + st);
            assertTrue(rt.chunks.peak() >= 2, "chunks were pipelined (several staging buffers lent at once): peak " + rt.chunks.peak());
            assertTrue(st.get("collectiveSteps") > 100 && st.get("collectivesByMessages") > 0, "collectives went through staging: " + st);
            if (size > 1 && rt.settings.deviceCollectives() != StagedSettings.DeviceCollectives.HOST) {
                assertTrue(st.get("chainReductions") > 0, "large reductions of staged buffers went through the reduction chain: " + st);
                assertTrue(st.get("gatheredReductions") > 0, "small reductions of staged buffers were gathered and folded: " + st);
            }
            if (staged(comm).collectivesForTests().hierarchical().applies()) {
                assertTrue(st.get("hierarchicalReductions") > 0, "reductions across nodes ran node by node: " + st);
            }
        } else if (!Cuda.isAvailable()) {
            assertEquals(0L, st.get("stagedChunksOut"), "host buffers go straight: " + st);
            assertTrue(st.get("straightChunksOut") > 0, st.toString());
        }
        if (rt.settings.offerIpcForHost() && size > 1) {
            assertTrue(st.get("ipcOffers") > 0 && st.get("ipcRefused").equals(st.get("ipcOffers")), "host buffers were offered and refused: " + st);
        }
    }
}
