// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.HostBuffer;
import dev.ferry.MatchedMessage;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.TruncationException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * MPI's matching semantics for messages longer than the binding's piece limit
 * ({@code ferry.maxPieceBytes}; run with a small one, e.g. 4096, so that messages of a few pieces
 * exercise it): a Ferry message must be ONE message for MPI's matching rules. Each test sends
 * messages of several pieces, exact multiples of a piece and not, between ranks 0 and 1 (other
 * ranks only meet in the barrier after each test), and checks every byte and byte count:
 * <ul>
 *   <li>a receive shorter than the message raises TruncationException and leaves the next
 *       message intact, also when it is shorter by whole pieces;</li>
 *   <li>a receive longer than a message that is an exact multiple of the piece takes only that
 *       message, not the next one;</li>
 *   <li>wildcard receives (ANY_SOURCE, ANY_TAG; blocking, non-blocking, sendRecv) get whole
 *       messages, never pieces of several;</li>
 *   <li>several outstanding receives with one tag get the messages in send order, mixed sizes;</li>
 *   <li>bytes are checked as whole elements of the receive type (DataTypeMismatchException).</li>
 * </ul>
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public abstract class MessageMatchingContract {
    protected Communicator comm;
    protected int rank;
    protected int size;
    /** The piece limit of this run: messages of 1.5 to 4 pieces. */
    protected long piece;
    private final List<HostBuffer> buffers = new ArrayList<>();

    @BeforeEach
    void open() {
        comm = TestWorld.world().duplicate();
        rank = comm.rank();
        size = comm.size();
        // the MPI bindings' piece limit: the setting, within one MPI count (BindingTransport in mpi-ffm)
        piece = Math.min(dev.ferry.Settings.process().get(dev.ferry.FerrySettings.MAX_PIECE_BYTES), Integer.MAX_VALUE);
        assertTrue(piece <= 1 << 20, "run this suite with a small -Dferry.maxPieceBytes (e.g. 4096); it is " + piece);
    }

    @AfterEach
    void close() {
        try {
            comm.barrier();
        } finally {
            comm.close();
            buffers.forEach(HostBuffer::close);
            buffers.clear();
        }
    }

    private HostBuffer buffer(long bytes) {
        HostBuffer b = HostBuffer.allocate(Math.max(bytes, 1));
        buffers.add(b);
        b.segment().fill((byte) 0x5a); // poison
        return b;
    }

    /** A message whose every byte says which message it is: byte i = seed * 31 + i. */
    private HostBuffer message(long bytes, int seed) {
        HostBuffer b = buffer(bytes);
        for (long i = 0; i < bytes; i++) {
            b.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
        return b;
    }

    /** Asserts that {@code b} holds message {@code seed} of {@code bytes} bytes, and the poison after it. */
    private static void assertMessage(Buffer b, long bytes, int seed, long capacity, String what) {
        HostBuffer h = (HostBuffer) b;
        for (long i = 0; i < bytes; i++) {
            byte got = h.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, i);
            if (got != (byte) (seed * 31 + i)) {
                throw new AssertionError(what + ": byte " + i + " of " + bytes + " is " + got + ", message " + seed + " has " + (byte) (seed * 31 + i)
                        + " (pieces of another message?)");
            }
        }
        for (long i = bytes; i < capacity; i++) {
            if (h.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != (byte) 0x5a) {
                throw new AssertionError(what + ": byte " + i + " past the " + bytes + "-byte message was written");
            }
        }
    }

    @Test
    void a_receiveShorterByWholePiecesTruncatesAndLeavesTheNextMessage() {
        long big = 3 * piece, next = 16;
        if (rank == 0) {
            comm.send(message(big, 1), big, DataType.BYTE, 1, 7);
            comm.send(message(next, 2), next, DataType.BYTE, 1, 7);
        } else if (rank == 1) {
            HostBuffer small = buffer(2 * piece);
            assertThrows(TruncationException.class, () -> comm.recv(small, 2 * piece, DataType.BYTE, 0, 7));
            HostBuffer rest = buffer(big);
            Status s = comm.recv(rest, big, DataType.BYTE, 0, 7);
            assertEquals(next, s.byteCount(), "the receive after the truncated one must get the NEXT message, not a piece of the first");
            assertMessage(rest, next, 2, big, "the message after a truncation");
        }
    }

    @Test
    void b_receiveShorterByAPartialPieceTruncatesAndLeavesTheNextMessage() {
        long big = 2 * piece + piece / 2, next = 3 * piece;
        if (rank == 0) {
            comm.send(message(big, 3), big, DataType.BYTE, 1, 8);
            comm.send(message(next, 4), next, DataType.BYTE, 1, 8);
        } else if (rank == 1) {
            HostBuffer small = buffer(2 * piece);
            Request r = comm.irecv(small, 2 * piece, DataType.BYTE, 0, 8);
            assertThrows(TruncationException.class, r::waitFor);
            HostBuffer rest = buffer(4 * piece);
            Status s = comm.recv(rest, 4 * piece, DataType.BYTE, 0, 8);
            assertEquals(next, s.byteCount());
            assertMessage(rest, next, 4, 4 * piece, "the message after a truncated irecv");
        }
    }

    @Test
    void c_receiveLongerThanAnExactMultipleTakesOnlyThatMessage() {
        long exact = 2 * piece, next = 8;
        if (rank == 0) {
            comm.send(message(exact, 5), exact, DataType.BYTE, 1, 9);
            comm.send(message(next, 6), next, DataType.BYTE, 1, 9);
        } else if (rank == 1) {
            HostBuffer a = buffer(4 * piece), b = buffer(4 * piece);
            Status s = comm.recv(a, 4 * piece, DataType.BYTE, 0, 9);
            assertEquals(exact, s.byteCount(), "a longer receive gets exactly the message");
            assertMessage(a, exact, 5, 4 * piece, "first message");
            Request r = comm.irecv(b, 4 * piece, DataType.BYTE, 0, 9);
            assertEquals(next, r.waitFor().byteCount(), "the next message is still there");
            assertMessage(b, next, 6, 4 * piece, "second message");
        }
    }

    @Test
    void d_severalOutstandingReceivesWithOneTagGetWholeMessagesInOrder() {
        long[] sizes = {3 * piece + 16, 8, 2 * piece, piece + 1000, 4 * piece, 0, piece};
        if (rank == 0) {
            List<Request> sends = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                sends.add(comm.isend(message(sizes[i], 10 + i), sizes[i], DataType.BYTE, 1, 3));
            }
            Request.waitAll(sends);
        } else if (rank == 1) {
            long cap = 4 * piece + 64;
            List<Request> recvs = new ArrayList<>();
            List<HostBuffer> bufs = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                HostBuffer b = buffer(cap);
                bufs.add(b);
                recvs.add(comm.irecv(b, cap, DataType.BYTE, 0, 3));
            }
            for (int i = sizes.length - 1; i >= 0; i--) { // completed in reverse order
                Status s = recvs.get(i).waitFor();
                assertEquals(sizes[i], s.byteCount(), "receive " + i);
                assertMessage(bufs.get(i), sizes[i], 10 + i, cap, "receive " + i);
            }
        }
    }

    @Test
    void e_wildcardNonBlockingReceivesGetWholeMessages() {
        // rank 1 (and, with more ranks, every rank > 0) sends messages of different sizes and tags;
        // rank 0 posts every receive at once with ANY_SOURCE and ANY_TAG
        long[] sizes = {2 * piece, 3 * piece + 8, 16, piece};
        if (rank == 0) {
            int n = (size - 1) * sizes.length;
            long cap = 4 * piece;
            List<Request> recvs = new ArrayList<>();
            List<HostBuffer> bufs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                HostBuffer b = buffer(cap);
                bufs.add(b);
                recvs.add(comm.irecv(b, cap, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG));
            }
            List<Status> st = Request.waitAll(recvs);
            boolean[][] seen = new boolean[size][sizes.length];
            for (int i = 0; i < n; i++) {
                Status s = st.get(i);
                int k = s.tag() - 20;
                assertTrue(s.source() >= 1 && s.source() < size && k >= 0 && k < sizes.length, "status " + s);
                assertEquals(sizes[k], s.byteCount(), "message with tag " + s.tag() + " from " + s.source());
                assertMessage(bufs.get(i), sizes[k], 100 * s.source() + k, cap, "wildcard receive " + i + " (" + s + ")");
                assertTrue(!seen[s.source()][k], "message " + s + " received twice");
                seen[s.source()][k] = true;
            }
        } else {
            List<Request> sends = new ArrayList<>();
            for (int k = 0; k < sizes.length; k++) {
                sends.add(comm.isend(message(sizes[k], 100 * rank + k), sizes[k], DataType.BYTE, 0, 20 + k));
            }
            Request.waitAll(sends);
        }
    }

    @Test
    void f_wildcardBlockingReceivesGetWholeMessages() {
        long[] sizes = {3 * piece, piece / 2, 2 * piece + 24};
        if (rank == 0) {
            long cap = 4 * piece;
            for (int i = 0; i < (size - 1) * sizes.length; i++) {
                HostBuffer b = buffer(cap);
                Status s = comm.recv(b, cap, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
                int k = s.tag() - 40;
                assertTrue(k >= 0 && k < sizes.length, "status " + s);
                assertEquals(sizes[k], s.byteCount(), "message " + s);
                assertMessage(b, sizes[k], 50 * s.source() + k, cap, "blocking wildcard receive " + i);
            }
        } else {
            for (int k = 0; k < sizes.length; k++) {
                comm.send(message(sizes[k], 50 * rank + k), sizes[k], DataType.BYTE, 0, 40 + k);
            }
        }
    }

    @Test
    void g_sendRecvWithWildcardsExchangesWholeMessages() {
        if (rank > 1) {
            return;
        }
        int peer = 1 - rank;
        long mine = rank == 0 ? 3 * piece : 2 * piece + 40, theirs = rank == 0 ? 2 * piece + 40 : 3 * piece;
        // a second message of the same tag beside it: a sendRecv must not take a piece of it
        HostBuffer out = message(mine, 60 + rank), in = buffer(4 * piece), second = buffer(4 * piece);
        // posted first, so it takes the peer's first message (the short one); the sendRecv the long one
        Request early = comm.irecv(second, 4 * piece, DataType.BYTE, peer, 11);
        Request extra = comm.isend(message(16, 70 + rank), 16, DataType.BYTE, peer, 11);
        Status s = comm.sendRecv(out, mine, DataType.BYTE, peer, 11, in, 4 * piece, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
        Status t = early.waitFor();
        extra.waitFor();
        Status big = s.byteCount() == theirs ? s : t, small = s.byteCount() == theirs ? t : s;
        assertEquals(theirs, big.byteCount(), "sendRecv: " + s + ", then recv: " + t);
        assertEquals(16, small.byteCount(), "sendRecv: " + s + ", then recv: " + t);
        assertMessage(big == s ? in : second, theirs, 60 + peer, 4 * piece, "the peer's long message");
        assertMessage(big == s ? second : in, 16, 70 + peer, 4 * piece, "the peer's short message");
    }

    @Test
    void h_wholeElementsAreCheckedOnLongMessages() {
        long odd = 2 * piece + 4; // not a whole number of LONGs
        if (rank == 0) {
            comm.send(message(odd, 80), odd, DataType.BYTE, 1, 12);
            comm.send(message(odd, 81), odd, DataType.BYTE, 1, 12);
            comm.send(message(8, 82), 8, DataType.BYTE, 1, 12);
        } else if (rank == 1) {
            HostBuffer b = buffer(4 * piece);
            assertThrows(DataTypeMismatchException.class, () -> comm.recv(b, 4 * piece / 8, DataType.LONG, 0, 12));
            Request r = comm.irecv(b, 4 * piece / 8, DataType.LONG, 0, 12);
            assertThrows(DataTypeMismatchException.class, r::waitFor);
            HostBuffer c = buffer(4 * piece);
            assertEquals(8, comm.recv(c, 4 * piece / 8, DataType.LONG, 0, 12).byteCount(), "the message after the mismatches");
            assertMessage(c, 8, 82, 4 * piece, "the message after the mismatches");
        }
    }

    @Test
    void i_largeRootedAndAllToAllCollectivesAreCorrect() {
        // blocks of 1.5 pieces: every buffer exceeds the limit, so these run as point-to-point messages
        long block = piece + piece / 2;
        HostBuffer send = buffer(block * size), recv = buffer(block * size);
        for (int r = 0; r < size; r++) {
            for (long i = 0; i < block; i++) {
                send.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, r * block + i, (byte) (rank * 7 + r * 13 + i));
            }
        }
        comm.allToAll(send, recv, block, DataType.BYTE);
        for (int r = 0; r < size; r++) {
            for (long i = 0; i < block; i++) {
                assertEquals((byte) (r * 7 + rank * 13 + i), recv.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, r * block + i),
                        "allToAll block from " + r + " byte " + i);
            }
        }
        HostBuffer all = buffer(block * size);
        comm.allGather(send.slice(0, block), all, block, DataType.BYTE);
        for (int r = 0; r < size; r++) {
            assertEquals((byte) (r * 7 + 5), all.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, r * block + 5), "allGather block " + r);
        }
        HostBuffer mine = buffer(block);
        comm.scatter(rank == 0 ? send : null, mine, block, DataType.BYTE, 0);
        assertEquals((byte) (rank * 13 + 3), mine.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 3), "scatter");
        HostBuffer gathered = buffer(block * size);
        comm.gather(mine, rank == size - 1 ? gathered : null, block, DataType.BYTE, size - 1);
        if (rank == size - 1) {
            for (int r = 0; r < size; r++) {
                assertEquals((byte) (r * 13 + 3), gathered.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, r * block + 3), "gather block " + r);
            }
        }
    }

    // ---- the order in which outstanding receives match (MPI 3.1, section 3.5); Ferry's own matching
    // of receives (ferry.matchReceives, device irecv) must give exactly what MPI gives

    @Test
    void j_eachMessageGoesToTheEarliestOutstandingReceiveThatMatchesIt() {
        if (rank == 0) {
            Status ready = comm.recv(buffer(8), 8, DataType.BYTE, 1, 29); // rank 1's receives are posted
            assertEquals(0, ready.byteCount());
            comm.send(message(3 * piece, 1), 3 * piece, DataType.BYTE, 1, 26);
            comm.send(message(16, 2), 16, DataType.BYTE, 1, 25);
            comm.send(message(piece + 8, 3), piece + 8, DataType.BYTE, 1, 26);
        } else if (rank == 1) {
            long cap = 4 * piece;
            HostBuffer a = buffer(cap), b = buffer(cap), c = buffer(cap);
            Request ra = comm.irecv(a, cap, DataType.BYTE, 0, Communicator.ANY_TAG);
            Request rb = comm.irecv(b, cap, DataType.BYTE, 0, 26);
            Request rc = comm.irecv(c, cap, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
            comm.send(buffer(0), 0, DataType.BYTE, 0, 29);
            Status sc = rc.waitFor(), sb = rb.waitFor(), sa = ra.waitFor(); // completed in another order than posted
            assertEquals(26, sa.tag(), "the first receive (any tag) takes the first message");
            assertMessage(a, 3 * piece, 1, cap, "first receive");
            assertEquals(25, sc.tag(), "the tag-25 message goes to the third receive: the second takes only tag 26");
            assertMessage(c, 16, 2, cap, "third receive");
            assertEquals(26, sb.tag());
            assertMessage(b, piece + 8, 3, cap, "second receive");
        }
    }

    @Test
    void k_aLaterReceiveIsNotHeldBehindAnEarlierOneStillWaiting() {
        if (rank == 0) {
            comm.send(message(2 * piece, 4), 2 * piece, DataType.BYTE, 1, 31);
            comm.recv(buffer(8), 8, DataType.BYTE, 1, 32); // the message for the earlier receive is sent only after this
            comm.send(message(24, 5), 24, DataType.BYTE, 1, 30);
        } else if (rank == 1) {
            long cap = 4 * piece;
            HostBuffer early = buffer(cap), later = buffer(cap);
            Request waiting = comm.irecv(early, cap, DataType.BYTE, 0, 30);
            Status s = comm.recv(later, cap, DataType.BYTE, Communicator.ANY_SOURCE, 31);
            assertEquals(2 * piece, s.byteCount(), "a receive posted later takes its message while an earlier one still waits");
            assertMessage(later, 2 * piece, 4, cap, "later receive");
            comm.send(buffer(8), 8, DataType.BYTE, 0, 32);
            assertEquals(24, waiting.waitFor().byteCount());
            assertMessage(early, 24, 5, cap, "earlier receive");
        }
    }

    @Test
    void l_probesSeeOnlyWhatOutstandingReceivesLeave() {
        if (rank == 0) {
            comm.send(message(piece / 2, 6), piece / 2, DataType.BYTE, 1, 33);
            comm.send(message(2 * piece, 7), 2 * piece, DataType.BYTE, 1, 34);
        } else if (rank == 1) {
            long cap = 4 * piece;
            HostBuffer a = buffer(cap);
            Request r = comm.irecv(a, cap, DataType.BYTE, 0, 33);
            Status probed = comm.probe(0, Communicator.ANY_TAG);
            assertEquals(34, probed.tag(), "the tag-33 message belongs to the receive posted before the probe");
            assertEquals(2 * piece, probed.byteCount());
            MatchedMessage m = comm.mprobe(0, Communicator.ANY_TAG);
            assertEquals(34, m.status().tag());
            HostBuffer b = buffer(cap);
            assertEquals(2 * piece, m.recv(b, cap, DataType.BYTE).byteCount());
            assertMessage(b, 2 * piece, 7, cap, "matched message");
            assertEquals(piece / 2, r.waitFor().byteCount());
            assertMessage(a, piece / 2, 6, cap, "receive posted before the probes");
            assertTrue(comm.iprobe(0, Communicator.ANY_TAG).isEmpty(), "nothing is left");
        }
    }

    @Test
    void m_aTruncatingIrecvLetsItsSenderFinishAndLeavesTheNextMessage() {
        long big = 1 << 20, small = 4 * piece;
        if (rank == 0) {
            comm.send(message(big, 8), big, DataType.BYTE, 1, 35); // returns: the receiver truncates it without leaving this send waiting
            comm.send(message(40, 9), 40, DataType.BYTE, 1, 35);
        } else if (rank == 1) {
            HostBuffer b = buffer(small);
            Request r = comm.irecv(b, small, DataType.BYTE, 0, 35);
            assertThrows(TruncationException.class, r::waitFor);
            assertMessage(b, small, 8, small, "the first bytes of a truncated message");
            HostBuffer c = buffer(small);
            assertEquals(40, comm.irecv(c, small, DataType.BYTE, 0, 35).waitFor().byteCount());
            assertMessage(c, 40, 9, small, "the message after a truncated irecv");
        }
    }

    @Test
    void n_aCancelledReceiveLeavesItsMessageToTheNextOne() {
        if (rank == 0) {
            comm.recv(buffer(8), 8, DataType.BYTE, 1, 37);
            comm.send(message(piece + 3, 10), piece + 3, DataType.BYTE, 1, 36);
        } else if (rank == 1) {
            long cap = 4 * piece;
            HostBuffer a = buffer(cap), b = buffer(cap);
            Request first = comm.irecv(a, cap, DataType.BYTE, 0, 36);
            assertTrue(first.cancel(), "a receive that matched nothing is cancelled");
            assertTrue(first.waitFor().cancelled());
            Request second = comm.irecv(b, cap, DataType.BYTE, Communicator.ANY_SOURCE, 36);
            comm.send(buffer(8), 8, DataType.BYTE, 0, 37);
            assertEquals(piece + 3, second.waitFor().byteCount());
            assertMessage(b, piece + 3, 10, cap, "the receive after a cancelled one");
            assertMessage(a, 0, 0, cap, "the cancelled receive's buffer");
        }
    }
}
