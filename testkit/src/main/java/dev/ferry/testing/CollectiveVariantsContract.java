// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ferry.Buffer;
import dev.ferry.BufferOverlapException;
import dev.ferry.BufferReadOnlyException;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidReduceOpException;
import dev.ferry.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite of the vector collectives ({@code scatterV}, {@code gatherV},
 * {@code allGatherV}, {@code allToAllV}), reduce-scatter ({@code reduceScatterBlock},
 * {@code reduceScatter}) and the prefix reductions ({@code scan}, {@code exscan}), run on real MPI
 * ranks by every backend's conformance test (see {@link MpiJob}) like {@link CommunicatorContract}.
 *
 * <p>Data tests use uneven blocks (rank {@code r} gets {@code r + 1} elements, the last rank
 * none), displacements in reverse rank order with gaps that must stay untouched (receive buffers
 * are poisoned, gaps in send buffers hold a marker that must never arrive), every rank as root, a
 * large case (20 000 elements per block: over the binding's piece limit when a test lowers
 * {@code ferry.maxPieceBytes}, over the staging threshold on staged), and pageable, pinned and
 * device memory where available. Every element is checked against values computed locally.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class CollectiveVariantsContract extends RankContract {
    /** A byte of {@link Mem#POISON} four times: an int never received. */
    private static final int POISON = 0xA5A5A5A5;
    /** What send buffers hold between blocks: never sent. */
    private static final int GAP = 0x0BADF00D;
    /** Elements added to every block in the large case. */
    private static final int LARGE = 20_000;


    // ---- helpers -------------------------------------------------------------------------------

    /** A buffer of kind {@code m} of at least one byte, closed after the test. */
    @Override
    protected Buffer alloc(Mem m, long bytes) {
        return super.alloc(m, Math.max(bytes, 1));
    }

    private Buffer ints(Mem m, int[] values) {
        Buffer b = alloc(m, 4L * values.length);
        ByteBuffer bb = ByteBuffer.allocate(4 * values.length).order(ByteOrder.nativeOrder());
        bb.asIntBuffer().put(values);
        Mem.write(b, bb.array());
        return b;
    }

    private Buffer poisoned(Mem m, long elements) {
        Buffer b = alloc(m, 4 * elements);
        Mem.poison(b);
        return b;
    }

    private static int[] read(Buffer b, long elements) {
        int[] out = new int[(int) elements];
        ByteBuffer.wrap(Mem.read(b)).order(ByteOrder.nativeOrder()).asIntBuffer().get(out);
        return out;
    }

    /** Rank {@code r}'s block in the uneven layout: {@code r + 1} elements (plus {@code extra}), the last rank none. */
    private long[] uneven(int extra) {
        long[] c = new long[size];
        for (int r = 0; r < size; r++) c[r] = r == size - 1 && size > 1 ? 0 : r + 1 + extra;
        return c;
    }

    /** Blocks of {@code counts} in reverse rank order, {@code gap} elements before each. */
    private static long[] reversedWithGaps(long[] counts, int gap) {
        long[] d = new long[counts.length];
        long at = gap;
        for (int r = counts.length - 1; r >= 0; r--) {
            d[r] = at;
            at += counts[r] + gap;
        }
        return d;
    }

    /** Elements up to the end of the last block, plus {@code tail}. */
    private static long span(long[] counts, long[] displs, int tail) {
        long s = 0;
        for (int r = 0; r < counts.length; r++) s = Math.max(s, displs[r] + counts[r]);
        return s + tail;
    }

    @FunctionalInterface
    private interface Element {
        int at(int block, int i);
    }

    /** A buffer of {@code length} ints: {@code value.at(r, i)} in block {@code r}, {@code fill} elsewhere. */
    private static int[] layout(long length, long[] counts, long[] displs, int fill, Element value) {
        int[] a = new int[(int) length];
        Arrays.fill(a, fill);
        for (int r = 0; r < counts.length; r++) {
            for (int i = 0; i < counts[r]; i++) a[(int) displs[r] + i] = value.at(r, i);
        }
        return a;
    }

    /** Distinct per (source, destination, index). */
    private static int value(int from, int to, int i) {
        return from * 100_000_000 + to * 1_000_000 + i;
    }

    // ---- vector collectives -------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void v_scatterVFromEveryRootWithUnevenBlocksAndGaps(Mem m) {
        m.assume(comm);
        for (int root = 0; root < size; root++) {
            for (boolean large : new boolean[] {false, root == 0}) {
                long[] counts = large ? uneven(LARGE) : uneven(0);
                long[] displs = reversedWithGaps(counts, 3);
                int from = root;
                Buffer send = rank == root ? ints(m, layout(span(counts, displs, 2), counts, displs, GAP, (r, i) -> value(from, r, i))) : null;
                Buffer recv = poisoned(m, counts[rank] + 2);
                comm.scatterV(send, rank == root ? counts : null, rank == root ? displs : null, recv, counts[rank], DataType.INT, root);
                int[] want = layout(counts[rank] + 2, new long[] {counts[rank]}, new long[] {0}, POISON, (r, i) -> value(from, rank, i));
                assertArrayEquals(want, read(recv, counts[rank] + 2), "scatterV from root " + root + (large ? " (large)" : "")
                        + ": rank " + rank + "'s block, then untouched bytes");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void v_gatherVToEveryRootLeavesTheGapsUntouched(Mem m) {
        m.assume(comm);
        for (int root = 0; root < size; root++) {
            for (boolean large : new boolean[] {false, root == size - 1}) {
                long[] counts = large ? uneven(LARGE) : uneven(0);
                long[] displs = reversedWithGaps(counts, 2);
                long length = span(counts, displs, 3);
                int to = root;
                Buffer send = ints(m, layout(counts[rank] + 1, new long[] {counts[rank]}, new long[] {0}, GAP, (r, i) -> value(rank, to, i)));
                Buffer recv = rank == root ? poisoned(m, length) : null;
                comm.gatherV(send, counts[rank], recv, rank == root ? counts : null, rank == root ? displs : null, DataType.INT, root);
                if (rank == root) {
                    assertArrayEquals(layout(length, counts, displs, POISON, (r, i) -> value(r, to, i)), read(recv, length),
                            "gatherV to root " + root + (large ? " (large)" : "") + ": every block, and nothing between them");
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void v_allGatherVWithUnevenBlocksAndGaps(Mem m) {
        m.assume(comm);
        for (boolean large : new boolean[] {false, true}) {
            long[] counts = large ? uneven(LARGE) : uneven(0);
            long[] displs = reversedWithGaps(counts, 1);
            long length = span(counts, displs, 1);
            Buffer send = ints(m, layout(counts[rank], new long[] {counts[rank]}, new long[] {0}, GAP, (r, i) -> value(rank, 0, i)));
            Buffer recv = poisoned(m, length);
            comm.allGatherV(send, counts[rank], recv, counts, displs, DataType.INT);
            assertArrayEquals(layout(length, counts, displs, POISON, (r, i) -> value(r, 0, i)), read(recv, length),
                    "allGatherV" + (large ? " (large)" : "") + ": every block, and nothing between them");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void v_allToAllVWithUnevenBlocksAndGaps(Mem m) {
        m.assume(comm);
        for (boolean large : new boolean[] {false, true}) {
            // rank i sends (i + 2j) % 3 elements to rank j (some none), plus LARGE in the large case
            long[] sendCounts = new long[size], recvCounts = new long[size];
            for (int j = 0; j < size; j++) {
                sendCounts[j] = (rank + 2L * j) % 3 + (large ? LARGE : 0);
                recvCounts[j] = (j + 2L * rank) % 3 + (large ? LARGE : 0);
            }
            long[] sendDispls = reversedWithGaps(sendCounts, 2);
            long[] recvDispls = new long[size];
            long at = 1;
            for (int j = 0; j < size; j++) {
                recvDispls[j] = at;
                at += recvCounts[j] + 1;
            }
            long length = span(recvCounts, recvDispls, 2);
            Buffer send = ints(m, layout(span(sendCounts, sendDispls, 1), sendCounts, sendDispls, GAP, (j, i) -> value(rank, j, i)));
            Buffer recv = poisoned(m, length);
            comm.allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, DataType.INT);
            assertArrayEquals(layout(length, recvCounts, recvDispls, POISON, (j, i) -> value(j, rank, i)), read(recv, length),
                    "allToAllV" + (large ? " (large)" : "") + ": every rank's block for this rank, and nothing between them");
        }
    }

    // ---- reduce-scatter, scan, exscan ---------------------------------------------------------

    /** Type, operator pairs of the reduction tests: MPI's own (INT, DOUBLE with SUM, MAX) and one Ferry reduces itself (FLOAT16 SUM). */
    private static final Object[][] REDUCTIONS = {
        {DataType.INT, ReduceOp.SUM}, {DataType.INT, ReduceOp.MAX}, {DataType.DOUBLE, ReduceOp.SUM}, {DataType.DOUBLE, ReduceOp.MAX},
        {DataType.FLOAT16, ReduceOp.SUM}};

    private Buffer input(Mem m, DataType t, ReduceOp op, long count) {
        HostBuffer in = Data.reductionInput(t, op, rank, count);
        closeAfter(in);
        Buffer b = alloc(m, t.bytes(count));
        Mem.write(b, Mem.read(in));
        return b;
    }

    private Buffer poisonedOf(Mem m, DataType t, long count, long extra) {
        Buffer b = alloc(m, t.bytes(count + extra));
        Mem.poison(b);
        return b;
    }

    /** Elements {@code [0, count)} of {@code got} are the reduction over {@code ranks} ranks of element {@code first + i}; the rest is poison. */
    private static void assertReduced(Buffer got, DataType t, ReduceOp op, int ranks, long first, long count, String what) {
        byte[] raw = Mem.read(got);
        MemorySegment g = MemorySegment.ofArray(raw);
        for (long i = 0; i < count; i++) {
            assertEquals(Data.expected(t, op, ranks, first + i), Data.get(g, t, i), what + ": element " + i + " (" + t + " " + op + ")");
        }
        for (long i = t.bytes(count); i < raw.length; i++) {
            assertEquals(Mem.POISON, raw[(int) i], what + ": byte " + i + " past the result was written");
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void r_reduceScatterBlock(Mem m) {
        m.assume(comm);
        for (Object[] tr : REDUCTIONS) {
            DataType t = (DataType) tr[0];
            ReduceOp op = (ReduceOp) tr[1];
            for (long count : new long[] {0, 1, 7, t == DataType.INT && op == ReduceOp.SUM ? LARGE + 3 : 2}) {
                Buffer recv = poisonedOf(m, t, count, 2);
                comm.reduceScatterBlock(input(m, t, op, count * size), recv, count, t, op);
                assertReduced(recv, t, op, size, rank * count, count, "reduceScatterBlock of " + count + " per rank");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void r_reduceScatterWithUnevenBlocks(Mem m) {
        m.assume(comm);
        for (Object[] tr : REDUCTIONS) {
            DataType t = (DataType) tr[0];
            ReduceOp op = (ReduceOp) tr[1];
            for (boolean large : new boolean[] {false, t == DataType.INT && op == ReduceOp.SUM}) {
                long[] counts = large ? uneven(LARGE) : uneven(0);
                long total = Arrays.stream(counts).sum(), first = 0;
                for (int r = 0; r < rank; r++) first += counts[r];
                Buffer recv = poisonedOf(m, t, counts[rank], 3);
                comm.reduceScatter(input(m, t, op, total), recv, counts, t, op);
                assertReduced(recv, t, op, size, first, counts[rank], "reduceScatter with counts " + Arrays.toString(counts));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void r_scanIsTheReductionOverRanksUpToThisOne(Mem m) {
        m.assume(comm);
        for (Object[] tr : REDUCTIONS) {
            DataType t = (DataType) tr[0];
            ReduceOp op = (ReduceOp) tr[1];
            for (long count : new long[] {0, 1, 7, t == DataType.INT && op == ReduceOp.SUM ? LARGE + 5 : 3}) {
                Buffer recv = poisonedOf(m, t, count, 2);
                comm.scan(input(m, t, op, count), recv, count, t, op);
                assertReduced(recv, t, op, rank + 1, 0, count, "scan of " + count);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void r_exscanIsTheReductionOverLowerRanksAndLeavesRankZeroAlone(Mem m) {
        m.assume(comm);
        for (Object[] tr : REDUCTIONS) {
            DataType t = (DataType) tr[0];
            ReduceOp op = (ReduceOp) tr[1];
            for (long count : new long[] {0, 1, 7, t == DataType.INT && op == ReduceOp.SUM ? LARGE + 5 : 3}) {
                Buffer recv = poisonedOf(m, t, count, 2);
                comm.exscan(input(m, t, op, count), recv, count, t, op);
                if (rank == 0) {
                    byte[] raw = Mem.read(recv);
                    for (int i = 0; i < raw.length; i++) assertEquals(Mem.POISON, raw[i], "exscan: rank 0's receive buffer is never written (byte " + i + ")");
                } else {
                    assertReduced(recv, t, op, rank, 0, count, "exscan of " + count);
                }
                // rank 0 may pass no receive buffer at all
                Buffer again = rank == 0 ? null : poisonedOf(m, t, count, 0);
                comm.exscan(input(m, t, op, count), again, count, t, op);
                if (rank != 0) assertReduced(again, t, op, rank, 0, count, "exscan with no receive buffer at rank 0");
            }
        }
    }

    // ---- bad input: a specific exception on every rank, before anything is sent ----------------

    @Test
    void x_badBlocksAreSpecificExceptions() {
        Mem m = Mem.PAGEABLE;
        long[] ones = new long[size];
        Arrays.fill(ones, 1);
        long[] at = new long[size];
        for (int r = 0; r < size; r++) at[r] = r;
        Buffer buf = poisoned(m, size + 4L);
        Buffer out = poisoned(m, size + 4L);
        Buffer one = poisoned(m, 1);
        // each rank is the root of its own call, so that every rank checks the root's arguments
        int me = rank;
        assertThrows(InvalidArgumentException.class, () -> comm.scatterV(buf, null, at, one, 1, DataType.INT, me), "null sendCounts at root");
        assertThrows(InvalidArgumentException.class, () -> comm.scatterV(buf, ones, null, one, 1, DataType.INT, me), "null displacements at root");
        assertThrows(InvalidArgumentException.class, () -> comm.scatterV(buf, Arrays.copyOf(ones, size + 1), at, one, 1, DataType.INT, me),
                "sendCounts with one entry too many");
        assertThrows(InvalidArgumentException.class, () -> comm.gatherV(one, 1, out, ones, Arrays.copyOf(at, size - 1), DataType.INT, me),
                "displacements with one entry too few");
        long[] negative = ones.clone();
        negative[size - 1] = -1;
        assertThrows(InvalidCountException.class, () -> comm.allGatherV(one, 1, out, negative, at, DataType.INT),
                "a negative count");
        long[] backwards = at.clone();
        backwards[0] = -2;
        assertThrows(InvalidCountException.class, () -> comm.scatterV(buf, ones, backwards, one, 1, DataType.INT, me), "a negative displacement");
        long[] past = at.clone();
        past[size - 1] = size + 4L; // one element at the buffer's end: past it
        assertThrows(BufferTooSmallException.class, () -> comm.scatterV(buf, ones, past, one, 1, DataType.INT, me), "a block past the buffer");
        assertThrows(BufferTooSmallException.class, () -> comm.gatherV(one, 1, out, ones, past, DataType.INT, me), "a receive block past the buffer");
        long[] twice = at.clone();
        if (size > 1) {
            twice[1] = 0;
            assertThrows(BufferOverlapException.class, () -> comm.gatherV(one, 1, out, ones, twice, DataType.INT, me), "overlapping receive blocks");
        }
        long[] two = ones.clone();
        two[rank] = 2;
        assertThrows(InvalidCountException.class, () -> comm.scatterV(buf, two, reversedWithGaps(two, 0), one, 1, DataType.INT, me),
                "root's own block differs from its receive count");
        assertThrows(InvalidCountException.class, () -> comm.allGatherV(one, 1, out, two, reversedWithGaps(two, 0), DataType.INT),
                "recvCounts[rank] differs from sendCount");
        assertThrows(InvalidCountException.class, () -> comm.allToAllV(buf, two, reversedWithGaps(two, 0), out, ones, at, DataType.INT),
                "a rank's own block differs between send and receive");
        assertThrows(InvalidRankException.class, () -> comm.gatherV(one, 1, out, ones, at, DataType.INT, size), "a root outside the communicator");
        assertThrows(BufferReadOnlyException.class, () -> comm.allGatherV(one, 1, HostBuffer.wrap(((HostBuffer) out).segment().asReadOnly()),
                ones, at, DataType.INT), "a read-only receive buffer");
        assertThrows(InvalidArgumentException.class, () -> comm.reduceScatter(buf, one, new long[size + 1], DataType.INT, ReduceOp.SUM),
                "recvCounts of the wrong length");
        assertThrows(InvalidCountException.class, () -> comm.reduceScatter(buf, one, negative, DataType.INT, ReduceOp.SUM), "a negative receive count");
        if (size > 1) {
            assertThrows(BufferTooSmallException.class, () -> comm.reduceScatterBlock(one, out, 1, DataType.INT, ReduceOp.SUM),
                    "a send buffer smaller than size() blocks");
        }
        assertThrows(InvalidReduceOpException.class, () -> comm.reduceScatterBlock(buf, one, 1, DataType.INT, ReduceOp.MINLOC), "MINLOC of INT");
        assertThrows(InvalidArgumentException.class, () -> comm.scan(one, out, 1, DataType.INT, null), "a null operator");
        assertThrows(BufferOverlapException.class, () -> comm.scan(buf, buf.slice(2), 1, DataType.INT, ReduceOp.SUM), "aliased scan buffers");
        if (rank != 0) {
            assertThrows(InvalidArgumentException.class, () -> comm.exscan(one, null, 1, DataType.INT, ReduceOp.SUM),
                    "only rank 0 may pass no exscan receive buffer");
        }
        // the communicator still works
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer sum = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.LONG, 0, rank + 1);
            comm.scan(in, sum, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals((rank + 1) * (rank + 2) / 2.0, Data.get(sum.segment(), DataType.LONG, 0), "scan after the rejected calls");
        }
    }
}
