// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.MatchedMessage;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.TruncationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Blocking calls on virtual threads, on real MPI ranks whose JVMs give virtual threads two
 * carriers ({@code -Djdk.virtualThreadScheduler.parallelism=2 -Djdk.virtualThreadScheduler.maxPoolSize=2},
 * checked first: the suite fails without them). A virtual thread that holds its carrier while it
 * waits would take one of the two, and two waiting receivers would keep the threads that send to
 * them from ever running: each test below then never ends. Ferry's blocking calls on a virtual
 * thread hold the carrier only for short native calls (messages: tests and probes, then parked;
 * collectives: run on a platform thread of Ferry's while the virtual thread parks).
 *
 * <p>A backend runs it with a one-line subclass in a job of its integration test with those two
 * options. Messages flow between pairs (0,1), (2,3), ...; an odd last rank sits out. Every wait
 * is bounded: a test that does not finish in time fails (never a pass on a timeout).
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public abstract class VirtualThreadsContract extends RankContract {
    /** The options of the rank JVMs that run this suite ({@link MpiJob#jvmArgs}): virtual threads get two carriers. */
    public static final String[] TWO_CARRIERS = {"-Djdk.virtualThreadScheduler.parallelism=2", "-Djdk.virtualThreadScheduler.maxPoolSize=2"};
    /** Virtual threads per rank that wait in {@code recv} at once. */
    protected static final int RECEIVERS = 1000;
    /**
     * How long a test's threads may take: far above what they take (backend staged, whose every
     * call advances every transfer in flight, takes the longest: under a minute for a thousand
     * receivers at 4 ranks on 2 shared cores with C1 only), far below a hang's "never".
     */
    private static final Duration LIMIT = Duration.ofSeconds(240);
    /** The per-test limit of the rank runner for jobs of this suite ({@code ferry.test.perTestTimeout}): above {@link #LIMIT}. */
    public static final String PER_TEST_SECONDS = "300";

    @BeforeEach
    void twoCarriers() {
        assertEquals("2", System.getProperty("jdk.virtualThreadScheduler.parallelism"),
                "this suite runs with -Djdk.virtualThreadScheduler.parallelism=2 (two carriers)");
        assertEquals("2", System.getProperty("jdk.virtualThreadScheduler.maxPoolSize"),
                "this suite runs with -Djdk.virtualThreadScheduler.maxPoolSize=2 (no carrier added while one is held)");
        Assumptions.assumeTrue(comm.threadLevel() == ThreadLevel.MULTIPLE, "the suite's threads call MPI at once: MPI_THREAD_MULTIPLE");
    }

    /** The partner of this rank, or -1 when it sits out (odd size). */
    protected int peer() {
        int p = rank % 2 == 0 ? rank + 1 : rank - 1;
        return p < size ? p : -1;
    }

    /** Runs every task on a virtual thread of its own, started in list order, and waits for all of them (bounded); their failures are thrown. */
    protected static void onVirtualThreads(String what, List<Runnable> tasks) throws InterruptedException {
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>(tasks.size());
        for (Runnable t : tasks) {
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    t.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        long deadline = System.nanoTime() + LIMIT.toNanos();
        int unfinished = 0;
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                unfinished++;
            }
        }
        if (unfinished > 0) {
            throw new AssertionError(what + ": " + unfinished + " of " + threads.size() + " virtual threads did not finish within "
                    + LIMIT.toSeconds() + " s on two carriers (a wait that holds its carrier?)");
        }
        if (!failures.isEmpty()) {
            AssertionError e = new AssertionError(what + ": " + failures.size() + " virtual threads failed; the first: " + failures.peek(), failures.peek());
            throw e;
        }
    }

    @Test
    void a_aThousandVirtualThreadsWaitInRecvWhileOneSendsToThem() throws InterruptedException {
        int peer = peer();
        if (peer < 0) return;
        HostBuffer out = closeAfter(HostBuffer.allocate(8L * RECEIVERS));
        HostBuffer in = closeAfter(HostBuffer.allocate(8L * RECEIVERS));
        for (int i = 0; i < RECEIVERS; i++) Data.put(out.segment(), DataType.LONG, i, 1_000_000L * rank + i);
        List<Runnable> tasks = new ArrayList<>();
        for (int i = 0; i < RECEIVERS; i++) {
            int tag = 1000 + i;
            HostBuffer slot = in.slice(8L * i, 8);
            tasks.add(() -> {
                Status st = comm.recv(slot, 1, DataType.LONG, peer, tag);
                assertEquals(new Status(peer, tag, 8), st);
            });
        }
        // started last: both carriers are taken by receivers first; the last receivers' messages go first
        tasks.add(() -> {
            for (int i = RECEIVERS - 1; i >= 0; i--) {
                comm.send(out.slice(8L * i, 8), 1, DataType.LONG, peer, 1000 + i);
            }
        });
        onVirtualThreads("1000 receivers and one sender", tasks);
        for (int i = 0; i < RECEIVERS; i++) {
            assertEquals(1_000_000.0 * peer + i, Data.get(in.segment(), DataType.LONG, i), "message " + i);
        }
    }

    /** The same with non-blocking receives waited for on virtual threads, and sends and receives of messages in pieces (1 MiB). */
    @Test
    void b_waitsOfRequestsAndLargeMessagesOnVirtualThreads() throws InterruptedException {
        int peer = peer();
        if (peer < 0) return;
        int waiters = 200, large = (1 << 20) + 3;
        HostBuffer in = closeAfter(HostBuffer.allocate(8L * waiters));
        byte[] big = Data.bytes(large, rank, large);
        HostBuffer bigOut = closeAfter(HostBuffer.allocate(large));
        Mem.write(bigOut, big);
        HostBuffer bigIn = closeAfter(HostBuffer.allocate(large));
        List<Runnable> tasks = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            int tag = 3000 + i;
            HostBuffer slot = in.slice(8L * i, 8);
            tasks.add(() -> assertEquals(new Status(peer, tag, 8), comm.irecv(slot, 1, DataType.LONG, peer, tag).waitFor()));
        }
        tasks.add(() -> assertEquals(new Status(peer, 2999, large), comm.recv(bigIn, large, DataType.BYTE, peer, 2999)));
        tasks.add(() -> {
            try (HostBuffer one = HostBuffer.allocate(8)) {
                comm.send(bigOut, large, DataType.BYTE, peer, 2999);
                for (int i = waiters - 1; i >= 0; i--) {
                    Data.put(one.segment(), DataType.LONG, 0, i);
                    comm.isend(one, 1, DataType.LONG, peer, 3000 + i).waitFor();
                }
            }
        });
        onVirtualThreads("200 waits and a large message", tasks);
        for (int i = 0; i < waiters; i++) assertEquals(i, Data.get(in.segment(), DataType.LONG, i), "message " + i);
        assertArrayEquals(Data.bytes(large, peer, large), Mem.read(bigIn), "the large message");
    }

    /** probe, mprobe with MatchedMessage.recv, and sendRecv block virtual threads without holding their carriers. */
    @Test
    void c_probesAndSendRecvOnVirtualThreads() throws InterruptedException {
        int peer = peer();
        if (peer < 0) return;
        int n = 100;
        HostBuffer in = closeAfter(HostBuffer.allocate(8L * n)), ring = closeAfter(HostBuffer.allocate(8L * n));
        List<Runnable> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int tag = 5000 + i;
            HostBuffer slot = in.slice(8L * i, 8), back = ring.slice(8L * i, 8);
            if (i % 3 == 0) {
                tasks.add(() -> {
                    Status st = comm.probe(peer, tag);
                    assertEquals(new Status(peer, tag, 8), st);
                    comm.recv(slot, 1, DataType.LONG, peer, tag);
                });
            } else if (i % 3 == 1) {
                tasks.add(() -> {
                    MatchedMessage m = comm.mprobe(peer, tag);
                    assertEquals(new Status(peer, tag, 8), m.recv(slot, 1, DataType.LONG));
                });
            } else {
                tasks.add(() -> {
                    try (HostBuffer mine = HostBuffer.allocate(8)) {
                        Data.put(mine.segment(), DataType.LONG, 0, -tag);
                        assertEquals(new Status(peer, tag + 10_000, 8), comm.sendRecv(mine, 1, DataType.LONG, peer, tag + 10_000, back, 1, DataType.LONG, peer, tag + 10_000));
                    }
                    comm.recv(slot, 1, DataType.LONG, peer, tag);
                });
            }
        }
        tasks.add(() -> {
            try (HostBuffer one = HostBuffer.allocate(8)) {
                for (int i = n - 1; i >= 0; i--) {
                    Data.put(one.segment(), DataType.LONG, 0, i);
                    comm.send(one, 1, DataType.LONG, peer, 5000 + i);
                }
            }
        });
        onVirtualThreads("probes, matched receives and sendRecv", tasks);
        for (int i = 0; i < n; i++) {
            assertEquals(i, Data.get(in.segment(), DataType.LONG, i), "message " + i);
            if (i % 3 == 2) assertEquals(-(5000 + i), Data.get(ring.segment(), DataType.LONG, i), "sendRecv " + i);
        }
    }

    /** A truncated receive on a virtual thread throws TruncationException, and the buffer holds the message's first bytes, as on a platform thread. */
    @Test
    void d_aTruncatedRecvOnAVirtualThreadThrowsAsOnAPlatformThread() throws InterruptedException {
        int peer = peer();
        if (peer < 0) return;
        for (int n : new int[] {16, 100_003}) {
            byte[] message = Data.bytes(n, rank, n);
            List<Runnable> tasks = new ArrayList<>();
            if (rank % 2 == 0) {
                tasks.add(() -> {
                    try (HostBuffer out = HostBuffer.allocate(n)) {
                        Mem.write(out, message);
                        comm.send(out, n, DataType.BYTE, peer, 21);
                        comm.send(out, 8, DataType.BYTE, peer, 22);
                    }
                });
            } else {
                tasks.add(() -> {
                    try (HostBuffer small = HostBuffer.allocate(n / 2); HostBuffer next = HostBuffer.allocate(8)) {
                        assertThrows(TruncationException.class, () -> comm.recv(small, n / 2, DataType.BYTE, peer, 21));
                        assertArrayEquals(Arrays.copyOf(Data.bytes(n, peer, n), n / 2), Mem.read(small), "the first bytes of a truncated message");
                        assertEquals(new Status(peer, 22, 8), comm.recv(next, 8, DataType.BYTE, peer, 22), "the next message");
                    }
                });
            }
            onVirtualThreads("a truncated receive of " + n + " bytes", tasks);
        }
    }

    /**
     * Blocking collectives on virtual threads, one communicator each, started in a different order
     * on even and odd ranks: on two carriers, the two threads that run first on an even rank (of
     * communicators 0 and 1) would hold them while they wait for the odd ranks, whose two carriers
     * run the threads of communicators 2 and 3 first.
     */
    @Test
    void e_blockingCollectivesOnVirtualThreadsOfDistinctCommunicators() throws InterruptedException {
        int k = 4, rounds = 20;
        List<Communicator> comms = new ArrayList<>();
        try {
            for (int i = 0; i < k; i++) comms.add(comm.duplicate());
            long[][] sums = new long[k][rounds];
            List<Runnable> tasks = new ArrayList<>();
            for (int j = 0; j < k; j++) {
                int c = (j + 2 * rank) % k; // odd ranks start with the two communicators that even ranks start last
                Communicator on = comms.get(c);
                tasks.add(() -> {
                    try (HostBuffer a = HostBuffer.allocate(8L * size); HostBuffer b = HostBuffer.allocate(8L * size)) {
                        for (int r = 0; r < rounds; r++) {
                            Data.put(a.segment(), DataType.LONG, 0, (long) (rank + 1) * (c + 1) + r);
                            on.allReduce(a, b, 1, DataType.LONG, ReduceOp.SUM);
                            sums[c][r] = (long) Data.get(b.segment(), DataType.LONG, 0);
                            on.barrier();
                            Data.put(a.segment(), DataType.LONG, 0, rank);
                            on.allGather(a, b, 1, DataType.LONG);
                            for (int q = 0; q < size; q++) assertEquals(q, Data.get(b.segment(), DataType.LONG, q), "allGather on communicator " + c);
                            Data.put(a.segment(), DataType.LONG, 0, rank == r % size ? 77 + r : -1);
                            on.broadcast(a, 1, DataType.LONG, r % size);
                            assertEquals(77 + r, Data.get(a.segment(), DataType.LONG, 0), "broadcast on communicator " + c);
                        }
                    }
                });
            }
            onVirtualThreads(k + " communicators' collectives", tasks);
            for (int c = 0; c < k; c++) {
                for (int r = 0; r < rounds; r++) {
                    assertEquals((long) (c + 1) * size * (size + 1) / 2 + (long) size * r, sums[c][r], "allReduce " + r + " on communicator " + c);
                }
            }
        } finally {
            for (Communicator c : comms) c.close();
        }
    }

    /** Non-blocking collectives waited for on virtual threads, communicators split and duplicated on them. */
    @Test
    void f_nonBlockingCollectivesSplitAndDuplicateOnVirtualThreads() throws InterruptedException {
        int k = 3;
        Communicator[] made = new Communicator[k];
        for (int j = 0; j < k; j++) {
            int c = j; // one after the other: each is a collective of comm
            onVirtualThreads("split or duplicate", List.of(() -> made[c] = c % 2 == 0 ? comm.split(0, rank) : comm.duplicate()));
        }
        try {
            List<Runnable> waits = new ArrayList<>();
            long[] got = new long[k];
            for (int j = 0; j < k; j++) {
                int c = (j + rank) % k;
                assertNotNull(made[c]);
                waits.add(() -> {
                    try (HostBuffer a = HostBuffer.allocate(8); HostBuffer b = HostBuffer.allocate(8)) {
                        Data.put(a.segment(), DataType.LONG, 0, rank + c);
                        Request r = made[c].iallReduce(a, b, 1, DataType.LONG, ReduceOp.SUM);
                        r.waitFor();
                        got[c] = (long) Data.get(b.segment(), DataType.LONG, 0);
                    }
                });
            }
            onVirtualThreads("non-blocking collectives waited for", waits);
            for (int c = 0; c < k; c++) assertEquals((long) size * (size - 1) / 2 + (long) size * c, got[c], "iallReduce on communicator " + c);
        } finally {
            for (Communicator c : made) if (c != null) c.close();
        }
    }

    /** Leaves nothing behind: the suite's communicator still works from a platform thread. */
    @Test
    void g_theCommunicatorIsUsableAfterwards() {
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.LONG, 0, rank + 1);
            comm.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals(size * (size + 1) / 2.0, Data.get(out.segment(), DataType.LONG, 0));
        }
    }
}
