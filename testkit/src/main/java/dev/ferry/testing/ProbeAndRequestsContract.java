// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidTagException;
import dev.ferry.MatchedMessage;
import dev.ferry.MessageAlreadyReceivedException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.TruncationException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Probing, matched messages, and completing and cancelling requests, on real MPI ranks: probe then
 * allocate exactly; iprobe polling; ANY_SOURCE probes with every rank sending; a matched message
 * that a competing receive on another thread cannot take; probes of messages a backend carries in
 * pieces (run with a small {@code ferry.maxPieceBytes}; on {@code staged}, any message over the
 * eager limit) reporting the whole size; waitAny, testAny and testAll over sends and receives;
 * cancel of an unmatched receive, of a completed request and of a send; and the bad inputs of
 * these calls. Data tests run for pageable, pinned and device memory where available.
 *
 * <p>A backend runs it with a one-line subclass listed in an {@link MpiJob} of its integration
 * test. Methods run in name order on every rank; each test gets its own duplicate of the world
 * communicator. Messages flow between pairs (0,1), (2,3), ...; an odd last rank sits out.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public abstract class ProbeAndRequestsContract extends RankContract {
    /** Message sizes in bytes: empty, one, odd, one over a typical staged eager limit, just over a mebibyte. */
    protected static final int[] SIZES = {0, 1, 7, 16 * 1024 + 1, (1 << 20) + 3};


    /** The partner of this rank, or -1 when it sits out (odd size). */
    protected int peer() {
        int p = rank % 2 == 0 ? rank + 1 : rank - 1;
        return p < size ? p : -1;
    }

    /** A buffer of kind {@code m} of at least one byte, closed after the test. */
    @Override
    protected Buffer alloc(Mem m, long bytes) {
        return super.alloc(m, Math.max(bytes, 1));
    }

    protected Buffer filled(Mem m, byte[] data) {
        Buffer b = alloc(m, data.length);
        Mem.write(b, data);
        return b;
    }

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
                throw new AssertionError(what + ": byte " + i + " past the message was overwritten");
            }
        }
    }

    /** A size that the backend carries in several pieces when it is run with a small {@code ferry.maxPieceBytes}. */
    protected static long splitSize() {
        long piece = dev.ferry.Settings.process().get(dev.ferry.FerrySettings.MAX_PIECE_BYTES);
        return piece <= 1 << 20 ? 3 * piece + 5 : (1 << 20) + 5;
    }

    // ---- probe ---------------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void a_probeThenAllocateExactlyAndReceive(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        for (int n : SIZES) {
            if (rank % 2 == 0) {
                comm.send(filled(m, Data.bytes(n, rank, n)), n, DataType.BYTE, peer, 21);
                comm.send(filled(m, Data.bytes(n + 1, rank, n)), n, DataType.BYTE, peer, 22);
            } else {
                Status st = comm.probe(peer, 21);
                assertEquals(new Status(peer, 21, n), st, "probe of " + n + " bytes");
                Buffer exact = alloc(m, st.byteCount());
                Status got = comm.recv(exact, st.count(DataType.BYTE), DataType.BYTE, st.source(), st.tag());
                assertEquals(st, got, "the receive after the probe gets the probed message");
                if (n > 0) assertArrayEquals(Data.bytes(n, peer, n), Mem.read(exact), "message of " + n + " bytes");
                Status any = comm.probe(Communicator.ANY_SOURCE, Communicator.ANY_TAG);
                assertEquals(new Status(peer, 22, n), any, "ANY_SOURCE/ANY_TAG probe of " + n + " bytes");
                Buffer second = poisoned(m, n + 8);
                assertEquals(any, comm.recv(second, n + 8, DataType.BYTE, any.source(), any.tag()));
                assertReceived(Data.bytes(n + 1, peer, n), Mem.read(second), "second message of " + n + " bytes");
            }
        }
    }

    @Test
    void a_probeGivesElementCounts() {
        int peer = peer();
        if (peer < 0) return;
        if (rank % 2 == 0) {
            comm.send(filled(Mem.PAGEABLE, Data.bytes(3, rank, 8 * 1001)), 1001, DataType.DOUBLE, peer, 23);
        } else {
            Status st = comm.probe(peer, 23);
            assertEquals(1001, st.count(DataType.DOUBLE));
            assertEquals(2002, st.count(DataType.INT));
            Buffer b = alloc(Mem.PAGEABLE, st.byteCount());
            comm.recv(b, st.count(DataType.DOUBLE), DataType.DOUBLE, peer, 23);
            assertArrayEquals(Data.bytes(3, peer, 8 * 1001), Mem.read(b));
        }
    }

    @Test
    void b_iprobePolling() {
        int peer = peer();
        if (peer < 0) return;
        int[] sizes = {5, 100_000};
        if (rank % 2 == 1) {
            assertEquals(Optional.empty(), comm.iprobe(peer, 24), "nothing was sent yet");
            assertEquals(Optional.empty(), comm.iprobe(Communicator.ANY_SOURCE, Communicator.ANY_TAG), "nothing was sent yet");
        }
        comm.barrier(); // the receiver has polled once before anything was sent
        for (int n : sizes) {
            if (rank % 2 == 0) {
                comm.send(filled(Mem.PAGEABLE, Data.bytes(n, rank, n)), n, DataType.BYTE, peer, 24);
            } else {
                Optional<Status> st;
                long polls = 0;
                while ((st = comm.iprobe(peer, 24)).isEmpty()) {
                    polls++;
                    Thread.onSpinWait();
                }
                assertEquals(new Status(peer, 24, n), st.get(), "after " + polls + " polls");
                assertEquals(st, comm.iprobe(peer, 24), "a second iprobe finds the same message");
                Buffer b = alloc(Mem.PAGEABLE, n);
                comm.recv(b, n, DataType.BYTE, peer, 24);
                assertArrayEquals(Data.bytes(n, peer, n), Mem.read(b));
            }
        }
    }

    @Test
    void c_anySourceProbeWithEveryRankSending() {
        Assumptions.assumeTrue(size >= 2, "needs two ranks");
        if (rank != 0) {
            int n = rank * 40_000 + 3; // small and staged-chunked messages mixed
            comm.send(filled(Mem.PAGEABLE, Data.bytes(31, rank, n)), n, DataType.BYTE, 0, 31);
            comm.send(filled(Mem.PAGEABLE, Data.bytes(32, rank, rank)), rank, DataType.BYTE, 0, 32);
            return;
        }
        Set<Integer> seen = new HashSet<>();
        for (int i = 1; i < 2 * size - 1; i++) {
            Status st = comm.probe(Communicator.ANY_SOURCE, Communicator.ANY_TAG);
            int from = st.source();
            long expected = st.tag() == 31 ? from * 40_000L + 3 : from;
            assertEquals(expected, st.byteCount(), "message of rank " + from + " tag " + st.tag());
            Buffer b = alloc(Mem.PAGEABLE, st.byteCount());
            assertEquals(st, comm.recv(b, st.byteCount(), DataType.BYTE, from, st.tag()));
            assertArrayEquals(Data.bytes(st.tag(), from, (int) st.byteCount()), Arrays.copyOf(Mem.read(b), (int) st.byteCount()));
            seen.add(from * 100 + st.tag());
        }
        assertEquals(2 * (size - 1), seen.size(), "every message of every rank, once: " + seen);
    }

    // ---- matched messages ----------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void d_matchedMessageReceivesWithRecvAndIrecv(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        for (int n : SIZES) {
            if (rank % 2 == 0) {
                comm.send(filled(m, Data.bytes(n, rank, n)), n, DataType.BYTE, peer, 41);
                comm.send(filled(m, Data.bytes(n + 1, rank, n)), n, DataType.BYTE, peer, 41);
            } else {
                MatchedMessage first = comm.mprobe(peer, 41);
                assertEquals(new Status(peer, 41, n), first.status());
                assertFalse(first.isReceived());
                Buffer a = poisoned(m, n + 8);
                assertEquals(first.status(), first.recv(a, n + 8, DataType.BYTE));
                assertTrue(first.isReceived());
                assertReceived(Data.bytes(n, peer, n), Mem.read(a), "matched message of " + n + " bytes");
                Optional<MatchedMessage> second;
                while ((second = comm.improbe(Communicator.ANY_SOURCE, 41)).isEmpty()) Thread.onSpinWait();
                assertEquals(new Status(peer, 41, n), second.get().status());
                Buffer b = poisoned(m, n);
                Request r = second.get().irecv(b, n, DataType.BYTE);
                assertEquals(new Status(peer, 41, n), r.waitFor());
                assertFalse(r.cancel(), "a completed receive cannot be cancelled");
                assertReceived(Data.bytes(n + 1, peer, n), Mem.read(b), "second matched message of " + n + " bytes");
            }
        }
    }

    @Test
    void d_matchedMessageIsNotStolenByACompetingReceive() throws Exception {
        Assumptions.assumeTrue(comm.threadLevel() == ThreadLevel.MULTIPLE, () -> "needs MPI_THREAD_MULTIPLE, the MPI gives " + comm.threadLevel());
        int peer = peer();
        if (peer < 0) return;
        int[][] sizes = {{11, 13}, {70_001, 13}, {13, 70_001}};
        for (int[] pair : sizes) {
            if (rank % 2 == 0) {
                // non-blocking: the first completes only when the matched receive takes it, after the second was received
                Request.waitAll(comm.isend(filled(Mem.PAGEABLE, Data.bytes(1, rank, pair[0])), pair[0], DataType.BYTE, peer, 42),
                        comm.isend(filled(Mem.PAGEABLE, Data.bytes(2, rank, pair[1])), pair[1], DataType.BYTE, peer, 42));
            } else {
                MatchedMessage first = comm.mprobe(peer, 42);
                assertEquals(pair[0], first.status().byteCount());
                // a plain receive on another thread, after the probe and before the matched receive: it must get the second message
                Buffer other = poisoned(Mem.PAGEABLE, 80_000);
                CompletableFuture<Status> competitor = CompletableFuture.supplyAsync(() -> comm.recv(other, 80_000, DataType.BYTE, peer, 42));
                Status stolen = competitor.get(60, TimeUnit.SECONDS);
                assertEquals(new Status(peer, 42, pair[1]), stolen, "the competing receive got the message after the matched one");
                assertReceived(Data.bytes(2, peer, pair[1]), Mem.read(other), "the competing receive");
                Buffer mine = poisoned(Mem.PAGEABLE, pair[0]);
                assertEquals(new Status(peer, 42, pair[0]), first.recv(mine, pair[0], DataType.BYTE));
                assertReceived(Data.bytes(1, peer, pair[0]), Mem.read(mine), "the matched message");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void d_matchedMessageTooLongForItsBufferTruncatesAndIsReceived(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        long big = splitSize();
        if (rank % 2 == 0) {
            for (int i = 0; i < 2; i++) {
                comm.send(filled(m, Data.bytes(43 + i, rank, (int) big)), big, DataType.BYTE, peer, 43);
            }
            comm.send(filled(m, Data.bytes(45, rank, 9)), 9, DataType.BYTE, peer, 43);
        } else {
            Buffer small = poisoned(m, 100);
            MatchedMessage a = comm.mprobe(peer, 43);
            assertEquals(big, a.status().byteCount());
            assertThrows(TruncationException.class, () -> a.recv(small, 64, DataType.BYTE));
            assertTrue(a.isReceived());
            assertReceived(Arrays.copyOf(Data.bytes(43, peer, (int) big), 64), Mem.read(small), "the first bytes of a truncated matched message");
            MatchedMessage b = comm.mprobe(peer, 43);
            assertEquals(big, b.status().byteCount(), "the message after the truncated one");
            Request r = b.irecv(poisoned(m, 64), 64, DataType.BYTE);
            assertThrows(TruncationException.class, r::waitFor);
            Buffer last = poisoned(m, 16);
            assertEquals(new Status(peer, 43, 9), comm.recv(last, 16, DataType.BYTE, peer, 43), "the next message is intact");
            assertReceived(Data.bytes(45, peer, 9), Mem.read(last), "the message after two truncated ones");
        }
    }

    // ---- messages in pieces --------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void e_probeOfAMessageInPiecesReportsTheWholeSize(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        long n = splitSize();
        int[] tags = {51, 52, 53};
        if (rank % 2 == 0) {
            List<Request> sends = new ArrayList<>();
            for (int t : tags) {
                sends.add(comm.isend(filled(m, Data.bytes(t, rank, (int) n)), n, DataType.BYTE, peer, t));
            }
            Request.waitAll(sends); // received out of send order
        } else {
            Status p = comm.probe(peer, 51);
            assertEquals(new Status(peer, 51, n), p, "probe");
            Optional<Status> ip;
            while ((ip = comm.iprobe(Communicator.ANY_SOURCE, 52)).isEmpty()) Thread.onSpinWait();
            assertEquals(new Status(peer, 52, n), ip.get(), "iprobe");
            MatchedMessage mm = comm.mprobe(peer, 53);
            assertEquals(new Status(peer, 53, n), mm.status(), "mprobe");
            Buffer b53 = poisoned(m, n);
            assertEquals(mm.status(), mm.irecv(b53, n, DataType.BYTE).waitFor());
            assertReceived(Data.bytes(53, peer, (int) n), Mem.read(b53), "matched message in pieces");
            for (int t : new int[] {52, 51}) { // out of send order: tags differ
                Buffer b = poisoned(m, n + 3);
                assertEquals(new Status(peer, t, n), comm.recv(b, n + 3, DataType.BYTE, peer, t));
                assertReceived(Data.bytes(t, peer, (int) n), Mem.read(b), "message in pieces, tag " + t);
            }
        }
    }

    @Test
    void e_probeOfOneTagKeepsTheOrderOfTheSendersOtherMessages() {
        int peer = peer();
        if (peer < 0) return;
        long n = splitSize();
        if (rank % 2 == 0) {
            comm.send(filled(Mem.PAGEABLE, Data.bytes(1, rank, 5)), 5, DataType.BYTE, peer, 54);
            comm.send(filled(Mem.PAGEABLE, Data.bytes(2, rank, (int) n)), n, DataType.BYTE, peer, 55);
            comm.send(filled(Mem.PAGEABLE, Data.bytes(3, rank, 6)), 6, DataType.BYTE, peer, 54);
        } else {
            assertEquals(new Status(peer, 55, n), comm.probe(peer, 55), "probe of the later tag");
            long[] expected = {5, n, 6};
            int[] seeds = {1, 2, 3};
            for (int i = 0; i < 3; i++) {
                Buffer b = poisoned(Mem.PAGEABLE, n);
                Status s = comm.recv(b, n, DataType.BYTE, peer, Communicator.ANY_TAG);
                assertEquals(expected[i], s.byteCount(), "ANY_TAG receive " + i + " after a probe of tag 55 gets the messages in send order");
                assertReceived(Data.bytes(seeds[i], peer, (int) expected[i]), Mem.read(b), "message " + i);
            }
        }
    }

    // ---- waitAny, testAny, testAll -------------------------------------------------------------

    @Test
    void f_waitAnyReturnsTheRequestThatCompleted() {
        int peer = peer();
        if (peer < 0) return;
        Buffer ack = alloc(Mem.PAGEABLE, 1);
        if (rank % 2 == 0) {
            Buffer r70 = poisoned(Mem.PAGEABLE, 8), r71 = poisoned(Mem.PAGEABLE, 8);
            Request a = comm.irecv(r70, 8, DataType.BYTE, peer, 70);
            Request b = comm.irecv(r71, 8, DataType.BYTE, peer, 71);
            List<Request> both = List.of(a, b);
            assertEquals(1, Request.waitAny(both), "only tag 71 was sent");
            assertEquals(new Status(peer, 71, 8), b.waitFor());
            assertEquals(OptionalInt.empty(), Request.testAny(List.of(a)), "tag 70 is sent only after the ack");
            assertEquals(Optional.empty(), Request.testAll(both));
            assertEquals(OptionalInt.of(1), Request.testAny(both), "a completed request counts as complete");
            comm.send(ack, 1, DataType.BYTE, peer, 72);
            assertEquals(0, Request.waitAny(List.of(a)));
            assertEquals(new Status(peer, 70, 8), a.waitFor());
            assertEquals(Optional.of(List.of(new Status(peer, 70, 8), new Status(peer, 71, 8))), Request.testAll(both));
            assertEquals(0, Request.waitAny(both), "all complete: the lowest index");
            assertReceived(Data.bytes(70, peer, 8), Mem.read(r70), "tag 70");
            assertReceived(Data.bytes(71, peer, 8), Mem.read(r71), "tag 71");
        } else {
            comm.send(filled(Mem.PAGEABLE, Data.bytes(71, rank, 8)), 8, DataType.BYTE, peer, 71);
            comm.recv(ack, 1, DataType.BYTE, peer, 72);
            comm.send(filled(Mem.PAGEABLE, Data.bytes(70, rank, 8)), 8, DataType.BYTE, peer, 70);
        }
    }

    @ParameterizedTest
    @EnumSource(Mem.class)
    void f_waitAnyTestAnyAndTestAllOverMixedSendsAndReceives(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        int k = 8;
        for (int round = 0; round < 3; round++) {
            List<Request> reqs = new ArrayList<>();
            List<Buffer> in = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                int n = i % 2 == 0 ? 16 : 20_000 + i;
                Buffer b = poisoned(m, n);
                in.add(b);
                reqs.add(comm.irecv(b, n, DataType.BYTE, peer, 60 + i));
                reqs.add(comm.isend(filled(m, Data.bytes(60 + i + round, rank, n)), n, DataType.BYTE, peer, 60 + i));
            }
            List<Request> pending = new ArrayList<>(reqs);
            List<Status> done = new ArrayList<>();
            switch (round) {
                case 0 -> {
                    while (!pending.isEmpty()) {
                        int i = Request.waitAny(pending);
                        done.add(pending.remove(i).waitFor());
                    }
                }
                case 1 -> {
                    while (!pending.isEmpty()) {
                        OptionalInt i = Request.testAny(pending);
                        if (i.isPresent()) done.add(pending.remove(i.getAsInt()).waitFor());
                    }
                }
                default -> {
                    Optional<List<Status>> all;
                    while ((all = Request.testAll(pending)).isEmpty()) Thread.onSpinWait();
                    done.addAll(all.get());
                    assertEquals(2 * k, all.get().size());
                    for (int i = 0; i < 2 * k; i++) {
                        assertEquals(60 + i / 2, all.get().get(i).tag(), "statuses in the order of the requests");
                    }
                }
            }
            assertEquals(2 * k, done.size());
            for (int i = 0; i < k; i++) {
                int n = i % 2 == 0 ? 16 : 20_000 + i;
                assertEquals(new Status(peer, 60 + i, n), reqs.get(2 * i).waitFor());
                assertReceived(Data.bytes(60 + i + round, peer, n), Mem.read(in.get(i)), "round " + round + " message " + i);
            }
        }
    }

    // ---- cancel --------------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Mem.class)
    void g_cancelOfAnUnmatchedReceive(Mem m) {
        m.assume(comm);
        int peer = peer();
        if (peer < 0) return;
        Buffer go = alloc(Mem.PAGEABLE, 1);
        for (int n : new int[] {5, 70_001}) {
            if (rank % 2 == 1) {
                Buffer b = poisoned(m, n);
                Request r = comm.irecv(b, n, DataType.BYTE, peer, 80);
                assertEquals(1, b.lifetime().pins(), "pinned while pending");
                assertTrue(r.cancel(), "nothing was sent: the receive is cancelled");
                assertEquals(0, b.lifetime().pins(), "cancel released the buffer");
                Status st = r.waitFor();
                assertTrue(st.cancelled(), st.toString());
                assertEquals(Status.cancelledReceive(peer, 80), st);
                assertEquals(Optional.of(st), r.test());
                assertFalse(r.cancel(), "already cancelled");
                byte[] untouched = new byte[n];
                Arrays.fill(untouched, Mem.POISON);
                assertArrayEquals(untouched, Mem.read(b), "a cancelled receive writes nothing");
                Request any = comm.irecv(b, n, DataType.BYTE, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
                assertTrue(any.cancel(), "a wildcard receive is cancelled too");
                assertEquals(Status.cancelledReceive(Communicator.ANY_SOURCE, Communicator.ANY_TAG), any.waitFor());
                comm.send(go, 1, DataType.BYTE, peer, 81);
                Buffer next = poisoned(m, n);
                assertEquals(new Status(peer, 80, n), comm.irecv(next, n, DataType.BYTE, peer, 80).waitFor(), "the message goes to the next receive");
                assertReceived(Data.bytes(80, peer, n), Mem.read(next), "message after a cancelled receive");
            } else {
                comm.recv(go, 1, DataType.BYTE, peer, 81); // sent only after the receiver cancelled
                comm.send(filled(m, Data.bytes(80, rank, n)), n, DataType.BYTE, peer, 80);
            }
        }
    }

    @Test
    void g_cancelOfACompletedReceiveOfASendAndOfAMatchedReceive() {
        int peer = peer();
        if (peer < 0) return;
        if (rank % 2 == 0) {
            Request s = comm.isend(filled(Mem.PAGEABLE, Data.bytes(82, rank, 16)), 16, DataType.BYTE, peer, 82);
            assertFalse(s.cancel(), "a send is not cancelled");
            assertEquals(new Status(peer, 82, 16), s.waitFor(), "the send completes as usual");
            comm.send(filled(Mem.PAGEABLE, Data.bytes(83, rank, 16)), 16, DataType.BYTE, peer, 83);
        } else {
            Buffer b = poisoned(Mem.PAGEABLE, 16);
            Request r = comm.irecv(b, 16, DataType.BYTE, peer, 82);
            Status st = r.waitFor();
            assertFalse(r.cancel(), "a completed receive is not cancelled");
            assertEquals(st, r.waitFor());
            assertFalse(st.cancelled());
            assertReceived(Data.bytes(82, peer, 16), Mem.read(b), "completed receive");
            MatchedMessage mm = comm.mprobe(peer, 83);
            Buffer c = poisoned(Mem.PAGEABLE, 16);
            Request mr = mm.irecv(c, 16, DataType.BYTE);
            assertFalse(mr.cancel(), "a matched receive has its message");
            assertEquals(new Status(peer, 83, 16), mr.test().orElseThrow(), "cancel completed it");
            assertReceived(Data.bytes(83, peer, 16), Mem.read(c), "matched receive after cancel");
        }
    }

    @Test
    void g_cancelFreesAReceiveBufferClosedWhilePending() {
        HostBuffer b = HostBuffer.allocate(64);
        Request r = comm.irecv(b, 64, DataType.BYTE, rank, 84); // from itself: nothing will come
        b.close();
        assertFalse(b.lifetime().isFreed(), "pinned by the pending receive");
        assertTrue(r.cancel());
        assertTrue(b.lifetime().isFreed(), "freed once the cancelled receive completed");
        assertTrue(r.waitFor().cancelled());
    }

    // ---- futures -------------------------------------------------------------------------------

    /** How long a test waits for a future before it fails (a future that never completes is a failure, never a pass). */
    private static final long FUTURE_SECONDS = 60;

    /** Without MPI_THREAD_MULTIPLE a future of a request in flight is refused; the tests below need one. */
    private void assumeFutures() {
        if (comm.threadLevel() != ThreadLevel.MULTIPLE) {
            HostBuffer b = (HostBuffer) alloc(Mem.PAGEABLE, 8);
            Request r = comm.irecv(b, 8, DataType.BYTE, rank, 99); // from itself: nothing comes
            assertThrows(dev.ferry.ThreadingException.class, r::future, "future() below MPI_THREAD_MULTIPLE");
            assertTrue(r.cancel());
            Assumptions.abort("futures need MPI_THREAD_MULTIPLE; this communicator has " + comm.threadLevel() + " (the refusal was checked)");
        }
    }

    private static <T> T get(CompletableFuture<T> f, String what) throws Exception {
        try {
            return f.get(FUTURE_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError(what + ": the future did not complete within " + FUTURE_SECONDS + " s", e);
        }
    }

    /**
     * Futures of receives and sends complete while their rank makes no Ferry call at all (it only
     * waits on the futures): small messages and large ones, whose transfer needs progress on both
     * sides. The requests are complete too: their buffers are released and a test gives the same status.
     */
    @ParameterizedTest
    @EnumSource(Mem.class)
    void i_futuresOfReceivesAndSendsCompleteWithoutWaitOrTest(Mem m) throws Exception {
        m.assume(comm);
        assumeFutures();
        int peer = peer();
        if (peer < 0) return;
        for (int n : new int[] {7, (1 << 20) + 3}) {
            Buffer in = poisoned(m, n), out = filled(m, Data.bytes(86 + n, rank, n));
            Request r = comm.irecv(in, n, DataType.BYTE, peer, 86);
            Request s = comm.isend(out, n, DataType.BYTE, peer, 86);
            CompletableFuture<Status> received = r.future(), sent = s.future();
            assertTrue(received == r.future(), "the same future each time");
            assertEquals(new Status(peer, 86, n), get(received, "irecv of " + n + " bytes"));
            assertEquals(new Status(peer, 86, n), get(sent, "isend of " + n + " bytes"));
            assertEquals(0, in.lifetime().pins(), "the receive was completed by Ferry: its buffer is released");
            assertEquals(0, out.lifetime().pins(), "the send was completed by Ferry: its buffer is released");
            assertEquals(Optional.of(new Status(peer, 86, n)), r.test(), "the request gives the future's status");
            assertEquals(new Status(peer, 86, n), s.waitFor());
            assertReceived(Data.bytes(86 + n, peer, n), Mem.read(in), n + " bytes through futures");
        }
    }

    @Test
    void i_aNonBlockingCollectivesFutureCompletesWithoutWaitOrTest() throws Exception {
        assumeFutures();
        HostBuffer in = (HostBuffer) alloc(Mem.PAGEABLE, 8), out = (HostBuffer) alloc(Mem.PAGEABLE, 8);
        Data.put(in.segment(), DataType.LONG, 0, rank + 1);
        CompletableFuture<Status> f = comm.iallReduce(in, out, 1, DataType.LONG, ReduceOp.SUM).future();
        get(f, "iallReduce");
        assertEquals(size * (size + 1) / 2.0, Data.get(out.segment(), DataType.LONG, 0), "iallReduce through its future");
        assertEquals(0, out.lifetime().pins(), "the collective's request was completed by Ferry");
    }

    /**
     * Stages made from futures: a reply whose size is the received count (thenApply), sent by a
     * stage (thenCompose on the send's future), then a collective started by a stage.
     */
    @Test
    void i_futuresChainThenApplyAndThenCompose() throws Exception {
        assumeFutures();
        int peer = peer();
        if (peer >= 0) {
            if (rank % 2 == 0) {
                HostBuffer question = (HostBuffer) poisoned(Mem.PAGEABLE, 64), answer = (HostBuffer) alloc(Mem.PAGEABLE, 64);
                for (int i = 0; i < 16; i++) Data.put(answer.segment(), DataType.INT, i, 1000 + i);
                CompletableFuture<Status> replied = comm.irecv(question, 16, DataType.INT, peer, 87).future()
                        .thenApply(st -> st.count(DataType.INT))
                        .thenCompose(k -> comm.isend(answer, k, DataType.INT, peer, 88).future());
                assertEquals(new Status(peer, 88, DataType.INT.bytes(5)), get(replied, "the chain"), "the reply has as many ints as the question");
            } else {
                HostBuffer question = (HostBuffer) alloc(Mem.PAGEABLE, 20), answer = (HostBuffer) poisoned(Mem.PAGEABLE, 64);
                comm.send(question, 5, DataType.INT, peer, 87);
                assertEquals(new Status(peer, 88, 20), comm.recv(answer, 16, DataType.INT, peer, 88));
                for (int i = 0; i < 5; i++) assertEquals(1000 + i, Data.get(answer.segment(), DataType.INT, i), "reply element " + i);
            }
        }
        HostBuffer in = (HostBuffer) alloc(Mem.PAGEABLE, 8), out = (HostBuffer) alloc(Mem.PAGEABLE, 8), out2 = (HostBuffer) alloc(Mem.PAGEABLE, 8);
        Data.put(in.segment(), DataType.LONG, 0, rank + 1);
        CompletableFuture<Double> twice = comm.iallReduce(in, out, 1, DataType.LONG, ReduceOp.SUM).future()
                .thenCompose(st -> comm.iallReduce(out, out2, 1, DataType.LONG, ReduceOp.SUM).future())
                .thenApply(st -> Data.get(out2.segment(), DataType.LONG, 0));
        assertEquals((double) size * size * (size + 1) / 2, get(twice, "two chained iallReduce"));
    }

    /**
     * A truncated receive's future fails with the TruncationException its waitFor throws (the same
     * one); a stage made from it sees that exception as the cause; the next message is intact.
     */
    @ParameterizedTest
    @EnumSource(Mem.class)
    void i_aTruncatedReceivesFutureFailsWithTruncationException(Mem m) throws Exception {
        m.assume(comm);
        assumeFutures();
        int peer = peer();
        if (peer < 0) return;
        for (int n : new int[] {32, 70_001}) {
            if (rank % 2 == 0) {
                comm.send(filled(m, Data.bytes(89, rank, n)), n, DataType.BYTE, peer, 89);
                comm.send(filled(m, Data.bytes(90, rank, 8)), 8, DataType.BYTE, peer, 90);
            } else {
                Buffer small = poisoned(m, n / 2);
                Request r = comm.irecv(small, n / 2, DataType.BYTE, peer, 89);
                CompletableFuture<Status> f = r.future();
                CompletableFuture<Throwable> direct = f.handle((st, e) -> e);
                CompletableFuture<Throwable> seen = f.thenApply(st -> st.byteCount()).handle((k, e) -> e);
                java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> f.get(FUTURE_SECONDS, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof TruncationException, "the future fails with TruncationException: " + e.getCause());
                TruncationException thrown = assertThrows(TruncationException.class, r::waitFor);
                assertTrue(thrown == e.getCause(), "the same exception as waitFor's");
                assertTrue(get(direct, "handle of the truncated receive's future") == thrown, "handle on the future sees the exception itself");
                Throwable stage = get(seen, "a stage made from the truncated receive's future");
                assertTrue(stage instanceof java.util.concurrent.CompletionException && stage.getCause() == thrown, "a stage made from it sees it as the cause: " + stage);
                assertTrue(f.isCompletedExceptionally());
                assertEquals(0, small.lifetime().pins(), "released");
                Buffer next = poisoned(m, 8);
                assertEquals(new Status(peer, 90, 8), get(comm.irecv(next, 8, DataType.BYTE, peer, 90).future(), "the next message"));
                assertReceived(Data.bytes(90, peer, 8), Mem.read(next), "the message after the truncated one");
            }
        }
    }

    /**
     * Cancelling a future is Request.cancel: a pending receive is cancelled (the future too, the
     * request's status says so, its buffer is released); a send's and a collective's future cannot
     * be cancelled and complete with their operations.
     */
    @Test
    void i_cancellingAFutureCancelsAPendingReceiveOnly() throws Exception {
        assumeFutures();
        HostBuffer b = (HostBuffer) poisoned(Mem.PAGEABLE, 16);
        Request r = comm.irecv(b, 16, DataType.BYTE, rank, 91); // from itself: nothing comes
        CompletableFuture<Status> f = r.future();
        assertTrue(f.cancel(true), "an unmatched receive is cancelled through its future");
        assertTrue(f.isCancelled());
        assertThrows(java.util.concurrent.CancellationException.class, f::join);
        assertEquals(Status.cancelledReceive(rank, 91), r.waitFor(), "the request is complete, cancelled");
        assertEquals(0, b.lifetime().pins(), "the cancelled receive released its buffer");
        assertTrue(f.cancel(false), "cancelled already");
        Request s = comm.isend(filled(Mem.PAGEABLE, Data.bytes(92, rank, 16)), 16, DataType.BYTE, rank, 92);
        CompletableFuture<Status> sf = s.future();
        assertFalse(sf.cancel(true), "a send is not cancelled");
        HostBuffer in = (HostBuffer) poisoned(Mem.PAGEABLE, 16);
        assertEquals(new Status(rank, 92, 16), comm.recv(in, 16, DataType.BYTE, rank, 92));
        assertEquals(new Status(rank, 92, 16), get(sf, "the send whose future was not cancelled"));
        assertFalse(sf.isCancelled());
        HostBuffer x = (HostBuffer) alloc(Mem.PAGEABLE, 8), y = (HostBuffer) alloc(Mem.PAGEABLE, 8);
        CompletableFuture<Status> cf = comm.iallReduce(x, y, 1, DataType.LONG, ReduceOp.SUM).future();
        assertFalse(cf.cancel(true), "a collective is not cancelled");
        get(cf, "the collective whose future was not cancelled");
        assertFalse(cf.isCancelled());
    }

    /** The future of a request completed already is complete at once, with its status. */
    @Test
    void i_theFutureOfACompletedRequestIsComplete() throws Exception {
        HostBuffer out = (HostBuffer) filled(Mem.PAGEABLE, Data.bytes(93, rank, 8)), in = (HostBuffer) poisoned(Mem.PAGEABLE, 8);
        Request s = comm.isend(out, 8, DataType.BYTE, rank, 93);
        Status got = comm.irecv(in, 8, DataType.BYTE, rank, 93).waitFor();
        Status sent = s.waitFor();
        CompletableFuture<Status> f = s.future();
        assertTrue(f.isDone(), "complete at once, at any thread level");
        assertEquals(sent, f.get());
        assertEquals(new Status(rank, 93, 8), got);
    }

    // ---- bad inputs ----------------------------------------------------------------------------

    @Test
    void h_badRanksAndTagsOfProbes() {
        for (int bad : new int[] {size, -2, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            assertThrows(InvalidRankException.class, () -> comm.probe(bad, 1));
            assertThrows(InvalidRankException.class, () -> comm.iprobe(bad, 1));
            assertThrows(InvalidRankException.class, () -> comm.mprobe(bad, Communicator.ANY_TAG));
            assertThrows(InvalidRankException.class, () -> comm.improbe(bad, 1));
        }
        for (int bad : new int[] {-2, Integer.MIN_VALUE}) {
            assertThrows(InvalidTagException.class, () -> comm.probe(0, bad));
            assertThrows(InvalidTagException.class, () -> comm.iprobe(Communicator.ANY_SOURCE, bad));
            assertThrows(InvalidTagException.class, () -> comm.mprobe(0, bad));
            assertThrows(InvalidTagException.class, () -> comm.improbe(0, bad));
        }
        if (comm.maxTag() < Integer.MAX_VALUE) {
            assertThrows(InvalidTagException.class, () -> comm.probe(0, comm.maxTag() + 1));
            assertThrows(InvalidTagException.class, () -> comm.improbe(0, comm.maxTag() + 1));
        }
        Communicator closed = comm.duplicate();
        closed.close();
        assertThrows(CommunicatorClosedException.class, () -> closed.probe(0, 1));
        assertThrows(CommunicatorClosedException.class, () -> closed.iprobe(0, 1));
        assertThrows(CommunicatorClosedException.class, () -> closed.mprobe(0, 1));
        assertThrows(CommunicatorClosedException.class, () -> closed.improbe(0, 1));
        assertEquals(Optional.empty(), comm.iprobe(Communicator.ANY_SOURCE, Communicator.ANY_TAG), "nothing in flight after rejected calls");
    }

    @Test
    void h_badListsOfRequests() {
        assertThrows(InvalidArgumentException.class, () -> Request.waitAny(List.of()));
        assertThrows(InvalidArgumentException.class, () -> Request.testAny(List.of()));
        assertEquals(Optional.of(List.of()), Request.testAll(List.of()), "nothing to wait for: complete");
        assertThrows(InvalidArgumentException.class, () -> Request.waitAny(Arrays.asList((Request) null)));
        assertThrows(InvalidArgumentException.class, () -> Request.testAll(Arrays.asList((Request) null)));
    }

    @Test
    void h_aMatchedMessageIsReceivedOnce() {
        HostBuffer out = (HostBuffer) filled(Mem.PAGEABLE, Data.bytes(85, rank, 12));
        Request s = comm.isend(out, 12, DataType.BYTE, rank, 85); // to itself
        MatchedMessage m = comm.mprobe(rank, 85);
        assertEquals(new Status(rank, 85, 12), m.status());
        Buffer in = poisoned(Mem.PAGEABLE, 12);
        assertThrows(InvalidArgumentException.class, () -> m.recv(null, 12, DataType.BYTE));
        assertThrows(BufferTooSmallException.class, () -> m.recv(in, 13, DataType.BYTE));
        assertFalse(m.isReceived(), "rejected receives do not take the message");
        assertEquals(new Status(rank, 85, 12), m.recv(in, 12, DataType.BYTE));
        assertThrows(MessageAlreadyReceivedException.class, () -> m.recv(in, 12, DataType.BYTE));
        assertThrows(MessageAlreadyReceivedException.class, () -> m.irecv(in, 12, DataType.BYTE));
        s.waitFor();
        assertArrayEquals(Data.bytes(85, rank, 12), Mem.read(in));
        assertEquals(Optional.empty(), comm.improbe(rank, 85), "the message was received");
    }
}
