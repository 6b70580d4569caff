// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.FerryException;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Drives every staged transfer of the process, the way an MPI library progresses its requests:
 * each call into the staged backend (a send or receive, a wait or test on any staged request, the
 * start of a collective) advances every transfer in flight by as many steps as it can take without
 * blocking: issue the next staging copy, post the next chunk once its copy is done, return a
 * staging buffer once MPI is done with it.
 *
 * <p>The calling thread does the work: a wait or test polls every transfer, so a small message
 * costs no thread hand-off. Between staged calls, and while a thread of the application is
 * blocked in a call that does not poll (an inner collective or barrier, a receive of the inner
 * MPI), an <em>assistant</em> thread advances the transfers in flight: MPI's progress rule (a
 * pending send completes while its sender blocks in any other call) then holds for staged
 * transfers too, and a rank blocked in a barrier after an isend never starves the receiver of
 * the chunks it waits for. The assistant runs only while transfers are in flight and no
 * application thread is polling, backs off to a millisecond between idle polls, and needs
 * MPI_THREAD_MULTIPLE from the inner MPI (it calls MPI while another thread is inside it). With a
 * lower thread level there is no assistant, and a non-blocking staged transfer advances only
 * inside staged calls.
 *
 * <p>Everything here runs under one lock per process, which also serializes the calls staged
 * makes into the inner MPI.
 */
final class Progress {
    /** Spins before a waiting thread starts yielding its core between polls. */
    private static final int SPINS = 200;

    private final List<Op> active = new ArrayList<>();
    private final Calls calls;
    /** Application threads inside {@link #await}: while any is, it drives progress and the assistant rests. */
    private final java.util.concurrent.atomic.AtomicInteger awaiting = new java.util.concurrent.atomic.AtomicInteger();
    private Thread assistant;
    private volatile boolean closed;

    private final boolean assist;

    Progress() {
        this(new Calls(), false);
    }

    /** {@code assist}: run the assistant thread (when the thread level allows it). */
    Progress(Calls calls, boolean assist) {
        this.calls = calls;
        this.assist = assist;
    }

    /**
     * A transfer: a small state machine advanced under the progress lock. It completes with a
     * {@link Status} or fails with an exception; either way {@link #cleanup} returns its buffers.
     */
    abstract static class Op {
        private volatile boolean done;
        private Status status;
        private RuntimeException failure;

        /** Starts the transfer (posts the first MPI call); runs under the lock. */
        abstract void post();

        /** Takes every step that is possible now; true when something moved. Runs under the lock. */
        abstract boolean advance();

        /** Returns staging buffers and mappings; runs once, under the lock, after completion or failure. */
        abstract void cleanup(boolean failed);

        /** What the op is, for messages. */
        abstract String describe();

        /**
         * Cancels the op if it can (under the lock): true when it did and completed itself (with a
         * cancelled status); false when it cannot (it goes on). Default: false.
         */
        boolean cancel() {
            return false;
        }

        /**
         * While the op can do nothing but wait for an event that comes in order for all ops with an
         * equal key (the first piece of a receive: MPI matches receives of one source, tag and
         * communicator in the order they were posted; a staging copy: copies on one stream finish in
         * the order they were issued), that key; otherwise null. When an older op with the key
         * could not move, {@link #poll} skips the younger ones: they could not have moved either,
         * and a window of 64 non-blocking transfers would otherwise cost 64 rounds of native calls
         * per poll. Skipping only delays an op: the older op is polled every round and, once it
         * moves, the younger ones are polled again; and every {@value #FULL_SWEEP}th poll advances
         * every op whatever its key, so that an order that does not hold (MPI may complete sends to
         * one rank out of order when the receiver takes messages out of order) costs time, never
         * progress.
         */
        Object waitKey() {
            return null;
        }

        final void complete(Status s) {
            status = s;
            done = true;
        }

        final void fail(RuntimeException e) {
            if (!done) {
                failure = e;
                done = true;
            }
        }

        final boolean isDone() {
            return done;
        }

        /** The status, or the failure thrown. */
        final Status result() {
            if (failure != null) {
                throw failure;
            }
            return status;
        }
    }

    /** Posts {@code op}, adds it to the transfers in flight and advances them all; throws (with {@code op} not in flight) if posting fails. */
    synchronized void start(Op op) {
        try {
            op.post();
            while (!op.isDone() && op.advance()) {
                // as far as it goes now
            }
        } catch (RuntimeException e) {
            op.fail(e);
            finish(op, true);
            throw e;
        }
        if (op.isDone()) {
            finish(op, op.failure != null);
        } else {
            active.add(op);
            wakeAssistant();
        }
        if (active.size() > (op.isDone() ? 0 : 1)) {
            // every staged call advances every transfer: in a window of isends, the copies that finished
            // while the next ones were posted go out now, not only once the caller starts waiting
            // (op gets another turn after the older ones, as in any poll)
            poll();
        }
    }

    /** The wait key of staging copies in one direction on one copy engine (one stream each way: they finish in order). */
    record Copies(CopyEngine engine, boolean toDevice) {
    }

    /** Keys of ops that could not move in the current poll (see {@link Op#waitKey()}). */
    private final StuckKeys stuck = new StuckKeys();

    /**
     * A list while the keys are few (the usual case: a poll of a few transfers allocates nothing),
     * a set as well once they are many: a thousand receives waiting for their first pieces with
     * distinct tags (virtual threads in {@code recv}) would make every poll compare every key with
     * every other.
     */
    static final class StuckKeys {
        private static final int FEW = 8;
        private final List<Object> list = new ArrayList<>();
        private final java.util.Set<Object> set = new java.util.HashSet<>();

        void clear() {
            list.clear();
            if (!set.isEmpty()) {
                set.clear();
            }
        }

        boolean contains(Object key) {
            return list.size() <= FEW ? list.contains(key) : set.contains(key);
        }

        void add(Object key) {
            list.add(key);
            if (list.size() > FEW) {
                if (list.size() == FEW + 1) {
                    set.addAll(list);
                } else {
                    set.add(key);
                }
            }
        }
    }
    /** Every this many polls, no op is skipped. */
    static final int FULL_SWEEP = 16;
    /** Polls so far: written under the lock, read without it by {@link OpRequest#test} (release and acquire: plain moves on x86). */
    @SuppressWarnings("unused") // through POLLS
    private long polls;
    private static final java.lang.invoke.VarHandle POLLS;

    static {
        try {
            POLLS = java.lang.invoke.MethodHandles.lookup().findVarHandle(Progress.class, "polls", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private long pollCount() {
        return (long) POLLS.getAcquire(this);
    }

    /** Advances every transfer in flight (but those waiting behind an older one, see {@link Op#waitKey()}); true when any moved. */
    synchronized boolean poll() {
        if (dev.ferry.spi.MpiLifecycle.isFinalized()) {
            return endAfterFinalize();
        }
        boolean moved = false;
        stuck.clear();
        long n = polls + 1;
        POLLS.setRelease(this, n);
        boolean sweep = n % FULL_SWEEP == 0;
        for (int i = 0; i < active.size(); i++) {
            Op op = active.get(i);
            Object key = sweep ? null : op.waitKey();
            if (key != null && stuck.contains(key)) {
                continue;
            }
            boolean opMoved = false;
            try {
                while (!op.isDone() && op.advance()) {
                    opMoved = true;
                }
            } catch (RuntimeException e) {
                op.fail(e instanceof FerryException ? e : new FerryException(op.describe() + " failed: " + e, e));
            }
            moved |= opMoved;
            if (op.isDone()) {
                active.remove(i--);
                finish(op, op.failure != null);
                moved = true;
            } else if (!sweep && !opMoved && (key = op.waitKey()) != null) {
                stuck.add(key);
            }
        }
        return moved;
    }

    static {
        // the assistant polls on its own: MPI_Finalize waits for its poll in flight, and it polls no more
        dev.ferry.spi.MpiLifecycle.beforeFinalize(() -> {
            StagedRuntime r = StagedRuntime.currentOrNull();
            if (r != null) {
                r.progress.quiesce();
            }
        });
    }

    /** Returns once a poll in flight (the lock's holder) has ended. */
    private synchronized void quiesce() {
    }

    /**
     * MPI was finalized with transfers in flight: they end with {@link dev.ferry.CommunicatorClosedException},
     * without another MPI call (their staging memory is left: the process is ending).
     */
    private boolean endAfterFinalize() {
        if (active.isEmpty()) {
            return false;
        }
        for (Op op : active) {
            op.fail(new dev.ferry.CommunicatorClosedException(op.describe() + ": MPI was finalized (Ferry.shutdown or exit) before it completed"));
        }
        active.clear();
        return true;
    }

    private static void finish(Op op, boolean failed) {
        try {
            op.cleanup(failed);
        } catch (RuntimeException e) {
            if (!failed) {
                op.failure = e;
                op.status = null;
            }
        }
    }

    /** Starts the assistant (once, when the thread level allows it) or wakes it; under the lock. */
    private void wakeAssistant() {
        if (closed || !assist) {
            return;
        }
        if (assistant == null) {
            if (dev.ferry.spi.MpiLifecycle.threadLevel() != dev.ferry.ThreadLevel.MULTIPLE) {
                return;
            }
            assistant = new Thread(this::assist, "ferry-staged-progress");
            assistant.setDaemon(true);
            assistant.start();
            return;
        }
        java.util.concurrent.locks.LockSupport.unpark(assistant);
    }

    /** The assistant's loop: see the class comment. */
    private void assist() {
        long pause = 0;
        while (!closed) {
            boolean any;
            synchronized (this) {
                any = !active.isEmpty();
            }
            if (!any) {
                pause = 0;
                java.util.concurrent.locks.LockSupport.park(this);
                continue;
            }
            if (awaiting.get() > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(this, 200_000);
                continue;
            }
            boolean moved;
            try {
                moved = poll();
            } catch (RuntimeException e) {
                moved = false; // a failed transfer is failed by poll itself; its owner sees the exception
            }
            if (moved) {
                pause = 0;
            } else {
                pause = pause == 0 ? 2_000 : Math.min(pause * 2, 1_000_000);
                java.util.concurrent.locks.LockSupport.parkNanos(this, pause);
            }
        }
    }

    /** Stops the assistant (at the end of the runtime). */
    void close() {
        Thread a;
        synchronized (this) {
            closed = true;
            a = assistant;
        }
        if (a != null) {
            java.util.concurrent.locks.LockSupport.unpark(a);
        }
    }

    /** Drives progress until {@code op} is done; its status, or its failure thrown. */
    Status await(Op op) {
        awaiting.incrementAndGet();
        try {
            return awaitPolling(op);
        } finally {
            awaiting.decrementAndGet();
        }
    }

    private Status awaitPolling(Op op) {
        int idle = 0;
        while (!op.isDone()) {
            long t = calls.start();
            if (poll()) {
                idle = 0;
                continue;
            }
            if (op.isDone()) {
                break;
            }
            if (t != 0) {
                calls.addNanos(Calls.Kind.IDLE, System.nanoTime() - t);
            }
            if (++idle < SPINS) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
        return op.result();
    }

    /** Cancels {@code op} (see {@link Op#cancel()}); true when it was cancelled, and is then done and cleaned up. */
    synchronized boolean cancel(Op op) {
        if (op.isDone() || !op.cancel()) {
            return false;
        }
        active.remove(op);
        finish(op, false);
        return true;
    }

    /** Runs {@code body} under the progress lock (which serializes staged's calls into the inner MPI). */
    synchronized <T> T locked(java.util.function.Supplier<T> body) {
        return body.get();
    }

    /** Transfers in flight, for leak checks. */
    synchronized int inFlight() {
        return active.size();
    }

    /** A user's handle on an op. */
    static final class OpRequest implements Request {
        private final Progress progress;
        private final Op op;
        /** The poll count at this request's last test: a test polls only when no poll ran since (a race costs one poll more). */
        private long testedAt = -1;

        OpRequest(Progress progress, Op op) {
            this.progress = progress;
            this.op = op;
        }

        @Override
        public Status waitFor() {
            return progress.await(op);
        }

        /**
         * Advances every transfer unless another thread did since this request's last test: a
         * thread that tests many requests in turn (Ferry's progress thread, for futures and waiting
         * virtual threads) then polls once per round, not once per request.
         */
        @Override
        public Optional<Status> test() {
            if (!op.isDone()) {
                if (progress.pollCount() == testedAt) {
                    progress.poll();
                }
                testedAt = progress.pollCount();
            }
            return op.isDone() ? Optional.of(op.result()) : Optional.empty();
        }

        @Override
        public boolean cancel() {
            return progress.cancel(op);
        }

        @Override
        public String toString() {
            return "StagedRequest[" + op.describe() + (op.isDone() ? ", done" : "") + "]";
        }
    }
}
