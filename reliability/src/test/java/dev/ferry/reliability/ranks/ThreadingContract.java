// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.ThreadingException;
import dev.ferry.testing.Data;
import dev.ferry.testing.TestWorld;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The threading contract ({@code Communicator#threadLevel()}), on real ranks. The job says which
 * level it asked for ({@code -Dferry.threads}) and expects ({@code -Dferry.test.expectThreads});
 * tests for other levels are skipped with the reason.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class ThreadingContract {
    static final int THREADS = Integer.getInteger("ferry.test.threads", 4);
    static final int ROUNDS = Integer.getInteger("ferry.test.threadRounds", 200);

    private final ThreadLevel expected = ThreadLevel.valueOf(System.getProperty("ferry.test.expectThreads", "MULTIPLE"));
    private Communicator comm;
    private int rank;
    private int size;

    @BeforeEach
    void open() {
        comm = TestWorld.world().duplicate();
        rank = comm.rank();
        size = comm.size();
    }

    @AfterEach
    void close() {
        try {
            comm.barrier();
        } finally {
            comm.close();
        }
    }

    private void assume(ThreadLevel... levels) {
        for (ThreadLevel l : levels) {
            if (comm.threadLevel() == l) return;
        }
        Assumptions.abort("for " + List.of(levels) + "; this job's MPI provides " + comm.threadLevel().mpiName());
    }

    /** Runs {@code n} tasks on their own threads and rethrows the first failure. */
    private static void parallel(int n, Task task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n, r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < n; t++) {
                int id = t;
                fs.add(pool.submit(() -> {
                    Thread.currentThread().setName("worker-" + id);
                    task.run(id);
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                try {
                    f.get(180, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof Exception x ? x : new RuntimeException(e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private interface Task {
        void run(int id) throws Exception;
    }

    @Test
    void a_reportsTheLevelTheLibraryProvides() {
        assertEquals(expected, comm.threadLevel(), "thread level of this job");
        assertEquals(expected, TestWorld.world().threadLevel());
    }

    @Test
    void b_pointToPointFromManyThreadsOnOneCommunicator() throws Exception {
        assume(ThreadLevel.MULTIPLE);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        parallel(THREADS, t -> {
            try (HostBuffer out = HostBuffer.allocate(1024); HostBuffer in = HostBuffer.allocate(1024)) {
                for (int i = 0; i < ROUNDS; i++) {
                    int n = 1 + (i * 37 + t) % 1024;
                    byte[] mine = Data.bytes(1000L * t + i, rank, n);
                    java.lang.foreign.MemorySegment.copy(mine, 0, out.segment(), ValueLayout.JAVA_BYTE, 0, n);
                    Status s;
                    if (i % 3 == 0) {
                        s = comm.sendRecv(out, n, DataType.BYTE, next, 100 + t, in, 1024, DataType.BYTE, prev, 100 + t);
                    } else {
                        Request r = comm.irecv(in, 1024, DataType.BYTE, prev, t);
                        Request w = comm.isend(out, n, DataType.BYTE, next, t);
                        s = Request.waitAll(r, w).get(0);
                    }
                    assertEquals(n, s.byteCount(), "thread " + t + " round " + i);
                    byte[] got = in.segment().asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
                    assertTrue(java.util.Arrays.equals(Data.bytes(1000L * t + i, prev, n), got), "thread " + t + " round " + i + ": data crossed threads");
                }
            }
        });
    }

    @Test
    void c_collectivesOnPerThreadDuplicates() throws Exception {
        assume(ThreadLevel.MULTIPLE);
        Communicator[] dups = new Communicator[THREADS];
        for (int t = 0; t < THREADS; t++) dups[t] = comm.duplicate(); // collective: made on one thread, in order
        try {
            parallel(THREADS, t -> {
                Communicator c = dups[t];
                try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
                    for (int i = 0; i < ROUNDS / 2; i++) {
                        in.segment().set(ValueLayout.JAVA_LONG, 0, rank + 1000L * t + i);
                        c.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
                        long want = (long) size * (size - 1) / 2 + (long) size * (1000L * t + i);
                        assertEquals(want, out.segment().get(ValueLayout.JAVA_LONG, 0), "thread " + t + " round " + i);
                        int root = i % size;
                        out.segment().set(ValueLayout.JAVA_LONG, 0, rank == root ? 7L * t + i : -1);
                        c.broadcast(out, 1, DataType.LONG, root);
                        assertEquals(7L * t + i, out.segment().get(ValueLayout.JAVA_LONG, 0));
                        if (i % 10 == 0) c.barrier();
                    }
                }
            });
        } finally {
            for (Communicator d : dups) d.close();
        }
    }

    @Test
    void d_requestCompletedOnAnotherThread() throws Exception {
        assume(ThreadLevel.MULTIPLE);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        try (HostBuffer out = HostBuffer.allocate(64); HostBuffer in = HostBuffer.allocate(64)) {
            out.segment().set(ValueLayout.JAVA_INT, 0, rank);
            Request r = comm.irecv(in, 64, DataType.BYTE, prev, 3);
            Request w = comm.isend(out, 4, DataType.BYTE, next, 3);
            parallel(1, t -> Request.waitAll(r, w));
            assertEquals(prev, in.segment().get(ValueLayout.JAVA_INT, 0));
        }
    }

    /**
     * Two threads of rank 0 call a collective on one communicator at once: whichever comes second is
     * refused at once with ThreadingException (the first completes when the other ranks arrive).
     */
    @Test
    void e_overlappingCollectivesOnOneCommunicatorAreRefused() throws Exception {
        assume(ThreadLevel.MULTIPLE);
        if (rank == 0) {
            AtomicReference<Throwable> a = new AtomicReference<>();
            Thread other = new Thread(() -> {
                try {
                    comm.barrier();
                } catch (Throwable e) {
                    a.set(e);
                }
            }, "second-thread");
            other.start();
            Thread.sleep(300);
            Throwable mine = null;
            try {
                comm.barrier();
            } catch (ThreadingException e) {
                mine = e;
            }
            other.join(60_000);
            Throwable refused = mine != null ? mine : a.get();
            assertTrue(refused instanceof ThreadingException, "exactly one of the two barriers is refused: " + mine + " / " + a.get());
            assertTrue(mine == null || a.get() == null, "only one is refused: " + mine + " / " + a.get());
            assertTrue(refused.getMessage().contains("duplicate()"), refused.getMessage());
            System.out.println("[ferry-threads] rank 0: " + refused.getMessage());
        } else {
            Thread.sleep(1_500);
            comm.barrier();
        }
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            comm.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM); // still usable
        }
    }

    /** With MPI_THREAD_SERIALIZED a thread entering while another is inside MPI is refused; taking turns works. */
    @Test
    void f_serializedRefusesASecondThreadInside() throws Exception {
        assume(ThreadLevel.SERIALIZED);
        Assumptions.assumeTrue(size >= 2, "needs 2 ranks");
        try (HostBuffer b1 = HostBuffer.allocate(8); HostBuffer b2 = HostBuffer.allocate(8)) {
            if (rank == 0) {
                AtomicReference<Throwable> a = new AtomicReference<>();
                Thread other = new Thread(() -> {
                    try {
                        comm.recv(b1, 8, DataType.BYTE, 1, 1);
                    } catch (Throwable e) {
                        a.set(e);
                    }
                }, "second-thread");
                other.start();
                Thread.sleep(300);
                Throwable mine = null;
                try {
                    comm.recv(b2, 8, DataType.BYTE, 1, 2);
                } catch (ThreadingException e) {
                    mine = e;
                }
                other.join(60_000);
                Throwable refused = mine != null ? mine : a.get();
                assertTrue(refused instanceof ThreadingException, "exactly one receive is refused: " + mine + " / " + a.get());
                assertTrue(mine == null || a.get() == null, "only one is refused: " + mine + " / " + a.get());
                assertTrue(refused.getMessage().contains("MPI_THREAD_SERIALIZED"), refused.getMessage());
                System.out.println("[ferry-threads] rank 0: " + refused.getMessage());
                // the refused receive, now on its own: threads taking turns is fine
                if (mine != null) comm.recv(b2, 8, DataType.BYTE, 1, 2);
                else comm.recv(b1, 8, DataType.BYTE, 1, 1);
                parallel(1, t -> comm.send(b1, 8, DataType.BYTE, 1, 3));
            } else if (rank == 1) {
                Thread.sleep(1_500);
                Request.waitAll(comm.isend(b1, 8, DataType.BYTE, 0, 1), comm.isend(b2, 8, DataType.BYTE, 0, 2));
                comm.recv(b1, 8, DataType.BYTE, 0, 3);
            }
        }
    }

    /** With MPI_THREAD_FUNNELED only the thread that initialized MPI may call: others are refused before any native call. */
    @Test
    void g_funneledRefusesOtherThreads() throws Exception {
        assume(ThreadLevel.FUNNELED, ThreadLevel.SINGLE);
        try (HostBuffer b = HostBuffer.allocate(8)) {
            Request r = comm.irecv(b, 8, DataType.BYTE, (rank + size - 1) % size, 4);
            AtomicReference<Throwable> refused = new AtomicReference<>();
            parallel(1, t -> {
                ThreadingException e = assertThrows(ThreadingException.class, comm::barrier);
                assertThrows(ThreadingException.class, r::test);
                refused.set(e);
            });
            assertTrue(refused.get().getMessage().contains("MPI_THREAD_FUNNELED") || refused.get().getMessage().contains("MPI_THREAD_SINGLE"),
                    refused.get().getMessage());
            System.out.println("[ferry-threads] rank " + rank + ": " + refused.get().getMessage());
            comm.send(b, 8, DataType.BYTE, (rank + 1) % size, 4); // the main thread may
            r.waitFor();
        }
    }

    /**
     * With MPI_THREAD_SERIALIZED Ferry's progress thread may not call MPI: the future of a request
     * in flight is refused (one of a completed request is complete); a virtual thread's blocking
     * receive and barrier still work, the receive testing by itself between parks, the barrier on
     * a platform thread of Ferry's while the virtual thread holds the one turn in MPI.
     */
    @Test
    void h_serializedRefusesFuturesAndVirtualThreadsWaitOnTheirOwn() throws Exception {
        assume(ThreadLevel.SERIALIZED);
        Assumptions.assumeTrue(size >= 2, "needs 2 ranks");
        try (HostBuffer b = HostBuffer.allocate(8)) {
            Request pending = comm.irecv(b, 8, DataType.BYTE, rank, 5); // from itself: nothing comes
            ThreadingException e = assertThrows(ThreadingException.class, pending::future);
            assertTrue(e.getMessage().contains("MPI_THREAD_MULTIPLE"), e.getMessage());
            assertTrue(pending.cancel());
            assertTrue(pending.future().isDone(), "the future of a completed request is complete at any level");
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread v = Thread.ofVirtual().start(() -> {
                try {
                    if (rank == 0) {
                        assertEquals(new Status(1, 6, 8), comm.recv(b, 8, DataType.BYTE, 1, 6));
                    } else if (rank == 1) {
                        Thread.sleep(500); // rank 0's virtual thread waits meanwhile
                        comm.send(b, 8, DataType.BYTE, 0, 6);
                    }
                    comm.barrier();
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            assertTrue(v.join(java.time.Duration.ofSeconds(60)), "the virtual thread's receive and barrier end");
            if (failed.get() != null) throw new AssertionError(failed.get());
        }
    }
}
