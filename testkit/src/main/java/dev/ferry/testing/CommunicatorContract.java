// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.BufferFreedException;
import dev.ferry.BufferOverlapException;
import dev.ferry.BufferReadOnlyException;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidTagException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.TruncationException;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite every backend runs, on real MPI ranks (see {@link RankRunner} and
 * {@link MpiJob}): each operation, each datatype and reduce operator, odd sizes (0, 1, 7 bytes,
 * 1 MiB + 3), every rank as root, many outstanding non-blocking requests, and the bad-input
 * cases; data tests run for pageable, pinned and device memory where available. Receive buffers
 * are poisoned and every byte is checked, including the bytes past the message.
 *
 * <p>A backend's test class extends this and adds its own edge cases. Methods run in name order
 * on every rank, so collectives meet; each test gets its own duplicate of the world communicator.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public abstract class CommunicatorContract extends RankContract {
    /** Byte sizes of the data tests: empty, one, odd, and just over a mebibyte. */
    protected static final int[] SIZES = {0, 1, 7, (1 << 20) + 3};


    /** True when the suite's communicator has every rank of the job (a suite on split communicators says no). */
    protected boolean spansTheJob() {
        return true;
    }


    /** Closes a buffer of any kind now (not after the test). */
    protected static void close(Buffer b) {
        if (b instanceof HostBuffer h) h.close();
        else ((dev.ferry.DeviceBuffer) b).close();
    }

    /** A buffer of kind {@code m} holding {@code data}. */
    protected Buffer filled(Mem m, byte[] data) {
        Buffer b = alloc(m, data.length);
        Mem.write(b, data);
        return b;
    }

    /** A poisoned buffer of kind {@code m}. */
    protected Buffer poisoned(Mem m, long bytes) {
        Buffer b = alloc(m, bytes);
        Mem.poison(b);
        return b;
    }

    /** Asserts that {@code got} starts with {@code expected} and is poison after it. */
    protected static void assertReceived(byte[] expected, byte[] got, String what) {
        assertArrayEquals(expected, Arrays.copyOf(got, expected.length), what + ": received bytes differ");
        for (int i = expected.length; i < got.length; i++) {
            if (got[i] != Mem.POISON) {
                throw new AssertionError(what + ": byte " + i + " past the message was overwritten (0x" + Integer.toHexString(got[i] & 0xFF) + ")");
            }
        }
    }

    /** The communicator still works: an allReduce of ranks gives the right sum. */
    protected void assertUsable() {
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.LONG, 0, rank + 1);
            comm.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals(size * (size + 1) / 2.0, Data.get(out.segment(), DataType.LONG, 0), "allReduce after a rejected call");
        }
    }

    protected static byte[] cat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    // ---- basics ------------------------------------------------------------------------------

    @Test
    void a_rankAndSize() {
        assertTrue(rank >= 0 && rank < size, "rank " + rank + " of " + size);
        String launched = System.getenv().getOrDefault("OMPI_COMM_WORLD_SIZE", System.getenv("PMI_SIZE"));
        if (launched != null && spansTheJob()) {
            assertEquals(Integer.parseInt(launched), size, "size equals the launcher's");
        }
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer all = HostBuffer.allocate(4L * size)) {
            Data.put(in.segment(), DataType.INT, 0, rank);
            comm.allGather(in, all, 1, DataType.INT);
            for (int r = 0; r < size; r++) assertEquals(r, Data.get(all.segment(), DataType.INT, r));
        }
        assertTrue(comm.maxTag() >= 32767, "MPI guarantees tags up to 32767");
    }

    // ---- point to point ------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_blockingPairs(Mem m) {
        m.assume(comm);
        int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (peer >= size) return; // odd size: last rank sits out
        for (int n : SIZES) {
            byte[] mine = Data.bytes(n, rank, n);
            byte[] theirs = Data.bytes(n, peer, n);
            Buffer send = filled(m, mine);
            Buffer recv = poisoned(m, n + 16);
            Status s;
            if (rank % 2 == 0) {
                comm.send(send, n, DataType.BYTE, peer, 11);
                s = comm.recv(recv, n + 16, DataType.BYTE, peer, 12);
            } else {
                s = comm.recv(recv, n + 16, DataType.BYTE, peer, 11);
                comm.send(send, n, DataType.BYTE, peer, 12);
            }
            assertEquals(peer, s.source());
            assertEquals(rank % 2 == 0 ? 12 : 11, s.tag());
            assertEquals(n, s.byteCount());
            assertReceived(theirs, Mem.read(recv), "pair exchange of " + n + " bytes");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_sendRecvRing(Mem m) {
        m.assume(comm);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (int n : SIZES) {
            Buffer send = filled(m, Data.bytes(n + 1, rank, n));
            Buffer recv = poisoned(m, n + 8);
            Status s = comm.sendRecv(send, n, DataType.BYTE, next, 3, recv, n + 8, DataType.BYTE, prev, 3);
            assertEquals(prev, s.source());
            assertEquals(n, s.byteCount());
            assertReceived(Data.bytes(n + 1, prev, n), Mem.read(recv), "ring of " + n + " bytes");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_everyDatatype(Mem m) {
        m.assume(comm);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (DataType t : Data.CLASSIC_TYPES) {
            for (int count : new int[] {1, 7, 1000}) {
                HostBuffer host = Data.reductionInput(t, ReduceOp.SUM, rank, count);
                closeAfter(host);
                Buffer send = filled(m, Mem.read(host));
                Buffer recv = poisoned(m, t.bytes(count));
                Status s = comm.sendRecv(send, count, t, next, 4, recv, count, t, prev, 4);
                assertEquals(count, s.count(t));
                MemorySegment got = MemorySegment.ofArray(Mem.read(recv));
                for (int i = 0; i < count; i++) {
                    assertEquals(Data.value(t, ReduceOp.SUM, prev, i) & (t == DataType.BYTE ? 0xFF : -1L), (long) Data.get(got, t, i),
                            t + " element " + i);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_anySourceAnyTag(Mem m) {
        m.assume(comm);
        if (rank == 0) {
            boolean[] seen = new boolean[size];
            Buffer recv = alloc(m, 64);
            for (int k = 1; k < size; k++) {
                Mem.poison(recv);
                Status s = comm.recv(recv, 64, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
                assertEquals(100 + s.source(), s.tag(), "tag identifies the sender");
                assertEquals(s.source() + 1, s.byteCount());
                assertFalse(seen[s.source()], "one message per sender");
                seen[s.source()] = true;
                assertReceived(Data.bytes(5, s.source(), s.source() + 1), Mem.read(recv), "message of rank " + s.source());
            }
        } else {
            comm.send(filled(m, Data.bytes(5, rank, rank + 1)), rank + 1, DataType.BYTE, 0, 100 + rank);
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_truncationIsAnExceptionAndTheCommunicatorSurvives(Mem m) {
        m.assume(comm);
        int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (peer < size) {
            for (int n : new int[] {16, 100_003}) {
                int count = n / 2;
                if (rank % 2 == 0) {
                    comm.send(filled(m, Data.bytes(6, rank, n)), n, DataType.BYTE, peer, 21);
                } else {
                    Buffer recv = poisoned(m, n);
                    assertThrows(TruncationException.class, () -> comm.recv(recv, count, DataType.BYTE, peer, 21));
                    // the first count bytes are the message's; the rest of the buffer is untouched
                    byte[] got = Mem.read(recv);
                    assertArrayEquals(Arrays.copyOf(Data.bytes(6, peer, n), count), Arrays.copyOf(got, count),
                            "truncated receive of " + n + " bytes into " + count + ": the delivered prefix");
                    for (int i = count; i < n; i++) {
                        if (got[i] != Mem.POISON) {
                            throw new AssertionError("truncated receive of " + n + " bytes into " + count + ": byte " + i + " past the receive count was written");
                        }
                    }
                }
            }
            // the next message on the same pair arrives intact
            if (rank % 2 == 0) {
                comm.send(filled(m, Data.bytes(8, rank, 24)), 24, DataType.BYTE, peer, 21);
            } else {
                Buffer recv = poisoned(m, 32);
                assertEquals(24, comm.recv(recv, 32, DataType.BYTE, peer, 21).byteCount());
                assertReceived(Data.bytes(8, peer, 24), Mem.read(recv), "the message after a truncated one");
            }
        }
        assertUsable();
    }

    @Test
    void p2p_datatypeMismatchBetweenSenderAndReceiver() {
        int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (peer < size) {
            if (rank % 2 == 0) {
                comm.send(filled(Mem.PAGEABLE, Data.bytes(7, rank, 10)), 10, DataType.BYTE, peer, 22);
            } else {
                Buffer recv = poisoned(Mem.PAGEABLE, 16);
                DataTypeMismatchException e = assertThrows(DataTypeMismatchException.class, () -> comm.recv(recv, 4, DataType.INT, peer, 22));
                assertTrue(e.getMessage().contains("10 bytes"), e.getMessage());
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_manyOutstandingNonBlocking(Mem m) {
        m.assume(comm);
        final int perPeer = 16, bytes = 1027;
        List<Request> recvs = new ArrayList<>();
        List<Buffer> recvBufs = new ArrayList<>();
        List<int[]> from = new ArrayList<>();
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            for (int k = 0; k < perPeer; k++) {
                Buffer b = poisoned(m, bytes + 5);
                recvBufs.add(b);
                from.add(new int[] {p, k});
                recvs.add(comm.irecv(b, bytes + 5, DataType.BYTE, p, k));
            }
        }
        List<Request> sends = new ArrayList<>();
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            for (int k = 0; k < perPeer; k++) {
                sends.add(comm.isend(filled(m, Data.bytes(1000L * k + p, rank, bytes)), bytes, DataType.BYTE, p, k));
            }
        }
        // complete half the receives by polling test(), the rest with waitAll
        for (int i = 0; i < recvs.size(); i += 2) {
            Optional<Status> st;
            long deadline = System.nanoTime() + 60_000_000_000L;
            while ((st = recvs.get(i).test()).isEmpty()) {
                assertTrue(System.nanoTime() < deadline, "test() never completed");
                Thread.onSpinWait();
            }
            assertEquals(bytes, st.get().byteCount());
        }
        List<Status> statuses = Request.waitAll(recvs);
        Request.waitAll(sends);
        for (int i = 0; i < recvs.size(); i++) {
            int p = from.get(i)[0], k = from.get(i)[1];
            assertEquals(p, statuses.get(i).source());
            assertEquals(k, statuses.get(i).tag());
            assertReceived(Data.bytes(1000L * k + rank, p, bytes), Mem.read(recvBufs.get(i)), "message " + k + " from " + p);
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void p2p_largeNonBlockingPair(Mem m) {
        m.assume(comm);
        int n = SIZES[SIZES.length - 1];
        int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (peer >= size) return;
        Buffer recv = poisoned(m, n);
        Request r = comm.irecv(recv, n, DataType.BYTE, peer, 30);
        Request s = comm.isend(filled(m, Data.bytes(9, rank, n)), n, DataType.BYTE, peer, 30);
        List<Status> st = Request.waitAll(r, s);
        assertEquals(n, st.get(0).byteCount());
        assertReceived(Data.bytes(9, peer, n), Mem.read(recv), "large non-blocking message");
    }

    // ---- collectives ---------------------------------------------------------------------------

    @Test
    void c_barrier() {
        for (int i = 0; i < 3; i++) comm.barrier();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_broadcastFromEveryRoot(Mem m) {
        m.assume(comm);
        for (int root = 0; root < size; root++) {
            for (int n : SIZES) {
                byte[] data = Data.bytes(n + 31L * root, root, n);
                Buffer b = rank == root ? filled(m, data) : poisoned(m, n + 4);
                comm.broadcast(b, n, DataType.BYTE, root);
                assertReceived(data, Mem.read(b), "broadcast of " + n + " bytes from root " + root);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_scatterFromEveryRoot(Mem m) {
        m.assume(comm);
        for (int root = 0; root < size; root++) {
            for (int n : new int[] {0, 1, 7, 262147}) {
                Buffer send = null;
                if (rank == root) {
                    byte[][] parts = new byte[size][];
                    for (int r = 0; r < size; r++) parts[r] = Data.bytes(n + root, r, n);
                    send = filled(m, cat(parts));
                }
                Buffer recv = poisoned(m, n + 3);
                comm.scatter(send, recv, n, DataType.BYTE, root);
                assertReceived(Data.bytes(n + root, rank, n), Mem.read(recv), "scatter of " + n + " bytes per rank from root " + root);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_gatherToEveryRoot(Mem m) {
        m.assume(comm);
        for (int root = 0; root < size; root++) {
            for (int n : new int[] {0, 1, 7, 262147}) {
                Buffer recv = rank == root ? poisoned(m, (long) n * size + 5) : null;
                comm.gather(filled(m, Data.bytes(n * 3L + root, rank, n)), recv, n, DataType.BYTE, root);
                if (rank == root) {
                    byte[][] parts = new byte[size][];
                    for (int r = 0; r < size; r++) parts[r] = Data.bytes(n * 3L + root, r, n);
                    assertReceived(cat(parts), Mem.read(recv), "gather of " + n + " bytes per rank to root " + root);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_allGather(Mem m) {
        m.assume(comm);
        for (int n : new int[] {0, 1, 7, 262147}) {
            Buffer recv = poisoned(m, (long) n * size + 2);
            comm.allGather(filled(m, Data.bytes(n * 5L, rank, n)), recv, n, DataType.BYTE);
            byte[][] parts = new byte[size][];
            for (int r = 0; r < size; r++) parts[r] = Data.bytes(n * 5L, r, n);
            assertReceived(cat(parts), Mem.read(recv), "allGather of " + n + " bytes per rank");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_allToAll(Mem m) {
        m.assume(comm);
        for (int n : new int[] {0, 1, 7, 65539}) {
            byte[][] out = new byte[size][];
            for (int r = 0; r < size; r++) out[r] = Data.bytes(n * 7L + r, rank, n); // block for rank r
            Buffer recv = poisoned(m, (long) n * size + 1);
            comm.allToAll(filled(m, cat(out)), recv, n, DataType.BYTE);
            byte[][] in = new byte[size][];
            for (int r = 0; r < size; r++) in[r] = Data.bytes(n * 7L + rank, r, n); // rank r's block for me
            assertReceived(cat(in), Mem.read(recv), "allToAll of " + n + " bytes per pair");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_reduceEveryTypeAndOperator(Mem m) {
        m.assume(comm);
        for (DataType t : Data.CLASSIC_TYPES) {
            for (ReduceOp op : Data.CLASSIC_OPS) {
                int root = (t.ordinal() + op.ordinal() + 1) % size; // roots other than 0 too
                for (int count : new int[] {1, 7, 1001}) {
                    HostBuffer in = Data.reductionInput(t, op, rank, count);
                    closeAfter(in);
                    Buffer recv = rank == root ? poisoned(m, t.bytes(count)) : null;
                    comm.reduce(filled(m, Mem.read(in)), recv, count, t, op, root);
                    if (rank == root) {
                        MemorySegment got = MemorySegment.ofArray(Mem.read(recv));
                        for (int i = 0; i < count; i++) {
                            assertEquals(Data.expected(t, op, size, i), Data.get(got, t, i), "reduce " + op + " of " + t + " element " + i + " at root " + root);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_allReduceEveryTypeAndOperator(Mem m) {
        m.assume(comm);
        for (DataType t : Data.CLASSIC_TYPES) {
            for (ReduceOp op : Data.CLASSIC_OPS) {
                for (int count : new int[] {1, 7, 1001, t == DataType.INT && op == ReduceOp.SUM ? 262147 : 2}) {
                    HostBuffer in = Data.reductionInput(t, op, rank, count);
                    closeAfter(in);
                    Buffer recv = poisoned(m, t.bytes(count) + 4);
                    comm.allReduce(filled(m, Mem.read(in)), recv, count, t, op);
                    byte[] raw = Mem.read(recv);
                    MemorySegment got = MemorySegment.ofArray(raw);
                    for (int i = 0; i < count; i++) {
                        assertEquals(Data.expected(t, op, size, i), Data.get(got, t, i), "allReduce " + op + " of " + t + " element " + i);
                    }
                    for (long i = t.bytes(count); i < raw.length; i++) assertEquals(Mem.POISON, raw[(int) i], "past the result");
                }
            }
        }
    }

    /**
     * Element counts of the every-pairing reduction tests: tiny, odd, and for device memory also over
     * 256 KiB in an odd count (where device collectives slice the work between ranks).
     */
    private static long[] pairingCounts(DataType t, Mem m) {
        return m == Mem.DEVICE ? new long[] {1, 7, 1001, (300_000 / t.size()) | 1} : new long[] {1, 7, 1001};
    }

    /** The host's fold, in rank order, of every rank's {@link Data#orderFreeInput}: what every backend must give. */
    private byte[] hostFold(DataType t, ReduceOp op, long count) {
        byte[] acc = Data.orderFreeInput(t, op, 0, count);
        MemorySegment a = MemorySegment.ofArray(acc);
        for (int r = 1; r < size; r++) {
            dev.ferry.spi.HostReduction.apply(t, op, a, MemorySegment.ofArray(Data.orderFreeInput(t, op, r, count)), count);
        }
        return acc;
    }

    /** Asserts a reduction result: every byte, except the padding of pair types (MPI's pair datatypes do not carry it). */
    private static void assertReduced(DataType t, byte[] expected, byte[] got, long count, String what) {
        MemorySegment e = MemorySegment.ofArray(expected), g = MemorySegment.ofArray(got);
        for (long i = 0; i < count; i++) {
            long at = i * t.size();
            if (t.kind() == DataType.Kind.PAIR) {
                long ev = Data.pairValueAt(e, t, i), gv = Data.pairValueAt(g, t, i);
                int ei = Data.pairIndexAt(e, t, i), gi = Data.pairIndexAt(g, t, i);
                if (ev != gv || ei != gi) {
                    throw new AssertionError(what + ": element " + i + " is (" + gv + ", " + gi + "), expected (" + ev + ", " + ei + ")");
                }
            } else {
                for (int k = 0; k < t.size(); k++) {
                    if (e.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at + k) != g.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at + k)) {
                        throw new AssertionError(what + ": element " + i + " is " + Data.get(g, t, i) + ", expected " + Data.get(e, t, i));
                    }
                }
            }
        }
        for (long i = expected.length; i < got.length; i++) {
            if (got[(int) i] != Mem.POISON) throw new AssertionError(what + ": byte " + i + " past the result was overwritten");
        }
    }

    /**
     * Failures of a loop of collectives, kept until the loop has ended: a rank that stopped at its
     * first wrong result would leave the others waiting in the next collective.
     */
    private static final class Failures {
        private AssertionError first;
        private int count;

        void check(Runnable assertion) {
            try {
                assertion.run();
            } catch (AssertionError e) {
                if (first == null) first = e;
                count++;
            }
        }

        void rethrow() {
            if (first != null) {
                throw new AssertionError(count + " wrong result(s); the first: " + first.getMessage(), first);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_allReduceEveryPairingOfTypeAndOperator(Mem m) {
        m.assume(comm);
        Failures failures = new Failures();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                for (long count : pairingCounts(t, m)) {
                    Buffer send = filled(m, Data.orderFreeInput(t, op, rank, count));
                    Buffer recv = poisoned(m, t.bytes(count) + 3);
                    comm.allReduce(send, recv, count, t, op);
                    failures.check(() -> assertReduced(t, hostFold(t, op, count), Mem.read(recv), count, "allReduce " + op + " of " + count + " " + t));
                    close(send);
                    close(recv);
                }
            }
        }
        failures.rethrow();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_reduceEveryPairingOfTypeAndOperatorToEveryRoot(Mem m) {
        m.assume(comm);
        Failures failures = new Failures();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                for (long count : pairingCounts(t, m)) {
                    byte[] expected = hostFold(t, op, count);
                    for (int root = 0; root < size; root++) {
                        Buffer send = filled(m, Data.orderFreeInput(t, op, rank, count));
                        Buffer recv = rank == root ? poisoned(m, t.bytes(count) + 3) : null;
                        comm.reduce(send, recv, count, t, op, root);
                        if (rank == root) {
                            int at = root;
                            failures.check(() -> assertReduced(t, expected, Mem.read(recv), count, "reduce " + op + " of " + count + " " + t + " to root " + at));
                            close(recv);
                        }
                        close(send);
                    }
                }
            }
        }
        failures.rethrow();
    }

    // ---- communicators -------------------------------------------------------------------------

    @Test
    void d_split() {
        try (Communicator half = comm.split(rank % 2, -rank)) {
            int expectedSize = (size + 1 - rank % 2) / 2;
            assertEquals(expectedSize, half.size());
            // key -rank: highest old rank first
            int myIndexAscending = rank / 2;
            assertEquals(expectedSize - 1 - myIndexAscending, half.rank());
            try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
                Data.put(in.segment(), DataType.INT, 0, rank);
                half.allReduce(in, out, 1, DataType.INT, ReduceOp.SUM);
                int sum = 0;
                for (int r = rank % 2; r < size; r += 2) sum += r;
                assertEquals(sum, Data.get(out.segment(), DataType.INT, 0));
            }
        }
        Communicator none = comm.split(rank == 0 ? -1 : 1, 0);
        if (rank == 0) {
            assertNull(none, "a negative color gives no communicator");
        } else {
            assertNotNull(none);
            assertEquals(size - 1, none.size());
            none.close();
        }
    }

    @Test
    void d_duplicateHasItsOwnMessageSpace() {
        if (size < 2) return;
        try (Communicator dup = comm.duplicate(); HostBuffer a = HostBuffer.allocate(4); HostBuffer b = HostBuffer.allocate(4)) {
            if (rank == 0) {
                Data.put(a.segment(), DataType.INT, 0, 111);
                Data.put(b.segment(), DataType.INT, 0, 222);
                Request r1 = dup.isend(a, 1, DataType.INT, 1, 5);
                Request r2 = comm.isend(b, 1, DataType.INT, 1, 5);
                Request.waitAll(r1, r2);
            } else if (rank == 1) {
                comm.recv(a, 1, DataType.INT, 0, 5);
                dup.recv(b, 1, DataType.INT, 0, 5);
                assertEquals(222, Data.get(a.segment(), DataType.INT, 0), "the world message");
                assertEquals(111, Data.get(b.segment(), DataType.INT, 0), "the duplicate's message");
            }
            dup.barrier();
        }
    }

    // ---- bad input: an exception before any native call, and the communicator survives --------

    @Test
    void e_negativeAndOverflowingCounts() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 64);
        int peer = (rank + 1) % size;
        assertThrows(InvalidCountException.class, () -> comm.send(b, -1, DataType.BYTE, peer, 0));
        assertThrows(InvalidCountException.class, () -> comm.recv(b, -5, DataType.INT, peer, 0));
        assertThrows(InvalidCountException.class, () -> comm.isend(b, Long.MIN_VALUE, DataType.LONG, peer, 0));
        assertThrows(InvalidCountException.class, () -> comm.broadcast(b, -1, DataType.BYTE, 0));
        assertThrows(InvalidCountException.class, () -> comm.allReduce(b, b.slice(32), Long.MAX_VALUE / 2, DataType.INT, ReduceOp.SUM));
        // size() blocks of MAX/8 LONGs overflow a byte count (with one rank the one block is merely too large)
        Class<? extends InvalidArgumentException> why = size > 1 ? InvalidCountException.class : BufferTooSmallException.class;
        assertThrows(why, () -> comm.allToAll(b, b.slice(32), Long.MAX_VALUE / 8, DataType.LONG));
        assertThrows(BufferTooSmallException.class, () -> comm.send(b, 1L << 40, DataType.BYTE, peer, 0));
        assertUsable();
    }

    @Test
    void e_ranksOutOfRange() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 16);
        assertThrows(InvalidRankException.class, () -> comm.send(b, 1, DataType.BYTE, size, 0));
        assertThrows(InvalidRankException.class, () -> comm.send(b, 1, DataType.BYTE, -2, 0));
        assertThrows(InvalidRankException.class, () -> comm.send(b, 1, DataType.BYTE, Communicator.ANY_SOURCE, 0));
        assertThrows(InvalidRankException.class, () -> comm.recv(b, 1, DataType.BYTE, size + 3, 0));
        assertThrows(InvalidRankException.class, () -> comm.broadcast(b, 1, DataType.BYTE, -1));
        assertThrows(InvalidRankException.class, () -> comm.reduce(b, b.slice(8), 1, DataType.INT, ReduceOp.SUM, size));
        assertThrows(InvalidRankException.class, () -> comm.gather(b, b.slice(8), 1, DataType.BYTE, Integer.MAX_VALUE));
        assertUsable();
    }

    @Test
    void e_tagsOutOfRange() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 16);
        int peer = (rank + 1) % size;
        assertThrows(InvalidTagException.class, () -> comm.send(b, 1, DataType.BYTE, peer, -5));
        assertThrows(InvalidTagException.class, () -> comm.send(b, 1, DataType.BYTE, peer, Communicator.ANY_TAG));
        assertThrows(InvalidTagException.class, () -> comm.irecv(b, 1, DataType.BYTE, peer, -7));
        if (comm.maxTag() < Integer.MAX_VALUE) {
            assertThrows(InvalidTagException.class, () -> comm.isend(b, 1, DataType.BYTE, peer, comm.maxTag() + 1));
        }
        assertUsable();
    }

    @Test
    void e_nullArguments() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 16);
        int peer = (rank + 1) % size;
        assertThrows(InvalidArgumentException.class, () -> comm.send(null, 1, DataType.BYTE, peer, 0));
        assertThrows(InvalidArgumentException.class, () -> comm.send(b, 1, null, peer, 0));
        assertThrows(InvalidArgumentException.class, () -> comm.allReduce(b, b.slice(8), 1, DataType.INT, null));
        assertThrows(InvalidArgumentException.class, () -> comm.allGather(b, null, 1, DataType.BYTE));
        assertUsable();
    }

    @Test
    void e_bufferTooSmall() {
        HostBuffer four = (HostBuffer) alloc(Mem.PAGEABLE, 4);
        int peer = (rank + 1) % size;
        BufferTooSmallException e = assertThrows(BufferTooSmallException.class, () -> comm.send(four, 10, DataType.BYTE, peer, 0));
        assertTrue(e.getMessage().contains("4 bytes") && e.getMessage().contains("10 bytes"), e.getMessage());
        assertThrows(BufferTooSmallException.class, () -> comm.recv(four, 2, DataType.INT, peer, 0));
        assertThrows(BufferTooSmallException.class, () -> comm.allGather(four, four.slice(0, 0), 1, DataType.INT));
        if (rank == 0) {
            Buffer eight = alloc(Mem.PAGEABLE, 8);
            assertThrows(BufferTooSmallException.class, () -> comm.scatter(four, eight, 2, DataType.INT, 0));
        }
        assertUsable();
    }

    @Test
    void e_freedBuffer() {
        HostBuffer b = HostBuffer.allocate(32);
        HostBuffer slice = b.slice(8, 8);
        b.close();
        int peer = (rank + 1) % size;
        assertThrows(BufferFreedException.class, () -> comm.send(b, 1, DataType.BYTE, peer, 0));
        assertThrows(BufferFreedException.class, () -> comm.recv(slice, 1, DataType.BYTE, peer, 0));
        assertThrows(BufferFreedException.class, () -> comm.broadcast(b, 4, DataType.BYTE, 0));
        assertUsable();
    }

    @Test
    void e_closedCommunicator() {
        Communicator dup = comm.duplicate();
        dup.close();
        dup.close(); // idempotent
        assertTrue(dup.isClosed());
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 8);
        assertThrows(CommunicatorClosedException.class, () -> dup.send(b, 1, DataType.BYTE, 0, 0));
        assertThrows(CommunicatorClosedException.class, dup::barrier);
        assertThrows(CommunicatorClosedException.class, dup::duplicate);
        assertUsable();
    }

    @Test
    void e_aliasedBuffers() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 64);
        assertThrows(BufferOverlapException.class, () -> comm.allReduce(b, b, 4, DataType.INT, ReduceOp.SUM));
        assertThrows(BufferOverlapException.class, () -> comm.allGather(b, b.slice(2), 1, DataType.INT));
        assertUsable();
    }

    @Test
    void e_heapMemoryIsRefused() {
        assertThrows(UnsupportedBufferException.class, () -> HostBuffer.wrap(MemorySegment.ofArray(new byte[8])));
        assertThrows(UnsupportedBufferException.class, () -> HostBuffer.wrap(java.nio.ByteBuffer.allocate(8)));
        assertUsable();
    }

    @Test
    void e_deviceBufferOnAHostOnlyBackendNamesStaged() {
        Assumptions.assumeTrue(Cuda.isAvailable(), () -> "needs CUDA: " + Cuda.unavailabilityCause().getMessage());
        Assumptions.assumeFalse(comm.supportsDeviceBuffers(), () -> comm.backend() + " carries device buffers here");
        Buffer d = alloc(Mem.DEVICE, 16);
        UnsupportedBufferException e = assertThrows(UnsupportedBufferException.class, () -> comm.send(d, 1, DataType.BYTE, (rank + 1) % size, 0));
        assertTrue(e.getMessage().contains("staged"), e.getMessage());
        assertUsable();
    }

    // ---- buffer lifetime: close under a pending request, read-only memory ---------------------

    /** Sizes that take every path: eager, pipelined or split, large. */
    private static final int[] LIFETIME_SIZES = {8, 100_003, 4 << 20};

    @ParameterizedTest
    @EnumSource(Mem.class)
    void f_closeWhileIsendPendingDefersTheFree(Mem m) {
        m.assume(comm);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (int n : LIFETIME_SIZES) {
            byte[] data = Data.bytes(91, rank, n);
            Buffer send = m.allocate(n);
            Mem.write(send, data);
            Buffer recv = poisoned(m, n);
            Request out = comm.isend(send, n, DataType.BYTE, next, 31);
            close(send);
            assertFalse(send.isAlive(), "a closed buffer reports isAlive() false at once");
            assertThrows(BufferFreedException.class, () -> comm.send(send, 1, DataType.BYTE, next, 32), "a closed buffer is refused");
            assertFalse(send.lifetime().isFreed(), "the memory under a pending isend is not freed yet");
            Status st = comm.recv(recv, n, DataType.BYTE, prev, 31);
            assertEquals(n, st.byteCount());
            out.waitFor();
            assertTrue(send.lifetime().isFreed(), "the memory is freed once the isend completed");
            assertReceived(Data.bytes(91, prev, n), Mem.read(recv), "isend of " + n + " bytes from a buffer closed while pending");
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void f_closeWhileIrecvPendingDefersTheFree(Mem m) {
        m.assume(comm);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (int n : LIFETIME_SIZES) {
            Buffer recv = m.allocate(n);
            Buffer slice = recv.slice(0, n);
            Request in = comm.irecv(slice, n, DataType.BYTE, prev, 33);
            close(recv);
            assertFalse(slice.isAlive(), "a slice of a closed buffer reports isAlive() false");
            comm.send(filled(m, Data.bytes(17, rank, n)), n, DataType.BYTE, next, 33);
            assertFalse(recv.lifetime().isFreed(), "the memory under a pending irecv is not freed before it completes");
            assertEquals(n, in.waitFor().byteCount());
            assertTrue(recv.lifetime().isFreed(), "the memory is freed once the irecv completed");
        }
        assertUsable();
    }

    @Test
    void f_wrappedByteBufferStaysReachableWhileInFlight() throws Exception {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int n = 1 << 20;
        HostBuffer recv = (HostBuffer) poisoned(Mem.PAGEABLE, n);
        Request in = comm.irecv(recv, n, DataType.BYTE, prev, 34);
        Request out;
        {
            java.nio.ByteBuffer bb = java.nio.ByteBuffer.allocateDirect(n);
            bb.put(Data.bytes(5, rank, n));
            out = comm.isend(HostBuffer.wrap(bb), n, DataType.BYTE, next, 34);
        }
        for (int i = 0; i < 3; i++) {
            System.gc(); // the ByteBuffer is reachable only through the request now
            Thread.sleep(20);
        }
        Request.waitAll(in, out);
        assertReceived(Data.bytes(5, prev, n), Mem.read(recv), "isend from a wrapped ByteBuffer the caller dropped");
    }

    @Test
    void f_readOnlyMemoryIsNeverAReceiveBuffer() {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        HostBuffer rw = (HostBuffer) alloc(Mem.PAGEABLE, 64);
        HostBuffer ro = HostBuffer.wrap(rw.segment().asReadOnly());
        HostBuffer roBytes = HostBuffer.wrap(java.nio.ByteBuffer.allocateDirect(64).asReadOnlyBuffer());
        assertTrue(ro.isReadOnly() && roBytes.isReadOnly());
        for (HostBuffer b : new HostBuffer[] {ro, roBytes}) {
            assertThrows(BufferReadOnlyException.class, () -> comm.recv(b, 8, DataType.BYTE, prev, 35));
            assertThrows(BufferReadOnlyException.class, () -> comm.irecv(b, 8, DataType.BYTE, prev, 35));
            assertThrows(BufferReadOnlyException.class, () -> comm.sendRecv(rw, 8, DataType.BYTE, next, 35, b, 8, DataType.BYTE, prev, 35));
            assertThrows(BufferReadOnlyException.class, () -> comm.allReduce(rw, b, 2, DataType.INT, ReduceOp.SUM));
            assertThrows(BufferReadOnlyException.class, () -> comm.allGather(rw.slice(0, 1), b, 1, DataType.BYTE));
            assertThrows(BufferReadOnlyException.class, () -> comm.allToAll(rw.slice(0, size), b, 1, DataType.BYTE));
            assertThrows(BufferReadOnlyException.class, () -> comm.scatter(rank == 0 ? rw : null, b, 1, DataType.BYTE, 0));
            if (rank != 0) {
                assertThrows(BufferReadOnlyException.class, () -> comm.broadcast(b, 8, DataType.BYTE, 0));
            }
        }
        // read-only memory is fine to send from, and as a broadcast root
        Mem.write(rw, Data.bytes(3, rank, 64));
        HostBuffer got = (HostBuffer) poisoned(Mem.PAGEABLE, 64);
        comm.sendRecv(ro, 64, DataType.BYTE, next, 36, got, 64, DataType.BYTE, prev, 36);
        assertReceived(Data.bytes(3, prev, 64), Mem.read(got), "sendRecv from read-only memory");
        assertUsable();
    }

    // ---- progress: a pending operation moves while its rank blocks in another call ------------

    /** Sizes that take every path: eager, pipelined, several chunks. */
    private static final int[] PROGRESS_SIZES = {8, 100_003, 4 << 20};

    /** The blocking calls a rank may make while it has an isend pending. */
    private void blockingCollective(int which, Mem m) {
        switch (which) {
            case 0 -> comm.barrier();
            case 1 -> assertUsable();
            case 2 -> {
                Buffer b = alloc(m, 64);
                comm.broadcast(b, 64, DataType.BYTE, size - 1);
            }
            case 3 -> {
                Buffer in = filled(m, Data.bytes(1, rank, 8)), out = alloc(m, 8L * size);
                comm.allGather(in, out, 8, DataType.BYTE);
            }
            default -> throw new IllegalArgumentException("no blocking call " + which);
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void g_pendingIsendMovesWhileTheSenderBlocksInACollective(Mem m) {
        m.assume(comm);
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        for (int n : PROGRESS_SIZES) {
            for (int which = 0; which < 4; which++) {
                // rank 0 starts a send and blocks in a collective; rank 1 can only reach the collective once the message is in
                if (rank == 0) {
                    Request r = comm.isend(filled(m, Data.bytes(n + which, 0, n)), n, DataType.BYTE, 1, 41);
                    blockingCollective(which, m);
                    r.waitFor();
                } else if (rank == 1) {
                    Buffer recv = poisoned(m, n);
                    comm.recv(recv, n, DataType.BYTE, 0, 41);
                    assertReceived(Data.bytes(n + which, 0, n), Mem.read(recv), "message of " + n + " bytes sent before a blocking call " + which);
                    blockingCollective(which, m);
                } else {
                    blockingCollective(which, m);
                }
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void g_pendingIrecvMovesWhileTheReceiverBlocksInASend(Mem m) {
        m.assume(comm);
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        for (int n : PROGRESS_SIZES) {
            if (rank == 0) {
                Buffer in = poisoned(m, n);
                Request r = comm.irecv(in, n, DataType.BYTE, 1, 42);
                comm.send(filled(m, Data.bytes(n, 0, n)), n, DataType.BYTE, 1, 43);
                r.waitFor();
                assertReceived(Data.bytes(n, 1, n), Mem.read(in), "irecv of " + n + " bytes pending during a send");
            } else if (rank == 1) {
                // rank 1 sends only after it received: rank 0's send must complete while its irecv is pending
                Buffer got = poisoned(m, n);
                comm.recv(got, n, DataType.BYTE, 0, 43);
                comm.send(filled(m, Data.bytes(n, 1, n)), n, DataType.BYTE, 0, 42);
                assertReceived(Data.bytes(n, 0, n), Mem.read(got), "send of " + n + " bytes while the sender has an irecv pending");
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void g_pendingIsendCompletesWithoutAnyFurtherCall(Mem m) throws InterruptedException {
        m.assume(comm);
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        int n = 4 << 20;
        if (rank == 0) {
            Request r = comm.isend(filled(m, Data.bytes(2, 0, n)), n, DataType.BYTE, 1, 44);
            // no Ferry call on this rank until the receiver has the whole message (it says so by a message)
            HostBuffer flag = (HostBuffer) alloc(Mem.PAGEABLE, 1);
            Thread.sleep(1);
            comm.recv(flag, 1, DataType.BYTE, 1, 45);
            r.waitFor();
        } else if (rank == 1) {
            Buffer recv = poisoned(m, n);
            comm.recv(recv, n, DataType.BYTE, 0, 44);
            comm.send(alloc(Mem.PAGEABLE, 1), 1, DataType.BYTE, 0, 45);
            assertReceived(Data.bytes(2, 0, n), Mem.read(recv), "isend that completes while its rank waits for a reply");
        }
        assertUsable();
    }

    // ---- the 16-bit types, logical and bitwise operators, value/index pairs ---------------------

    /** Type and operator pairs beyond the classic ones: every operator MPI defines for the type. */
    private static List<Object[]> newReductions() {
        List<Object[]> out = new ArrayList<>();
        for (DataType t : new DataType[] {DataType.BYTE, DataType.SHORT, DataType.INT, DataType.LONG, DataType.FLOAT16, DataType.BFLOAT16}) {
            for (ReduceOp op : ReduceOp.values()) {
                boolean classic = Arrays.asList(Data.CLASSIC_TYPES).contains(t) && Arrays.asList(Data.CLASSIC_OPS).contains(op);
                if (op.appliesTo(t) && !classic) out.add(new Object[] {t, op});
            }
        }
        return out;
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_reduceNewTypesAndOperators(Mem m) {
        m.assume(comm);
        int root = size - 1;
        for (Object[] tr : newReductions()) {
            DataType t = (DataType) tr[0];
            ReduceOp op = (ReduceOp) tr[1];
            for (int count : new int[] {1, 7, 1001}) {
                HostBuffer in = Data.reductionInput(t, op, rank, count);
                closeAfter(in);
                Buffer all = poisoned(m, t.bytes(count));
                comm.allReduce(filled(m, Mem.read(in)), all, count, t, op);
                Buffer atRoot = rank == root ? poisoned(m, t.bytes(count)) : null;
                comm.reduce(filled(m, Mem.read(in)), atRoot, count, t, op, root);
                for (Buffer got : rank == root ? new Buffer[] {all, atRoot} : new Buffer[] {all}) {
                    MemorySegment g = MemorySegment.ofArray(Mem.read(got));
                    for (int i = 0; i < count; i++) {
                        assertEquals(Data.expected(t, op, size, i), Data.get(g, t, i), (got == all ? "allReduce " : "reduce ") + op + " of " + t + " element " + i);
                    }
                }
            }
        }
    }

    /** Rank {@code rank}'s element {@code i} for {@link #c_smallIntegerSumsAndProductsWrap}: large enough that two ranks overflow the type. */
    private static long overflowing(DataType t, ReduceOp op, int rank, long i) {
        if (t == DataType.BYTE) return op == ReduceOp.SUM ? 200 + (i + rank) % 50 : 20 + (i + rank) % 7;
        return op == ReduceOp.SUM ? 20000 + (i * 7 + rank) % 1000 : 300 + (i + rank) % 7;
    }

    /** {@link #overflowing} of ranks {@code from} to {@code to - 1} reduced with the type's wrapping arithmetic, as {@link Data#get} reads it. */
    private static long wrapped(DataType t, ReduceOp op, int from, int to, long i) {
        long acc = op == ReduceOp.SUM ? 0 : 1;
        for (int r = from; r < to; r++) acc = op == ReduceOp.SUM ? acc + overflowing(t, op, r, i) : acc * overflowing(t, op, r, i);
        return t == DataType.BYTE ? acc & 0xFF : (short) acc;
    }

    /**
     * Sums and products of BYTE and SHORT that overflow wrap, in every reducing collective: 1001
     * elements, enough for a library's vector kernels (Open MPI 4.1's AVX kernels saturate instead:
     * open-mpi/ompi#8045).
     */
    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_smallIntegerSumsAndProductsWrap(Mem m) {
        m.assume(comm);
        int count = 1001, root = size - 1;
        for (DataType t : new DataType[] {DataType.BYTE, DataType.SHORT}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.PROD}) {
                HostBuffer in = HostBuffer.allocate(t.bytes((long) count * size));
                closeAfter(in);
                for (long i = 0; i < (long) count * size; i++) Data.put(in.segment(), t, i, overflowing(t, op, rank, i));
                byte[] mine = Mem.read(in);
                String what = op + " of " + t;
                Buffer all = poisoned(m, t.bytes(count));
                comm.allReduce(filled(m, mine), all, count, t, op);
                Buffer atRoot = rank == root ? poisoned(m, t.bytes(count)) : null;
                comm.reduce(filled(m, mine), atRoot, count, t, op, root);
                Buffer scanned = poisoned(m, t.bytes(count));
                comm.scan(filled(m, mine), scanned, count, t, op);
                Buffer exscanned = poisoned(m, t.bytes(count));
                comm.exscan(filled(m, mine), exscanned, count, t, op);
                Buffer block = poisoned(m, t.bytes(count));
                comm.reduceScatterBlock(filled(m, mine), block, count, t, op);
                MemorySegment a = MemorySegment.ofArray(Mem.read(all)), s = MemorySegment.ofArray(Mem.read(scanned));
                MemorySegment e = MemorySegment.ofArray(Mem.read(exscanned)), b = MemorySegment.ofArray(Mem.read(block));
                MemorySegment r = rank == root ? MemorySegment.ofArray(Mem.read(atRoot)) : null;
                for (int i = 0; i < count; i++) {
                    assertEquals(wrapped(t, op, 0, size, i), (long) Data.get(a, t, i), "allReduce " + what + ", element " + i);
                    if (r != null) assertEquals(wrapped(t, op, 0, size, i), (long) Data.get(r, t, i), "reduce " + what + ", element " + i);
                    assertEquals(wrapped(t, op, 0, rank + 1, i), (long) Data.get(s, t, i), "scan " + what + ", element " + i);
                    if (rank > 0) assertEquals(wrapped(t, op, 0, rank, i), (long) Data.get(e, t, i), "exscan " + what + ", element " + i);
                    long at = (long) rank * count + i;
                    assertEquals(wrapped(t, op, 0, size, at), (long) Data.get(b, t, i), "reduceScatterBlock " + what + ", element " + i);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void c_minlocAndMaxlocOnEveryPairType(Mem m) {
        m.assume(comm);
        for (DataType t : new DataType[] {DataType.SHORT_INT, DataType.INT_INT, DataType.LONG_INT, DataType.FLOAT_INT, DataType.DOUBLE_INT}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.MINLOC, ReduceOp.MAXLOC}) {
                int count = 257;
                HostBuffer in = HostBuffer.allocate(t.bytes(count));
                closeAfter(in);
                for (int i = 0; i < count; i++) Data.putPair(in.segment(), t, i, Data.pairValue(rank, i), rank * 1000 + i);
                Buffer out = poisoned(m, t.bytes(count));
                comm.allReduce(filled(m, Mem.read(in)), out, count, t, op);
                MemorySegment g = MemorySegment.ofArray(Mem.read(out));
                for (int i = 0; i < count; i++) {
                    long best = Data.pairValue(0, i);
                    int index = i;
                    for (int r = 1; r < size; r++) {
                        long v = Data.pairValue(r, i);
                        if (op == ReduceOp.MINLOC ? v < best : v > best) {
                            best = v;
                            index = r * 1000 + i;
                        }
                    }
                    assertEquals(best, Data.pairValueAt(g, t, i), op + " of " + t + " element " + i + ": value");
                    assertEquals(index, Data.pairIndexAt(g, t, i), op + " of " + t + " element " + i + ": index (the smaller on ties)");
                }
            }
        }
    }

    @Test
    void e_operatorsOnTypesMpiDoesNotDefineThemFor() {
        HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 64);
        assertThrows(dev.ferry.InvalidReduceOpException.class, () -> comm.allReduce(b, b.slice(32), 2, DataType.INT, ReduceOp.MINLOC));
        assertThrows(dev.ferry.InvalidReduceOpException.class, () -> comm.allReduce(b, b.slice(32), 2, DataType.FLOAT, ReduceOp.BXOR));
        assertThrows(dev.ferry.InvalidReduceOpException.class, () -> comm.reduce(b, b.slice(32), 2, DataType.DOUBLE_INT, ReduceOp.SUM, 0));
        assertThrows(dev.ferry.InvalidReduceOpException.class, () -> comm.allReduce(b, b.slice(32), 2, DataType.FLOAT16, ReduceOp.LAND));
        assertUsable();
    }

    // ---- non-blocking collectives ---------------------------------------------------------------

    /** Without MPI_THREAD_MULTIPLE non-blocking collectives are refused; the tests below need them. */
    private void assumeNonBlockingCollectives() {
        if (comm.threadLevel() != dev.ferry.ThreadLevel.MULTIPLE) {
            assertThrows(dev.ferry.ThreadingException.class, comm::ibarrier, "ibarrier below MPI_THREAD_MULTIPLE");
            Assumptions.abort("non-blocking collectives need MPI_THREAD_MULTIPLE; this communicator has " + comm.threadLevel()
                    + " (the refusal was checked)");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void h_everyNonBlockingCollectiveInFlightAtOnce(Mem m) {
        m.assume(comm);
        assumeNonBlockingCollectives();
        int n = 65539, root = size - 1;
        byte[] bdata = Data.bytes(n, root, n);
        Buffer bcast = rank == root ? filled(m, bdata) : poisoned(m, n);
        byte[][] scatterParts = new byte[size][];
        for (int r = 0; r < size; r++) scatterParts[r] = Data.bytes(n + 1, r, n);
        Buffer scatterIn = rank == root ? filled(m, cat(scatterParts)) : null;
        Buffer scatterOut = poisoned(m, n);
        Buffer gatherOut = rank == root ? poisoned(m, (long) n * size) : null;
        Buffer allGatherOut = poisoned(m, (long) n * size);
        byte[][] a2aOut = new byte[size][];
        for (int r = 0; r < size; r++) a2aOut[r] = Data.bytes(n + 7L * r, rank, n);
        Buffer a2aIn = poisoned(m, (long) n * size);
        int count = 1001;
        HostBuffer redIn = Data.reductionInput(DataType.DOUBLE, ReduceOp.SUM, rank, count);
        closeAfter(redIn);
        Buffer reduceOut = rank == 0 ? poisoned(m, DataType.DOUBLE.bytes(count)) : null;
        Buffer allReduceOut = poisoned(m, DataType.DOUBLE.bytes(count));
        List<Request> started = List.of(
                comm.ibroadcast(bcast, n, DataType.BYTE, root),
                comm.iscatter(scatterIn, scatterOut, n, DataType.BYTE, root),
                comm.igather(filled(m, Data.bytes(n + 2, rank, n)), gatherOut, n, DataType.BYTE, root),
                comm.iallGather(filled(m, Data.bytes(n + 3, rank, n)), allGatherOut, n, DataType.BYTE),
                comm.iallToAll(filled(m, cat(a2aOut)), a2aIn, n, DataType.BYTE),
                comm.ireduce(filled(m, Mem.read(redIn)), reduceOut, count, DataType.DOUBLE, ReduceOp.SUM, 0),
                comm.iallReduce(filled(m, Mem.read(redIn)), allReduceOut, count, DataType.DOUBLE, ReduceOp.SUM),
                comm.ibarrier());
        List<Status> st = Request.waitAll(started);
        assertEquals(started.size(), st.size());
        assertReceived(bdata, Mem.read(bcast), "ibroadcast from root " + root);
        assertReceived(scatterParts[rank], Mem.read(scatterOut), "iscatter from root " + root);
        byte[][] expectGather = new byte[size][], expectAllGather = new byte[size][], expectA2a = new byte[size][];
        for (int r = 0; r < size; r++) {
            expectGather[r] = Data.bytes(n + 2, r, n);
            expectAllGather[r] = Data.bytes(n + 3, r, n);
            expectA2a[r] = Data.bytes(n + 7L * rank, r, n);
        }
        if (rank == root) assertReceived(cat(expectGather), Mem.read(gatherOut), "igather to root " + root);
        assertReceived(cat(expectAllGather), Mem.read(allGatherOut), "iallGather");
        assertReceived(cat(expectA2a), Mem.read(a2aIn), "iallToAll");
        MemorySegment all = MemorySegment.ofArray(Mem.read(allReduceOut));
        for (int i = 0; i < count; i++) {
            assertEquals(Data.expected(DataType.DOUBLE, ReduceOp.SUM, size, i), Data.get(all, DataType.DOUBLE, i), "iallReduce element " + i);
        }
        if (rank == 0) {
            MemorySegment red = MemorySegment.ofArray(Mem.read(reduceOut));
            for (int i = 0; i < count; i++) {
                assertEquals(Data.expected(DataType.DOUBLE, ReduceOp.SUM, size, i), Data.get(red, DataType.DOUBLE, i), "ireduce element " + i);
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void h_aNonBlockingCollectiveCompletesWhileItsRankMakesNoCall(Mem m) throws InterruptedException {
        m.assume(comm);
        assumeNonBlockingCollectives();
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        int count = 1 << 20; // 8 MiB of doubles: the pipelined paths
        HostBuffer in = Data.reductionInput(DataType.DOUBLE, ReduceOp.SUM, rank, count);
        closeAfter(in);
        Buffer out = poisoned(m, DataType.DOUBLE.bytes(count));
        long quietMillis = 4000;
        long start = System.nanoTime();
        Request r = comm.iallReduce(filled(m, Mem.read(in)), out, count, DataType.DOUBLE, ReduceOp.SUM);
        if (rank == 0) {
            Thread.sleep(quietMillis); // no Ferry call here: the others must finish anyway
            r.waitFor();
        } else {
            r.waitFor();
            long took = (System.nanoTime() - start) / 1_000_000;
            assertTrue(took < quietMillis, "iallReduce on rank " + rank + " took " + took + " ms: it waited for rank 0 to call into Ferry again");
        }
        MemorySegment got = MemorySegment.ofArray(Mem.read(out));
        for (int i = 0; i < count; i += 4099) {
            assertEquals(Data.expected(DataType.DOUBLE, ReduceOp.SUM, size, i), Data.get(got, DataType.DOUBLE, i), "iallReduce element " + i);
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void h_nonBlockingCollectivesBesideBlockingCallsAndMessages(Mem m) {
        m.assume(comm);
        assumeNonBlockingCollectives();
        int n = 4099;
        Buffer recv = poisoned(m, (long) n * size);
        Request gathering = comm.iallGather(filled(m, Data.bytes(n, rank, n)), recv, n, DataType.BYTE);
        // blocking collectives and a ring of messages on the same communicator while it is in flight
        comm.barrier();
        assertUsable();
        Buffer ring = poisoned(m, n);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        comm.sendRecv(filled(m, Data.bytes(n + 9, rank, n)), n, DataType.BYTE, next, 46, ring, n, DataType.BYTE, prev, 46);
        assertReceived(Data.bytes(n + 9, prev, n), Mem.read(ring), "sendRecv ring while an iallGather is in flight");
        gathering.waitFor();
        byte[][] parts = new byte[size][];
        for (int r = 0; r < size; r++) parts[r] = Data.bytes(n, r, n);
        assertReceived(cat(parts), Mem.read(recv), "iallGather beside blocking calls");
    }

    @Test
    void h_nonBlockingCollectivesCheckTheirArgumentsAtTheCall() {
        assumeNonBlockingCollectives();
        try (HostBuffer a = HostBuffer.allocate(64); HostBuffer b = HostBuffer.allocate(64)) {
            assertThrows(BufferTooSmallException.class, () -> comm.iallReduce(a, b, 9, DataType.DOUBLE, ReduceOp.SUM));
            assertThrows(dev.ferry.InvalidReduceOpException.class, () -> comm.iallReduce(a, b, 2, DataType.DOUBLE, ReduceOp.BAND));
            assertThrows(InvalidRankException.class, () -> comm.ibroadcast(a, 8, DataType.BYTE, size));
            assertThrows(BufferOverlapException.class, () -> comm.iallReduce(a, a, 2, DataType.DOUBLE, ReduceOp.SUM));
            assertThrows(InvalidArgumentException.class, () -> comm.iallToAll(null, b, 1, DataType.BYTE));
        }
        assertUsable();
    }

    /** A buffer of kind {@code m} holding {@code data}, closed by the test itself (kept in {@code owned}). */
    private static Buffer owned(Mem m, byte[] data, List<Buffer> owned) {
        Buffer b = m.allocate(data.length);
        Mem.write(b, data);
        owned.add(b);
        return b;
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void h_buffersClosedRightAfterANonBlockingCollectiveStartsStayUntilItCompletes(Mem m) {
        m.assume(comm);
        assumeNonBlockingCollectives();
        int n = 4099, root = size - 1, count = 1001;
        HostBuffer redIn = closeAfter(Data.reductionInput(DataType.DOUBLE, ReduceOp.SUM, rank, count));
        byte[] poison = new byte[Math.max(n * size, (int) DataType.DOUBLE.bytes(count))];
        Arrays.fill(poison, Mem.POISON);
        // every send buffer, and the receive buffers of the second group, are closed right after the start
        List<Buffer> closed = new ArrayList<>();
        Buffer bcast = rank == root ? owned(m, Data.bytes(n, root, n), closed) : poisoned(m, n);
        Buffer allGathered = poisoned(m, (long) n * size), reduced = poisoned(m, DataType.DOUBLE.bytes(count));
        byte[][] a2aOut = new byte[size][];
        for (int r = 0; r < size; r++) a2aOut[r] = Data.bytes(n + 7L * r, rank, n);
        List<Request> started = new ArrayList<>(List.of(
                comm.ibroadcast(bcast, n, DataType.BYTE, root),
                comm.iallGather(owned(m, Data.bytes(n + 3, rank, n), closed), allGathered, n, DataType.BYTE),
                comm.iallReduce(owned(m, Mem.read(redIn), closed), reduced, count, DataType.DOUBLE, ReduceOp.SUM),
                comm.igather(owned(m, Data.bytes(n + 2, rank, n), closed), rank == root ? owned(m, Arrays.copyOf(poison, n * size), closed) : null,
                        n, DataType.BYTE, root),
                comm.iallToAll(owned(m, cat(a2aOut), closed), owned(m, Arrays.copyOf(poison, n * size), closed), n, DataType.BYTE),
                comm.iallReduce(owned(m, Mem.read(redIn), closed), owned(m, Arrays.copyOf(poison, (int) DataType.DOUBLE.bytes(count)), closed),
                        count, DataType.DOUBLE, ReduceOp.SUM),
                comm.iallReduce(Communicator.IN_PLACE, owned(m, Mem.read(redIn), closed), count, DataType.DOUBLE, ReduceOp.SUM)));
        for (Buffer b : closed) {
            close(b);
        }
        for (Buffer b : closed) {
            assertFalse(b.isAlive(), "a buffer closed under a pending collective reports isAlive() false at once");
            assertFalse(b.lifetime().isFreed(), "memory under a pending collective is not freed before its request completes");
        }
        assertThrows(BufferFreedException.class, () -> comm.iallReduce(closed.get(0), reduced, 1, DataType.DOUBLE, ReduceOp.SUM),
                "a closed buffer is refused by a new call");
        Request.waitAll(started);
        for (Buffer b : closed) {
            assertTrue(b.lifetime().isFreed(), "the memory is freed once its collective completed");
        }
        byte[][] expectAllGather = new byte[size][];
        for (int r = 0; r < size; r++) expectAllGather[r] = Data.bytes(n + 3, r, n);
        if (rank != root) assertReceived(Data.bytes(n, root, n), Mem.read(bcast), "ibroadcast from a root whose buffer was closed");
        assertReceived(cat(expectAllGather), Mem.read(allGathered), "iallGather of send buffers closed at once");
        MemorySegment got = MemorySegment.ofArray(Mem.read(reduced));
        for (int i = 0; i < count; i++) {
            assertEquals(Data.expected(DataType.DOUBLE, ReduceOp.SUM, size, i), Data.get(got, DataType.DOUBLE, i),
                    "iallReduce of send buffers closed at once, element " + i);
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void h_nonBlockingVectorAndPrefixCollectives(Mem m) {
        m.assume(comm);
        assumeNonBlockingCollectives();
        int root = size - 1;
        long[] counts = new long[size], displs = new long[size];
        long total = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = 1000L * (r + 1) + r; // uneven parts
            displs[r] = total;
            total += counts[r];
        }
        int me = rank;
        byte[] all = Data.bytes(total, 5, (int) total);
        Buffer scatterIn = rank == root ? filled(m, all) : null;
        Buffer scatterOut = poisoned(m, counts[me]);
        Buffer gatherOut = rank == root ? poisoned(m, total) : null;
        Buffer allGatherOut = poisoned(m, total);
        byte[] mine = Arrays.copyOfRange(all, (int) displs[me], (int) (displs[me] + counts[me]));
        // allToAllV: block j of this rank's send goes to rank j; rank j's block for me is counts[me] bytes
        long[] sc = new long[size], sd = new long[size], rc = new long[size], rd = new long[size];
        long sTotal = 0, rTotal = 0;
        for (int r = 0; r < size; r++) {
            sc[r] = counts[r];
            sd[r] = sTotal;
            sTotal += sc[r];
            rc[r] = counts[me];
            rd[r] = rTotal;
            rTotal += rc[r];
        }
        byte[][] outBlocks = new byte[size][];
        for (int r = 0; r < size; r++) outBlocks[r] = Data.bytes(sc[r] + 11, me * 31 + r, (int) sc[r]);
        Buffer a2aIn = poisoned(m, rTotal);
        int count = 257;
        HostBuffer red = Data.reductionInput(DataType.INT, ReduceOp.SUM, rank, count * size);
        closeAfter(red);
        Buffer rsbOut = poisoned(m, DataType.INT.bytes(count));
        long[] rsCounts = new long[size];
        for (int r = 0; r < size; r++) rsCounts[r] = r == 0 ? count * size : 0; // everything to rank 0 (zero-count ranks)
        Buffer rsOut = poisoned(m, DataType.INT.bytes(rsCounts[me]) + 4);
        Buffer scanOut = poisoned(m, DataType.INT.bytes(count));
        Buffer exscanOut = rank == 0 ? null : poisoned(m, DataType.INT.bytes(count));
        List<Request> started = List.of(
                comm.iscatterV(scatterIn, rank == root ? counts : null, rank == root ? displs : null, scatterOut, counts[me], DataType.BYTE, root),
                comm.igatherV(filled(m, mine), counts[me], gatherOut, rank == root ? counts : null, rank == root ? displs : null, DataType.BYTE, root),
                comm.iallGatherV(filled(m, mine), counts[me], allGatherOut, counts, displs, DataType.BYTE),
                comm.iallToAllV(filled(m, cat(outBlocks)), sc, sd, a2aIn, rc, rd, DataType.BYTE),
                comm.ireduceScatterBlock(filled(m, Mem.read(red)), rsbOut, count, DataType.INT, ReduceOp.SUM),
                comm.ireduceScatter(filled(m, Mem.read(red)), rsOut, rsCounts, DataType.INT, ReduceOp.SUM),
                comm.iscan(filled(m, Mem.read(red)), scanOut, count, DataType.INT, ReduceOp.SUM),
                comm.iexscan(filled(m, Mem.read(red)), exscanOut, count, DataType.INT, ReduceOp.SUM));
        Request.waitAll(started);
        assertReceived(mine, Mem.read(scatterOut), "iscatterV part of rank " + me);
        if (rank == root) assertReceived(all, Mem.read(gatherOut), "igatherV at root " + root);
        assertReceived(all, Mem.read(allGatherOut), "iallGatherV");
        byte[][] inBlocks = new byte[size][];
        for (int r = 0; r < size; r++) inBlocks[r] = Data.bytes(counts[me] + 11, r * 31 + me, (int) counts[me]);
        assertReceived(cat(inBlocks), Mem.read(a2aIn), "iallToAllV");
        // element i of rank r's input is Data's reduction input; the sums over ranks are Data.expected
        MemorySegment rsb = MemorySegment.ofArray(Mem.read(rsbOut));
        for (int i = 0; i < count; i++) {
            assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, size, me * count + i), Data.get(rsb, DataType.INT, i), "ireduceScatterBlock element " + i);
        }
        if (rank == 0) {
            MemorySegment rs = MemorySegment.ofArray(Mem.read(rsOut));
            for (int i = 0; i < count * size; i += 7) {
                assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, size, i), Data.get(rs, DataType.INT, i), "ireduceScatter element " + i);
            }
        }
        MemorySegment sc0 = MemorySegment.ofArray(Mem.read(scanOut));
        for (int i = 0; i < count; i++) {
            assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, me + 1, i), Data.get(sc0, DataType.INT, i), "iscan element " + i + " at rank " + me);
        }
        if (rank > 0) {
            MemorySegment ex = MemorySegment.ofArray(Mem.read(exscanOut));
            for (int i = 0; i < count; i++) {
                assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, me, i), Data.get(ex, DataType.INT, i), "iexscan element " + i + " at rank " + me);
            }
        }
        assertUsable();
    }

    /**
     * Starting a non-blocking collective is a local call, as in MPI: communicators whose first
     * non-blocking collectives the ranks start in different orders (even ranks one way, odd ranks
     * the other) all complete. Were a lane's communicator made collectively at that start, each
     * rank would wait in one communicator for ranks that wait in the other.
     */
    @Test
    void h_firstNonBlockingCollectivesStartedInCrossedOrderComplete() {
        assumeNonBlockingCollectives();
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        try (Communicator dup = comm.duplicate()) {
            startCrossedAndCheck(List.of(comm, dup), "the communicator and its duplicate");
        }
        try (Communicator ascending = comm.split(0, rank); Communicator descending = comm.split(0, size - rank);
             Communicator halves = comm.split(rank % 2, rank)) {
            startCrossedAndCheck(List.of(ascending, descending, halves), "split communicators");
        }
        assertUsable();
    }

    /** Starts one iallReduce on each communicator, in list order on even ranks and in reverse on odd ranks, then waits for all and checks them. */
    private void startCrossedAndCheck(List<Communicator> comms, String what) {
        List<Communicator> order = new ArrayList<>(comms);
        if (rank % 2 == 1) java.util.Collections.reverse(order);
        List<HostBuffer> results = new ArrayList<>();
        List<Request> started = new ArrayList<>();
        for (Communicator c : order) {
            HostBuffer in = closeAfter(HostBuffer.allocate(8)), out = closeAfter(HostBuffer.allocate(8));
            Data.put(in.segment(), DataType.LONG, 0, c.rank() + 1);
            Data.put(out.segment(), DataType.LONG, 0, -1);
            started.add(c.iallReduce(in, out, 1, DataType.LONG, ReduceOp.SUM));
            results.add(out);
        }
        Request.waitAll(started);
        for (int i = 0; i < order.size(); i++) {
            int n = order.get(i).size();
            assertEquals(n * (n + 1) / 2.0, Data.get(results.get(i).segment(), DataType.LONG, 0),
                    "iallReduce on communicator " + comms.indexOf(order.get(i)) + " of " + what + ", started " + (rank % 2 == 1 ? "in reverse" : "in order"));
        }
    }

    // ---- in place ------------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void i_inPlaceFormsOfEveryCollectiveThatHasOne(Mem m) {
        m.assume(comm);
        Buffer IP = Communicator.IN_PLACE;
        int count = 1001, root = size - 1;
        HostBuffer input = Data.reductionInput(DataType.DOUBLE, ReduceOp.SUM, rank, count);
        closeAfter(input);
        // allReduce and reduce: the input in the receive buffer, replaced by the result
        Buffer all = filled(m, Mem.read(input));
        comm.allReduce(IP, all, count, DataType.DOUBLE, ReduceOp.SUM);
        Buffer red = filled(m, Mem.read(input));
        comm.reduce(rank == root ? IP : red, rank == root ? red : null, count, DataType.DOUBLE, ReduceOp.SUM, root);
        MemorySegment a = MemorySegment.ofArray(Mem.read(all)), r = MemorySegment.ofArray(Mem.read(red));
        for (int i = 0; i < count; i++) {
            double want = Data.expected(DataType.DOUBLE, ReduceOp.SUM, size, i);
            assertEquals(want, Data.get(a, DataType.DOUBLE, i), "allReduce in place, element " + i);
            if (rank == root) assertEquals(want, Data.get(r, DataType.DOUBLE, i), "reduce in place at root, element " + i);
        }
        // allGather and gather: this rank's block already in place
        int n = 4099;
        byte[][] parts = new byte[size][];
        for (int k = 0; k < size; k++) parts[k] = Data.bytes(n, k, n);
        byte[] whole = cat(parts);
        byte[] seeded = new byte[whole.length];
        Arrays.fill(seeded, Mem.POISON);
        System.arraycopy(parts[rank], 0, seeded, rank * n, n);
        Buffer ag = filled(m, seeded);
        comm.allGather(IP, ag, n, DataType.BYTE);
        assertArrayEquals(whole, Mem.read(ag), "allGather in place");
        Buffer g = rank == root ? filled(m, seeded) : null;
        comm.gather(rank == root ? IP : filled(m, parts[rank]), g, n, DataType.BYTE, root);
        if (rank == root) assertArrayEquals(whole, Mem.read(g), "gather in place at root");
        // scatter: the root's block stays in the send buffer
        Buffer sc = rank == root ? filled(m, whole) : null;
        Buffer part = rank == root ? IP : poisoned(m, n);
        comm.scatter(sc, part, n, DataType.BYTE, root);
        if (rank != root) assertArrayEquals(parts[rank], Mem.read(part), "scatter with the root in place");
        else assertArrayEquals(whole, Mem.read(sc), "scatter in place leaves the root's send buffer as it was");
        // allToAll: the blocks to send in the receive buffer, replaced by the blocks received
        byte[][] out = new byte[size][], in = new byte[size][];
        for (int k = 0; k < size; k++) {
            out[k] = Data.bytes(n + 13L * k, rank, n);
            in[k] = Data.bytes(n + 13L * rank, k, n);
        }
        Buffer a2a = filled(m, cat(out));
        comm.allToAll(IP, a2a, n, DataType.BYTE);
        assertArrayEquals(cat(in), Mem.read(a2a), "allToAll in place");
        // reduceScatterBlock and reduceScatter: every rank's blocks in the receive buffer, the result at its start
        int block = 257;
        HostBuffer blocks = Data.reductionInput(DataType.INT, ReduceOp.SUM, rank, (long) block * size);
        closeAfter(blocks);
        Buffer rsb = filled(m, Mem.read(blocks));
        comm.reduceScatterBlock(IP, rsb, block, DataType.INT, ReduceOp.SUM);
        long[] counts = new long[size];
        for (int k = 0; k < size; k++) counts[k] = k == 0 ? (long) block * size : 0;
        Buffer rs = filled(m, Mem.read(blocks));
        comm.reduceScatter(IP, rs, counts, DataType.INT, ReduceOp.SUM);
        MemorySegment b1 = MemorySegment.ofArray(Mem.read(rsb)), b2 = MemorySegment.ofArray(Mem.read(rs));
        for (int i = 0; i < block; i++) {
            assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, size, (long) rank * block + i), Data.get(b1, DataType.INT, i), "reduceScatterBlock in place, element " + i);
        }
        if (rank == 0) {
            for (int i = 0; i < block * size; i += 5) {
                assertEquals(Data.expected(DataType.INT, ReduceOp.SUM, size, i), Data.get(b2, DataType.INT, i), "reduceScatter in place, element " + i);
            }
        }
        assertUsable();
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void i_inPlaceNonBlockingAllReduce(Mem m) {
        m.assume(comm);
        assumeNonBlockingCollectives();
        int count = 70001;
        HostBuffer input = Data.reductionInput(DataType.LONG, ReduceOp.MAX, rank, count);
        closeAfter(input);
        Buffer all = filled(m, Mem.read(input));
        comm.iallReduce(Communicator.IN_PLACE, all, count, DataType.LONG, ReduceOp.MAX).waitFor();
        MemorySegment a = MemorySegment.ofArray(Mem.read(all));
        for (int i = 0; i < count; i += 3) {
            assertEquals(Data.expected(DataType.LONG, ReduceOp.MAX, size, i), Data.get(a, DataType.LONG, i), "iallReduce in place, element " + i);
        }
    }

    @Test
    void i_inPlaceWhereItIsNotTaken() {
        Assumptions.assumeTrue(size >= 2, "needs a non-root rank");
        Buffer IP = Communicator.IN_PLACE;
        try (HostBuffer b = HostBuffer.allocate(64)) {
            int root = 0;
            if (rank != root) {
                InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> comm.reduce(IP, null, 1, DataType.INT, ReduceOp.SUM, root));
                assertTrue(e.getMessage().contains("only the root"), e.getMessage());
                assertThrows(InvalidArgumentException.class, () -> comm.gather(IP, null, 1, DataType.INT, root));
                assertThrows(InvalidArgumentException.class, () -> comm.scatter(null, IP, 1, DataType.INT, root));
            }
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> comm.send(IP, 0, DataType.BYTE, (rank + 1) % size, 1));
            assertTrue(e.getMessage().contains("IN_PLACE"), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> comm.allReduce(b, IP, 1, DataType.INT, ReduceOp.SUM));
            assertThrows(InvalidArgumentException.class, () -> comm.broadcast(IP, 1, DataType.INT, root));
            assertThrows(InvalidArgumentException.class, () -> comm.scan(IP, b, 1, DataType.INT, ReduceOp.SUM));
        }
        assertUsable();
    }
}
