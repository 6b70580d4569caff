// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.Buffer;
import dev.ferry.CollectiveMismatchException;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidSettingException;
import dev.ferry.ReduceOp;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.collectives.Group;
import dev.ferry.collectives.NodeBoard;
import dev.ferry.collectives.PlannedTransport;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.CheckedCommunicator;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every collective algorithm of the planner, forced one by one on real ranks ({@link
 * CollectivesDiagnostics#force}), with every byte of the results checked: each either runs every
 * collective it carries correctly, or is refused with an {@link InvalidSettingException} that says
 * why, on every rank alike (never a wrong byte, a hang or a crash). Then the algorithms of one node
 * on their own terms: the short allReduce met on the GPU, buffer churn under CUDA IPC, the IPC
 * agreement once per pair of ranks, the node's shared-memory board, reductions node by node across
 * (pretended) nodes, and reductions gathered through host memory.
 *
 * <p>A backend runs it with a one-line subclass in its integration tests, under the settings whose
 * paths it should cover (the staged backend's host-buffer test mode runs the GPU-fold protocols on
 * machines without a GPU; {@code ferry.staged.test.nodeGroup} pretends several nodes).
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public abstract class CollectiveAlgorithmsContract extends RankContract {
    /** One element; an odd count (bytes not a multiple of 16: the kernels' byte paths); a count whose bytes are (their 16-byte paths). */
    private static final int[] COUNTS = {1, 1003, 4100};

    /** Runs one collective of {@code count} elements on {@code c} with memory {@code m} and checks it; a description of what went wrong, or null. */
    private String runAndCheck(Communicator c, String op, Mem m, int count) {
        DataType t = DataType.DOUBLE;
        ReduceOp sum = ReduceOp.SUM;
        int n = c.size(), me = c.rank(), root = n - 1;
        long bytes = t.bytes(count);
        HostBuffer input = closeAfter(Data.reductionInput(t, sum, me, count));
        Buffer in = alloc(m, bytes * n), out = alloc(m, bytes * n);
        byte[] mine = Arrays.copyOf(Mem.read(input), (int) bytes);
        switch (op) {
            case "allReduce", "reduce", "scan", "exscan" -> {
                Mem.write(in, mine);
                Mem.poison(out);
                switch (op) {
                    case "allReduce" -> c.allReduce(in, out, count, t, sum);
                    case "reduce" -> c.reduce(in, me == root ? out : null, count, t, sum, root);
                    case "scan" -> c.scan(in, out, count, t, sum);
                    default -> c.exscan(in, me == 0 ? null : out, count, t, sum);
                }
                int upTo = op.equals("scan") ? me + 1 : op.equals("exscan") ? me : n;
                if (op.equals("reduce") && me != root || op.equals("exscan") && me == 0) return null;
                MemorySegment got = MemorySegment.ofArray(Mem.read(out));
                for (int i = 0; i < count; i++) {
                    double want = Data.expected(t, sum, upTo, i);
                    if (Data.get(got, t, i) != want) return op + " element " + i + ": " + Data.get(got, t, i) + " instead of " + want;
                }
            }
            case "reduceScatterBlock" -> {
                byte[] all = new byte[(int) (bytes * n)];
                for (int b = 0; b < n; b++) System.arraycopy(mine, 0, all, (int) (b * bytes), (int) bytes);
                Mem.write(in, all);
                Mem.poison(out);
                c.reduceScatterBlock(in, out, count, t, sum);
                MemorySegment got = MemorySegment.ofArray(Mem.read(out));
                for (int i = 0; i < count; i++) {
                    if (Data.get(got, t, i) != Data.expected(t, sum, n, i)) return op + " element " + i;
                }
            }
            case "broadcast" -> {
                byte[] data = Data.bytes(count + 11, root, (int) bytes);
                if (me == root) Mem.write(in, data); else Mem.poison(in);
                c.broadcast(in, count, t, root);
                if (!Arrays.equals(data, Arrays.copyOf(Mem.read(in), (int) bytes))) return "broadcast from " + root;
            }
            case "allGather", "gather" -> {
                Mem.write(in, Data.bytes(count + 13, me, (int) bytes));
                Mem.poison(out);
                if (op.equals("allGather")) c.allGather(in, out, count, t); else c.gather(in, me == root ? out : null, count, t, root);
                if (op.equals("gather") && me != root) return null;
                byte[] got = Mem.read(out);
                for (int r = 0; r < n; r++) {
                    if (!Arrays.equals(Data.bytes(count + 13, r, (int) bytes), Arrays.copyOfRange(got, (int) (r * bytes), (int) ((r + 1) * bytes)))) {
                        return op + " block " + r;
                    }
                }
            }
            case "scatter" -> {
                byte[] all = new byte[(int) (bytes * n)];
                for (int r = 0; r < n; r++) System.arraycopy(Data.bytes(count + 17, r, (int) bytes), 0, all, (int) (r * bytes), (int) bytes);
                if (me == root) Mem.write(in, all);
                Mem.poison(out);
                c.scatter(me == root ? in : null, out, count, t, root);
                if (!Arrays.equals(Data.bytes(count + 17, me, (int) bytes), Arrays.copyOf(Mem.read(out), (int) bytes))) return "scatter to " + me;
            }
            case "allToAll" -> {
                byte[] all = new byte[(int) (bytes * n)];
                for (int r = 0; r < n; r++) System.arraycopy(Data.bytes(count * 7L + r, me, (int) bytes), 0, all, (int) (r * bytes), (int) bytes);
                Mem.write(in, all);
                Mem.poison(out);
                c.allToAll(in, out, count, t);
                byte[] got = Mem.read(out);
                for (int r = 0; r < n; r++) {
                    if (!Arrays.equals(Data.bytes(count * 7L + me, r, (int) bytes), Arrays.copyOfRange(got, (int) (r * bytes), (int) ((r + 1) * bytes)))) {
                        return "allToAll block from " + r;
                    }
                }
            }
            default -> throw new IllegalArgumentException(op);
        }
        return null;
    }

    private static final String[] OPERATIONS = {"broadcast", "allReduce", "reduce", "allGather", "gather", "scatter", "allToAll", "reduceScatterBlock",
            "scan", "exscan"};

    @ParameterizedTest
    @EnumSource(value = Mem.class, names = {"PAGEABLE", "DEVICE"})
    void a_everyAlgorithmRunsWhatItCarriesOrIsRefusedWithTheReason(Mem m) {
        m.assume(comm);
        Map<String, List<String>> outcome = new LinkedHashMap<>();
        List<String> wrong = new ArrayList<>();
        for (String algorithm : CollectivesDiagnostics.algorithms(comm)) {
            try (Communicator d = comm.duplicate()) {
                List<String> ran = new ArrayList<>();
                for (String op : OPERATIONS) {
                    try {
                        CollectivesDiagnostics.force(d, (op.equals("reduceScatterBlock") ? "reduceScatter" : op) + ":" + algorithm);
                    } catch (InvalidSettingException e) {
                        continue; // it does not carry this collective
                    }
                    for (int count : COUNTS) {
                        try {
                            String bad = runAndCheck(d, op, m, count);
                            String taken = CollectivesDiagnostics.lastAlgorithm();
                            if (bad != null) wrong.add(algorithm + ": " + bad + " (" + count + " elements)");
                            else if (!algorithm.equals(taken)) wrong.add(algorithm + ": " + op + " ran on " + taken);
                            else ran.add(op + "/" + count);
                        } catch (InvalidSettingException e) {
                            assertTrue(e.getMessage().contains(algorithm), e.getMessage());
                            ran.add(op + "/" + count + " refused");
                        }
                    }
                }
                outcome.put(algorithm, ran);
                assertTrue(TestWorld.allAgree(d, true), "every rank got here");
            }
        }
        if (rank == 0) System.out.println("[ferry-algorithms] " + comm.backend() + " " + m + ": " + outcome);
        assertTrue(wrong.isEmpty(), "wrong results on rank " + rank + ": " + wrong);
        assertTrue(outcome.get("native").stream().noneMatch(s -> s.endsWith("refused")), "native runs every collective: " + outcome.get("native"));
        // what every rank ran and refused is the same (a refusal on one rank only would have hung the others)
        HostBuffer mineH = closeAfter(HostBuffer.allocate(8)), allH = closeAfter(HostBuffer.allocate(8L * size));
        mineH.segment().set(ValueLayout.JAVA_LONG, 0, outcome.toString().hashCode());
        comm.allGather(mineH, allH, 1, DataType.LONG);
        for (int r = 0; r < size; r++) {
            assertEquals(outcome.toString().hashCode(), allH.segment().getAtIndex(ValueLayout.JAVA_LONG, r), "rank " + r + " ran or refused the same");
        }
    }

    @Test
    void b_theSettingsNameIsCheckedAgainstTheAlgorithmsHere() {
        try (Communicator d = comm.duplicate()) {
            InvalidSettingException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidSettingException.class,
                    () -> CollectivesDiagnostics.force(d, "teleport"));
            assertTrue(e.getMessage().contains("native"), "the message lists the algorithms: " + e.getMessage());
            CollectivesDiagnostics.force(d, "allReduce:native");
            allReduceRankSums(d, alloc(Mem.PAGEABLE, 64), alloc(Mem.PAGEABLE, 64), 8);
            assertEquals("native", CollectivesDiagnostics.lastAlgorithm());
        }
    }

    /** Skips unless every rank has device memory on a GPU of this node and the IPC algorithms serve this communicator. */
    private void assumeIpc(Communicator c) {
        Mem.DEVICE.assume(c);
        boolean one = c instanceof CheckedCommunicator f && f.transport() instanceof PlannedTransport p
                && p.planner().byName("ipc").unfit(new dev.ferry.collectives.Shape(dev.ferry.collectives.Collective.ALL_REDUCE, DataType.LONG, ReduceOp.SUM,
                8, -1), p.planner().topology()) == null;
        Assumptions.assumeTrue(TestWorld.allAgree(c, one), "the collectives over CUDA IPC do not serve this communicator (one rank, several nodes, IPC off)");
    }

    /**
     * An allReduce (SUM) of {@code count} LONGs, {@code rank + i} at element i on every rank, between
     * {@code in} and {@code out}, checked at every 997th element.
     */
    static void allReduceRankSums(Communicator comm, Buffer in, Buffer out, int count) {
        int rank = comm.rank(), size = comm.size();
        try (HostBuffer h = HostBuffer.allocate(8L * count)) {
            for (int i = 0; i < count; i++) Data.put(h.segment(), DataType.LONG, i, rank + i);
            write(in, h, 8L * count);
            comm.allReduce(in, out, count, DataType.LONG, ReduceOp.SUM);
            read(h, out, 8L * count);
            for (int i = 0; i < count; i += 997) {
                assertEquals(size * (size - 1) / 2 + (long) size * i, (long) Data.get(h.segment(), DataType.LONG, i), "allReduce element " + i);
            }
        }
    }

    private static void write(Buffer to, HostBuffer from, long bytes) {
        if (to instanceof HostBuffer h) MemorySegment.copy(from.segment(), 0, h.segment(), 0, bytes); else Cuda.copy(to, from, bytes);
    }

    private static void read(HostBuffer to, Buffer from, long bytes) {
        if (from instanceof HostBuffer h) MemorySegment.copy(h.segment(), 0, to.segment(), 0, bytes); else Cuda.copy(to, from, bytes);
    }

    /** allReduce counts of the IPC algorithms: met on the GPU, one rank folding all, sliced. */
    private static final int[] SHORT_FOLD_SLICED = {2, 3000, 100_003};

    @Test
    void c_ipcAlgorithmsFoldOnTheGpuAndCanEndOnEvents() {
        assumeIpc(comm);
        try (Communicator d = comm.duplicate()) {
            String[] forced = {"allReduce:ipc-short", "allReduce:ipc-fold", "allReduce:ipc-sliced"};
            for (int k = 0; k < forced.length; k++) {
                CollectivesDiagnostics.force(d, forced[k]);
                long ipc0 = CollectivesDiagnostics.counter("ipcCollectives"), gpu0 = CollectivesDiagnostics.counter("gpuReductions");
                long met0 = CollectivesDiagnostics.counter("shortAllReduces");
                try {
                    allReduceRankSums(d, alloc(Mem.DEVICE, 8L * SHORT_FOLD_SLICED[k]), alloc(Mem.DEVICE, 8L * SHORT_FOLD_SLICED[k]), SHORT_FOLD_SLICED[k]);
                } catch (InvalidSettingException e) {
                    assertEquals(0, k, "only the short allReduce may be refused (ranks sharing a GPU without MPS): " + e.getMessage());
                    continue;
                }
                assertEquals(1, CollectivesDiagnostics.counter("gpuReductions") - gpu0, forced[k] + " reduced on the GPU");
                assertEquals(k == 0 ? 1 : 0, CollectivesDiagnostics.counter("shortAllReduces") - met0, forced[k]);
                assertEquals(1, CollectivesDiagnostics.counter("ipcCollectives") - ipc0, forced[k] + " over CUDA IPC");
            }
            CollectivesDiagnostics.force(d, "allReduce:ipc-fold");
            CollectivesDiagnostics.endOnEvents(d, true);
            long events0 = CollectivesDiagnostics.counter("ipcEventWaits");
            allReduceRankSums(d, alloc(Mem.DEVICE, 8L * 3000), alloc(Mem.DEVICE, 8L * 3000), 3000);
            assertEquals(1, CollectivesDiagnostics.counter("ipcEventWaits") - events0, "ended on the ranks' interprocess events");
            CollectivesDiagnostics.endOnEvents(d, false);
        }
        assertTrue(TestWorld.allAgree(comm, true));
    }

    /**
     * A call on the buffers of one of the last mapped calls finds every mapping it needs still held
     * and skips the meeting after the mappings; a call on another input meets again; calls that
     * alternate between two inputs skip it too; every sum is right.
     */
    @Test
    void c_aCallOnTheLastCallsBuffersSkipsTheMeetingAfterMapping() {
        assumeIpc(comm);
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "allReduce:ipc-fold");
            int count = 3000;
            Buffer in = alloc(Mem.DEVICE, 8L * count), out = alloc(Mem.DEVICE, 8L * count), other = alloc(Mem.DEVICE, 8L * count);
            allReduceRankSums(d, in, out, count);
            long repeats = CollectivesDiagnostics.counter("ipcRepeatedCalls");
            allReduceRankSums(d, in, out, count);
            allReduceRankSums(d, in, out, count);
            assertEquals(2, CollectivesDiagnostics.counter("ipcRepeatedCalls") - repeats, "the same buffers again: no meeting after the mappings");
            allReduceRankSums(d, other, out, count);
            assertEquals(2, CollectivesDiagnostics.counter("ipcRepeatedCalls") - repeats, "another input: the ranks meet after mapping it");
            allReduceRankSums(d, other, out, count);
            assertEquals(3, CollectivesDiagnostics.counter("ipcRepeatedCalls") - repeats, "that input again: no meeting");
            // back to the first input: remembered, unless mapping the other closed a mapping here (one the cache found stale)
            allReduceRankSums(d, in, out, count);
            long turns = CollectivesDiagnostics.counter("ipcRepeatedCalls");
            for (int i = 0; i < 4; i++) allReduceRankSums(d, i % 2 == 0 ? other : in, out, count);
            assertEquals(4, CollectivesDiagnostics.counter("ipcRepeatedCalls") - turns,
                    "the two inputs in turn: each is one of the last mapped calls, no meeting");
            assertEquals("ipc-fold", CollectivesDiagnostics.lastAlgorithm());
        }
        assertTrue(TestWorld.allAgree(comm, true));
    }

    /**
     * Short allReduces of device buffers meet on the GPU, one kernel per rank: many rounds with inputs
     * that change every round (a slot reused too early shows as a wrong sum), in two types, with one
     * rank late now and then, and a close that does not wait (no peer reads a rank's scratch once its last round is done).
     */
    @Test
    void d_shortAllReducesMeetOnTheGpu() {
        assumeIpc(comm);
        Communicator d = comm.duplicate();
        CollectivesDiagnostics.force(d, "allReduce:ipc-short");
        int count = 2048;
        Buffer in = alloc(Mem.DEVICE, 8L * count), out = alloc(Mem.DEVICE, 8L * count);
        HostBuffer h = closeAfter(HostBuffer.allocate(8L * count));
        long met0 = CollectivesDiagnostics.counter("shortAllReduces");
        List<String> wrong = new ArrayList<>();
        int rounds = 300;
        try {
            for (int round = 0; round < rounds; round++) {
                int n = 1 + (round * 37) % count;
                DataType t = round % 2 == 0 ? DataType.LONG : DataType.DOUBLE;
                for (int i = 0; i < n; i++) {
                    long v = rank * 1000L + round * 7L + i;
                    if (t == DataType.LONG) Data.put(h.segment(), t, i, v); else Data.put(h.segment(), t, i, (double) v);
                }
                Cuda.copy(in, h, 8L * n);
                if (round % 50 == 25 && rank == (round / 50) % size) {
                    Thread.sleep(20);
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
        } catch (InvalidSettingException e) {
            d.close();
            Assumptions.abort("the short allReduce does not serve here: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        assertTrue(wrong.isEmpty(), "wrong sums on rank " + rank + ": " + wrong);
        assertEquals(rounds, CollectivesDiagnostics.counter("shortAllReduces") - met0, "every round met on the GPU");
        long t0 = System.nanoTime();
        d.close();
        long closeMillis = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(closeMillis < 2000, "closing waited " + closeMillis + " ms");
    }

    /**
     * Buffer churn under the collectives over CUDA IPC, as a bench or an application makes it: small
     * device buffers allocated, used by an allToAll, a broadcast and an allReduce, and freed, again and
     * again with changing sizes; every call must still map them and give the right bytes.
     */
    @Test
    void e_ipcCollectivesSurviveBufferChurn() {
        assumeIpc(comm);
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "allToAll:ipc,broadcast:ipc,allReduce:ipc-fold");
            for (int round = 0; round < 24; round++) {
                int block = 8 << (round % 12);
                byte[] out = new byte[block * size], in = new byte[block * size];
                for (int k = 0; k < size; k++) {
                    System.arraycopy(Data.bytes(block, round * 131 + rank * 17 + k, block), 0, out, k * block, block);
                    System.arraycopy(Data.bytes(block, round * 131 + k * 17 + rank, block), 0, in, k * block, block);
                }
                Buffer send = Mem.DEVICE.allocate((long) block * size), recv = Mem.DEVICE.allocate((long) block * size), root = Mem.DEVICE.allocate(block);
                try {
                    Mem.write(send, out);
                    d.allToAll(send, recv, block, DataType.BYTE);
                    assertArrayEquals(in, Mem.read(recv), "round " + round + ": allToAll of " + block + " B blocks");
                    byte[] fromRoot = Data.bytes(block, round, block);
                    if (rank == round % size) Mem.write(root, fromRoot);
                    d.broadcast(root, block, DataType.BYTE, round % size);
                    assertArrayEquals(fromRoot, Mem.read(root), "round " + round + ": broadcast of " + block + " B");
                } finally {
                    d.barrier(); // no peer still reads these buffers
                    for (Buffer b : new Buffer[] {send, recv, root}) ((dev.ferry.DeviceBuffer) b).close();
                }
            }
        }
    }

    /**
     * On a fresh communicator, broadcasts alone agree once on the pairs they map (root 0 and every
     * other rank); an allReduce then proves the remaining pairs once; after that no call agrees.
     */
    @Test
    void f_ipcCollectivesAgreeOncePerPairOfRanks() {
        assumeIpc(comm);
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "broadcast:ipc,allReduce:ipc-fold");
            Buffer b = alloc(Mem.DEVICE, 64), out = alloc(Mem.DEVICE, 64);
            long before = CollectivesDiagnostics.counter("ipcAgreements"), calls = CollectivesDiagnostics.counter("ipcCollectives");
            for (int i = 0; i < 3; i++) d.broadcast(b, 8, DataType.LONG, 0);
            assertEquals(3, CollectivesDiagnostics.counter("ipcCollectives") - calls, "the broadcasts took the IPC path");
            assertEquals(1, CollectivesDiagnostics.counter("ipcAgreements") - before, "one agreement for three broadcasts from rank 0");
            assertEquals(size == 2 ? Boolean.TRUE : null, CollectivesDiagnostics.ipcVerified(d), "broadcasts from rank 0 leave other pairs unproven");
            d.allReduce(b, out, 8, DataType.LONG, ReduceOp.SUM);
            assertEquals(size == 2 ? 1 : 2, CollectivesDiagnostics.counter("ipcAgreements") - before, "the allReduce proves the other pairs");
            assertEquals(Boolean.TRUE, CollectivesDiagnostics.ipcVerified(d));
            d.broadcast(b, 8, DataType.LONG, size - 1);
            d.allReduce(b, out, 8, DataType.LONG, ReduceOp.SUM);
            assertEquals(size == 2 ? 1 : 2, CollectivesDiagnostics.counter("ipcAgreements") - before, "no agreement once every pair is proven");
        }
    }

    /**
     * The node's shared-memory board on real ranks of one machine: every rank sees every rank's record
     * of the same call (records of alternate calls in alternate slots), the barrier holds every
     * rank until the last arrives, and tells every rank whether one failed.
     */
    @Test
    void g_nodeBoardExchangesRecordsAndMeets() throws Exception {
        PlannedTransport p = (PlannedTransport) ((CheckedCommunicator) comm).transport();
        Assumptions.assumeTrue(TestWorld.allAgree(comm, p.planner().topology().oneNode()), "ranks on several nodes");
        int bytes = 40;
        Runnable progress = p.mover()::progress;
        try (NodeBoard board = NodeBoard.open(p.mover(), bytes, progress); HostBuffer mine = HostBuffer.allocate(bytes);
             HostBuffer all = HostBuffer.allocate((long) bytes * size); HostBuffer stamp = HostBuffer.allocate(8); HostBuffer latest = HostBuffer.allocate(8)) {
            assertNotNull(board, "every rank mapped the board in /dev/shm");
            for (int call = 1; call <= 2000; call++) {
                for (int i = 0; i < bytes; i += 8) mine.segment().set(ValueLayout.JAVA_LONG, i, call * 1000L + rank * 10L + i / 8);
                board.exchange(7, call, rank, mine.segment(), all.segment(), bytes, progress);
                for (int r = 0; r < size; r++) {
                    for (int i = 0; i < bytes; i += 8) {
                        long got = all.segment().get(ValueLayout.JAVA_LONG, (long) r * bytes + i);
                        if (got != call * 1000L + r * 10L + i / 8) fail("call " + call + ": rank " + r + "'s record word " + i / 8 + " is " + got);
                    }
                }
            }
            for (int round = 0; round < 3; round++) {
                if (rank == (round % size)) Thread.sleep(200);
                long before = System.currentTimeMillis();
                stamp.segment().set(ValueLayout.JAVA_LONG, 0, rank == (round % size) ? before : 0);
                assertTrue(board.barrier(true, progress), "no rank failed");
                long after = System.currentTimeMillis();
                comm.allReduce(stamp, latest, 1, DataType.LONG, ReduceOp.MAX);
                assertTrue(after >= latest.segment().get(ValueLayout.JAVA_LONG, 0),
                        "round " + round + ": rank " + rank + " left the barrier before rank " + (round % size) + " arrived");
            }
            // a rank that fails a meeting: every rank learns it there, and only there
            for (int round = 0; round < 2 * size; round++) {
                boolean everyOk = board.barrier(round >= size || rank != round, progress);
                assertEquals(round >= size, everyOk, "round " + round + (round < size ? ": rank " + round + " failed" : ": no rank failed"));
            }
        }
    }

    /**
     * The planner's agreement on real ranks (over the node's board where every rank is on this node,
     * else the mover's allReduce): every rank gets the word-wise MIN or MAX of every rank's words, call
     * after call, and a rank that arrives late holds the others.
     */
    @Test
    void g_agreementsFoldEveryRanksWords() throws Exception {
        Group g = ((PlannedTransport) ((CheckedCommunicator) comm).transport()).group();
        for (int call = 1; call <= 3000; call++) {
            int words = 1 + call % Group.AGREEMENT_WORDS;
            long[] mine = new long[words];
            for (int i = 0; i < words; i++) mine[i] = (call * 31L + i) * (rank % 2 == 0 ? 1 : -1) + rank * 7L;
            if (call == 1500 && rank == size - 1) Thread.sleep(200);
            ReduceOp op = call % 3 == 0 ? ReduceOp.MAX : ReduceOp.MIN;
            long[] got = g.agree(mine, op);
            for (int i = 0; i < words; i++) {
                long want = op == ReduceOp.MAX ? Long.MIN_VALUE : Long.MAX_VALUE;
                for (int r = 0; r < size; r++) {
                    long v = (call * 31L + i) * (r % 2 == 0 ? 1 : -1) + r * 7L;
                    want = op == ReduceOp.MAX ? Math.max(want, v) : Math.min(want, v);
                }
                if (got[i] != want) fail("call " + call + " (" + op + "): word " + i + " is " + got[i] + ", not " + want);
            }
        }
        assertTrue(g.everyRank(true), "every rank said yes");
        assertEquals(0, g.everyRank(rank != 0, true) & 1, "rank 0 said no to the first question");
        assertEquals(2, g.everyRank(rank != 0, true) & 2, "every rank said yes to the second");
    }

    /**
     * Exchanges of different kinds at one step of the board (ranks whose calls the planner put on
     * algorithms that meet differently): every rank throws there, with every rank's kind, key and
     * size; through the planner's agreement, a call's vote on one rank against an algorithm's own
     * agreement on the others is the same {@link CollectiveMismatchException} on every rank, naming
     * both. The board and the group serve the next exchange.
     */
    @Test
    void g_exchangesOfDifferentKindsFailOnEveryRank() throws Exception {
        Assumptions.assumeTrue(size > 1, "needs two ranks");
        PlannedTransport p = (PlannedTransport) ((CheckedCommunicator) comm).transport();
        Assumptions.assumeTrue(TestWorld.allAgree(comm, p.planner().topology().oneNode()), "ranks on several nodes: agreements are allReduces of the MPI");
        Runnable progress = p.mover()::progress;
        try (NodeBoard board = NodeBoard.open(p.mover(), 16, progress); HostBuffer mine = HostBuffer.allocate(16);
             HostBuffer all = HostBuffer.allocate(16L * size)) {
            assertNotNull(board, "every rank mapped the board in /dev/shm");
            NodeBoard.Diverged d = assertThrows(NodeBoard.Diverged.class,
                    () -> board.exchange(rank == 0 ? 1 : 2, 100 + rank, 40 - rank, mine.segment(), all.segment(), 16, progress));
            for (int r = 0; r < size; r++) {
                assertEquals(r == 0 ? 1 : 2, d.kind(r), "rank " + r + "'s kind");
                assertEquals(100 + r, d.key(r), "rank " + r + "'s key");
                assertEquals(40 - r, d.size(r), "rank " + r + "'s size");
            }
            mine.segment().set(ValueLayout.JAVA_LONG, 0, rank * 3L);
            board.exchange(2, 0, 0, mine.segment(), all.segment(), 16, progress);
            for (int r = 0; r < size; r++) assertEquals(r * 3L, all.segment().get(ValueLayout.JAVA_LONG, 16L * r), "the next exchange: rank " + r);
        }
        try (Communicator dup = comm.duplicate()) {
            Group g = ((PlannedTransport) ((CheckedCommunicator) dup).transport()).group();
            dev.ferry.collectives.Shape call = new dev.ferry.collectives.Shape(dev.ferry.collectives.Collective.ALL_REDUCE, DataType.LONG, ReduceOp.SUM, 40, -1);
            CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class, () -> {
                if (rank == 0) new dev.ferry.collectives.SameCall(g).vote(call, true, true, () -> "allReduce on a voting algorithm");
                else g.agree(new long[] {1, 2}, ReduceOp.MIN);
            });
            assertEquals("allReduce (the ranks' calls planned onto algorithms that meet differently): the ranks' calls disagree: rank 0 called "
                    + "allReduce(40 bytes); rank" + (size > 2 ? "s 1," + (size > 3 ? "2,3" : "2") : " 1") + " was inside an algorithm's own agreement"
                    + " (another collective) (each rank must call the same collective with the same root and amount of data)", e.getMessage());
            assertEquals(size, g.agree(new long[] {rank + 1L}, ReduceOp.MAX)[0], "the next agreement");
        }
    }

    /** Device memory, or host memory where the backend stages it as device memory (its test mode). */
    private Mem foldable() {
        PlannedTransport p = (PlannedTransport) ((CheckedCommunicator) comm).transport();
        boolean gpu = TestWorld.allAgree(comm, Cuda.isAvailable() && comm.supportsDeviceBuffers());
        boolean host = TestWorld.allAgree(comm, p.mover().stagesHostBuffers());
        Assumptions.assumeTrue(gpu || host, "needs device memory on every rank, or a backend that stages host buffers (the staged test mode)");
        return gpu ? Mem.DEVICE : Mem.PAGEABLE;
    }

    /**
     * Large reduce and allReduce on ranks of several nodes, one node holding several of them (on one
     * machine: {@code ferry.staged.test.nodeGroup}), run node by node: counted on every rank, results
     * equal to the host's rank-order fold (inputs exact in any order).
     */
    @Test
    void h_reductionsAcrossNodesRunNodeByNode() {
        PlannedTransport p = (PlannedTransport) ((CheckedCommunicator) comm).transport();
        var topo = p.planner().topology();
        Assumptions.assumeTrue(topo.nodes() > 1 && topo.nodes() < size, "the " + size + " ranks are on " + topo.nodes() + " node(s): this needs several "
                + "nodes, one of several ranks (on one machine: -Dferry.staged.test.nodeGroup=2 with 3 or more ranks)");
        Mem m = foldable();
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "allReduce:hierarchical,reduce:hierarchical");
            long count = (5L << 20) / 8 + 1001; // several chunks of the chain
            long across0 = CollectivesDiagnostics.counter("hierarchicalReductions");
            List<String> wrong = new ArrayList<>();
            int calls = 0;
            Object[][] cases = {{DataType.LONG, ReduceOp.SUM}, {DataType.DOUBLE, ReduceOp.SUM}, {DataType.FLOAT, ReduceOp.MAX}};
            for (Object[] c : cases) {
                DataType t = (DataType) c[0];
                ReduceOp op = (ReduceOp) c[1];
                byte[] expected = Data.orderFreeInput(t, op, 0, count);
                for (int r = 1; r < size; r++) {
                    dev.ferry.spi.HostReduction.apply(t, op, MemorySegment.ofArray(expected), MemorySegment.ofArray(Data.orderFreeInput(t, op, r, count)), count);
                }
                Buffer send = alloc(m, t.bytes(count)), recv = alloc(m, t.bytes(count));
                Mem.write(send, Data.orderFreeInput(t, op, rank, count));
                Mem.poison(recv);
                d.allReduce(send, recv, count, t, op);
                calls++;
                if (!Arrays.equals(expected, Mem.read(recv))) wrong.add("allReduce " + op + " of " + t);
                for (int root = 0; root < size; root++) {
                    Mem.poison(recv);
                    d.reduce(send, rank == root ? recv : null, count, t, op, root);
                    calls++;
                    if (rank == root && !Arrays.equals(expected, Mem.read(recv))) wrong.add("reduce " + op + " of " + t + " to root " + root);
                }
            }
            assertTrue(wrong.isEmpty(), "wrong results on rank " + rank + ": " + wrong);
            assertEquals(calls, CollectivesDiagnostics.counter("hierarchicalReductions") - across0, "every call ran node by node");
        }
    }

    /**
     * Small reductions gathered raw through host memory and folded where the data is (on the GPU; on
     * the host in the test mode): scan, exscan, allReduce, reduce to every root and reduceScatterBlock,
     * equal to the host's rank-order fold, every call counted.
     */
    @Test
    void i_smallReductionsGatheredThroughHostMemory() {
        Assumptions.assumeTrue(size > 1, "needs two ranks");
        Mem m = foldable();
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "scan:host-gathered,exscan:host-gathered,allReduce:host-gathered,reduce:host-gathered,reduceScatter:host-gathered");
            long count = 5;
            long gathered0 = CollectivesDiagnostics.counter("gatheredReductions");
            List<String> wrong = new ArrayList<>();
            int calls = 0;
            Object[][] cases = {{DataType.LONG, ReduceOp.SUM}, {DataType.DOUBLE, ReduceOp.SUM}, {DataType.FLOAT, ReduceOp.MAX}, {DataType.INT, ReduceOp.BXOR}};
            for (Object[] c : cases) {
                DataType t = (DataType) c[0];
                ReduceOp op = (ReduceOp) c[1];
                byte[][] prefix = new byte[size][];
                prefix[0] = Data.orderFreeInput(t, op, 0, count);
                for (int r = 1; r < size; r++) {
                    prefix[r] = prefix[r - 1].clone();
                    dev.ferry.spi.HostReduction.apply(t, op, MemorySegment.ofArray(prefix[r]), MemorySegment.ofArray(Data.orderFreeInput(t, op, r, count)), count);
                }
                Buffer send = alloc(m, t.bytes(count)), recv = alloc(m, t.bytes(count));
                Mem.write(send, Data.orderFreeInput(t, op, rank, count));
                d.scan(send, recv, count, t, op);
                calls++;
                if (!Arrays.equals(prefix[rank], Mem.read(recv))) wrong.add("scan " + op + " of " + t);
                d.exscan(send, rank == 0 ? null : recv, count, t, op);
                calls++;
                if (rank > 0 && !Arrays.equals(prefix[rank - 1], Mem.read(recv))) wrong.add("exscan " + op + " of " + t);
                d.allReduce(send, recv, count, t, op);
                calls++;
                if (!Arrays.equals(prefix[size - 1], Mem.read(recv))) wrong.add("allReduce " + op + " of " + t);
                for (int root = 0; root < size; root++) {
                    Mem.poison(recv);
                    d.reduce(send, rank == root ? recv : null, count, t, op, root);
                    calls++;
                    if (rank == root && !Arrays.equals(prefix[size - 1], Mem.read(recv))) wrong.add("reduce " + op + " of " + t + " to root " + root);
                }
                byte[] mine = Data.orderFreeInput(t, op, rank, count * size);
                byte[] expected = Arrays.copyOfRange(Data.orderFreeInput(t, op, 0, count * size), (int) t.bytes(count * rank), (int) t.bytes(count * (rank + 1)));
                for (int r = 1; r < size; r++) {
                    byte[] theirs = Arrays.copyOfRange(Data.orderFreeInput(t, op, r, count * size), (int) t.bytes(count * rank), (int) t.bytes(count * (rank + 1)));
                    dev.ferry.spi.HostReduction.apply(t, op, MemorySegment.ofArray(expected), MemorySegment.ofArray(theirs), count);
                }
                Buffer all = alloc(m, t.bytes(count * size));
                Mem.write(all, mine);
                d.reduceScatterBlock(all, recv, count, t, op);
                calls++;
                if (!Arrays.equals(expected, Mem.read(recv))) wrong.add("reduceScatterBlock " + op + " of " + t);
            }
            assertTrue(wrong.isEmpty(), "wrong results on rank " + rank + ": " + wrong);
            assertEquals(calls, CollectivesDiagnostics.counter("gatheredReductions") - gathered0, "every call was gathered and folded where the data is");
        }
    }

    /**
     * Ranks that disagree on a call of an algorithm that votes (another count, another root) learn
     * it in the vote's round, before any data moves: the same {@link CollectiveMismatchException}
     * on every rank, naming the calls; the communicator then serves the next call.
     */
    @Test
    void j_callsThatDisagreeFailInTheVote() {
        Assumptions.assumeTrue(size > 1, "needs two ranks");
        Mem m = foldable();
        try (Communicator d = comm.duplicate()) {
            CollectivesDiagnostics.force(d, "allReduce:host-gathered,reduce:host-gathered");
            long count = rank == 0 ? 5 : 4;
            Buffer send = alloc(m, 8 * 5), recv = alloc(m, 8 * 5);
            CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class, () -> d.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM));
            assertTrue(e.getMessage().startsWith("allReduce on host-gathered: the ranks' calls disagree: rank 0 called allReduce(40 bytes); rank")
                    && e.getMessage().contains("called allReduce(32 bytes)"), e.getMessage());
            int root = rank == 0 ? 0 : 1;
            e = assertThrows(CollectiveMismatchException.class, () -> d.reduce(send, rank == root ? recv : null, 4, DataType.LONG, ReduceOp.SUM, root));
            assertTrue(e.getMessage().contains("rank 0 called reduce(root 0, 32 bytes)") && e.getMessage().contains("called reduce(root 1, 32 bytes)"),
                    e.getMessage());
            long gathered0 = CollectivesDiagnostics.counter("gatheredReductions");
            allReduceRankSums(d, send, recv, 5);
            assertEquals(1, CollectivesDiagnostics.counter("gatheredReductions") - gathered0, "the next call ran on the algorithm");
        }
    }

    /**
     * Ranks whose calls disagree on the node's CUDA IPC collectives, planned as no setting is given:
     * another count (both sides on the short path, and one on either side of its crossover), another
     * root, another collective's count. The records the ranks exchange before any data moves show it:
     * every rank throws the same {@link CollectiveMismatchException}, naming every rank's call, and
     * the communicator then serves the next call. Where {@code nccl} serves the communicator (one GPU
     * per rank), a count mismatch forced onto it fails in its vote the same way.
     */
    @Test
    void k_callsThatDisagreeOnTheNodesIpcCollectivesFail() {
        assumeIpc(comm);
        int other = size - 1;
        try (Communicator d = comm.duplicate()) {
            var planner = CollectivesDiagnostics.planner(d);
            int large = 200_000;
            Buffer send = alloc(Mem.DEVICE, 8L * large * size), recv = alloc(Mem.DEVICE, 8L * large * size);
            List<String> messages = new ArrayList<>();
            List<String> cases = new ArrayList<>();
            // {collective, count on rank 0, count elsewhere, root on rank 0, root elsewhere}
            long[][] mismatches = {{0, 5, 4, -1, -1}, {0, 4, large, -1, -1}, {1, 5, 4, -1, -1}, {2, 16, 16, 0, other}, {2, 16, 8, 0, 0}};
            for (long[] c : mismatches) {
                long count = rank == 0 ? c[1] : c[2];
                int root = (int) (rank == 0 ? c[3] : c[4]);
                dev.ferry.collectives.Collective op = c[0] == 0 ? dev.ferry.collectives.Collective.ALL_REDUCE
                        : c[0] == 1 ? dev.ferry.collectives.Collective.ALL_GATHER : dev.ferry.collectives.Collective.BROADCAST;
                String planned = planner.plan(new dev.ferry.collectives.Shape(op, DataType.LONG, op == dev.ferry.collectives.Collective.ALL_REDUCE ? ReduceOp.SUM : null,
                        8 * count, root))[0].name();
                String label = op.label() + "(" + (root >= 0 ? "root " + root + ", " : "") + 8 * count + " bytes)";
                if (!TestWorld.allAgree(d, planned.startsWith("ipc"))) {
                    if (rank == 0) System.out.println("[ferry-algorithms] not an IPC algorithm here, left out: " + label + " planned on " + planned);
                    continue;
                }
                CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class, () -> {
                    switch (op) {
                        case ALL_REDUCE -> d.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM);
                        case ALL_GATHER -> d.allGather(send, recv, count, DataType.LONG);
                        default -> d.broadcast(send, count, DataType.LONG, root);
                    }
                }, label + " planned on " + planned);
                assertTrue(e.getMessage().startsWith(op.label() + " on the node's CUDA IPC collectives: the ranks' calls disagree: rank 0 called ")
                        && e.getMessage().contains("called " + label), e.getMessage());
                messages.add(e.getMessage());
                cases.add(label + " on " + planned);
            }
            dev.ferry.collectives.Algorithm nccl = planner.byName("nccl");
            boolean ncclServes = nccl != null && nccl.unfit(new dev.ferry.collectives.Shape(dev.ferry.collectives.Collective.ALL_REDUCE, DataType.LONG,
                    ReduceOp.SUM, 40, -1), planner.topology()) == null;
            if (TestWorld.allAgree(d, ncclServes)) { // not where ranks share a GPU
                CollectivesDiagnostics.force(d, "allReduce:nccl");
                long count = rank == 0 ? 5 : 4;
                CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class, () -> d.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM));
                assertTrue(e.getMessage().startsWith("allReduce on nccl: the ranks' calls disagree: rank 0 called allReduce(40 bytes)"), e.getMessage());
                messages.add(e.getMessage());
                cases.add("allReduce on nccl (forced)");
                allReduceRankSums(d, send, recv, 5);
                assertEquals("nccl", CollectivesDiagnostics.lastAlgorithm());
                CollectivesDiagnostics.force(d, null);
            }
            if (rank == 0) System.out.println("[ferry-algorithms] mismatches thrown: " + cases);
            assertTrue(!cases.isEmpty(), "at least the short allReduce is planned on an IPC algorithm here");
            // every rank threw the same messages
            HostBuffer mineH = closeAfter(HostBuffer.allocate(8)), allH = closeAfter(HostBuffer.allocate(8L * size));
            mineH.segment().set(ValueLayout.JAVA_LONG, 0, messages.hashCode());
            d.allGather(mineH, allH, 1, DataType.LONG);
            for (int r = 0; r < size; r++) {
                assertEquals(messages.hashCode(), allH.segment().getAtIndex(ValueLayout.JAVA_LONG, r), "rank " + r + " threw the same messages as rank " + rank + ": " + messages);
            }
            allReduceRankSums(d, send, recv, 5);
            allReduceRankSums(d, send, recv, large);
            assertTrue(CollectivesDiagnostics.lastAlgorithm().startsWith("ipc"), CollectivesDiagnostics.lastAlgorithm());
        }
        callsOnEitherSideOfACrossoverToAVotingAlgorithmFail();
        assertTrue(TestWorld.allAgree(comm, true));
    }

    /**
     * k_'s crossover onto an algorithm of another kind: a cost table puts allReduce on {@code ipc-short}
     * up to 16 KiB and on an algorithm that votes from 64 KiB; rank 0 calls 4 longs, the others
     * 200,000. The short path's records and the vote meet on the group's board, where every rank
     * throws the same {@link CollectiveMismatchException} naming both calls.
     */
    private void callsOnEitherSideOfACrossoverToAVotingAlgorithmFail() {
        int large = 200_000;
        try (Communicator d = comm.duplicate()) {
            var planner = CollectivesDiagnostics.planner(d);
            var topo = planner.topology();
            dev.ferry.collectives.Shape big = new dev.ferry.collectives.Shape(dev.ferry.collectives.Collective.ALL_REDUCE, DataType.LONG, ReduceOp.SUM, 8L * large, -1);
            String voting = null;
            for (dev.ferry.collectives.Algorithm a : planner.algorithms()) {
                if (a.agreement() == dev.ferry.collectives.Algorithm.Agreement.VOTE && a.carries(big.collective()) && a.unfit(big, topo) == null
                        && (voting == null || a.name().equals("host-gathered"))) {
                    voting = a.name();
                }
            }
            String v = voting;
            if (!TestWorld.allAgree(d, v != null && planner.byName("ipc-short").unfit(new dev.ferry.collectives.Shape(big.collective(), DataType.LONG,
                    ReduceOp.SUM, 32, -1), topo) == null)) {
                if (rank == 0) System.out.println("[ferry-algorithms] no voting algorithm for allReduce of " + 8L * large + " bytes beside ipc-short here: crossover case left out");
                return;
            }
            String setting = topo.gpu() + "\t" + topo.placement().label() + "\t" + size + "\t" + d.backend() + "\tallReduce\t";
            CollectivesDiagnostics.useTable(d, dev.ferry.collectives.CostTable.of("crossover", List.of(setting + "ipc-short\t8\t0.01",
                    setting + "ipc-short\t16384\t0.01", setting + v + "\t65536\t0.5", setting + v + "\t16777216\t0.5")));
            assertEquals("ipc-short", planner.plan(new dev.ferry.collectives.Shape(big.collective(), DataType.LONG, ReduceOp.SUM, 32, -1))[0].name());
            assertEquals(v, planner.plan(big)[0].name());
            Buffer send = alloc(Mem.DEVICE, 8L * large), recv = alloc(Mem.DEVICE, 8L * large);
            long count = rank == 0 ? 4 : large;
            CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class, () -> d.allReduce(send, recv, count, DataType.LONG, ReduceOp.SUM),
                    "ipc-short on rank 0, " + v + " elsewhere");
            assertTrue(e.getMessage().startsWith("allReduce (the ranks' calls planned onto algorithms that meet differently): the ranks' calls disagree:"
                    + " rank 0 called allReduce(32 bytes); rank") && e.getMessage().contains(" called allReduce(" + 8L * large + " bytes)"), e.getMessage());
            HostBuffer mineH = closeAfter(HostBuffer.allocate(8)), allH = closeAfter(HostBuffer.allocate(8L * size));
            mineH.segment().set(ValueLayout.JAVA_LONG, 0, e.getMessage().hashCode());
            d.allGather(mineH, allH, 1, DataType.LONG);
            for (int r = 0; r < size; r++) {
                assertEquals(e.getMessage().hashCode(), allH.segment().getAtIndex(ValueLayout.JAVA_LONG, r), "rank " + r + " threw the same message as rank " + rank + ": " + e.getMessage());
            }
            allReduceRankSums(d, send, recv, 4);
            assertEquals("ipc-short", CollectivesDiagnostics.lastAlgorithm());
            allReduceRankSums(d, send, recv, large);
            assertEquals(v, CollectivesDiagnostics.lastAlgorithm());
            if (rank == 0) System.out.println("[ferry-algorithms] crossover mismatch thrown: ipc-short against " + v);
        }
    }
}
