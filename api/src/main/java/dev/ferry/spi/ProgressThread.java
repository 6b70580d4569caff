// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

import dev.ferry.CommunicatorClosedException;
import dev.ferry.ThreadLevel;
import dev.ferry.ThreadingException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Ferry's progress thread: finishes what no thread of the program polls. The future of a request
 * ({@link dev.ferry.Request#future()}) and the waits of virtual threads hand it an attempt (a
 * request's test, a probe: short, non-blocking native calls); the thread makes every attempt in
 * turn, again and again, and completes each one's future when it gives a value or fails. One
 * daemon platform thread per process, started at the first attempt, parked while it has none.
 *
 * <p>For 50 µs after something completed or was handed to it, it makes rounds without a pause;
 * then it parks between rounds for a time doubling from 10 µs to 100 µs, and never for less than
 * its last round took (up to a millisecond): with thousands of attempts it uses at most about half
 * a core. It calls MPI beside
 * the program's threads, so it needs {@code MPI_THREAD_MULTIPLE}; below that, nothing is handed
 * to it ({@link #poll} refuses). It never runs the program's code: a future it completes for the
 * program ({@link #completeForProgram}) is completed on another thread.
 *
 * <p>MPI_Finalize waits for the round in flight ({@link #quiesce}); afterwards every attempt
 * fails with {@link CommunicatorClosedException} without a native call. Not for applications.
 */
public final class ProgressThread {
    /**
     * How long the thread goes on making rounds without a pause after something completed or was
     * handed to it: a message a few microseconds away is seen at once. (A park of a few
     * microseconds lasts about 50 µs on Linux, the timer slack of a thread: pausing at once made
     * every wait of a virtual thread in a ping-pong 100 µs or more.)
     */
    private static final long SPIN_NANOS = 50_000;
    private static final long MIN_PAUSE_NANOS = 10_000;
    private static final long MAX_PAUSE_NANOS = 100_000;
    /** The longest pause that a slow round (many attempts) earns. */
    private static final long MAX_ROUND_PAUSE_NANOS = 1_000_000;

    private static final ConcurrentLinkedQueue<Attempt<?>> ADDED = new ConcurrentLinkedQueue<>();
    /** Held for each round: MPI_Finalize takes it, so that no attempt is inside MPI while the library shuts down. */
    private static final ReentrantLock ROUND = new ReentrantLock();
    private static volatile Thread thread;

    static {
        MpiLifecycle.beforeFinalize(ProgressThread::quiesce);
    }

    private ProgressThread() {
    }

    /** One attempt and the future it completes. */
    private record Attempt<T>(Supplier<Optional<T>> attempt, CompletableFuture<T> done) {
        /** Makes the attempt: the completion to run after the round, or null while it gives nothing. */
        Runnable once() {
            if (MpiLifecycle.isFinalized()) {
                return fail(new CommunicatorClosedException("MPI was finalized (Ferry.shutdown or exit) before this operation completed"));
            }
            try {
                Optional<T> v = attempt.get();
                return v.isPresent() ? () -> done.complete(v.get()) : null;
            } catch (RuntimeException e) {
                return fail(e);
            } catch (Error e) {
                return () -> done.completeExceptionally(e);
            }
        }

        private Runnable fail(RuntimeException e) {
            return () -> done.completeExceptionally(e);
        }
    }

    /**
     * Makes {@code attempt} on the progress thread until it gives a value or throws; the future
     * completes with that value or exception, on the progress thread (so its dependent stages must
     * be Ferry's own: short, never blocking). The attempt must not block.
     *
     * @throws ThreadingException below MPI_THREAD_MULTIPLE: Ferry's thread may not call MPI then
     */
    public static <T> CompletableFuture<T> poll(Supplier<Optional<T>> attempt) {
        ThreadLevel level = MpiLifecycle.threadLevel();
        if (level != ThreadLevel.MULTIPLE) {
            throw new ThreadingException("completing an operation on Ferry's progress thread needs MPI_THREAD_MULTIPLE; the MPI library provides "
                    + level.mpiName() + ": wait for it (waitFor, test) on the calling thread instead, or run with -Dferry.threads=multiple");
        }
        CompletableFuture<T> done = new CompletableFuture<>();
        ADDED.add(new Attempt<>(attempt, done));
        Thread t = thread;
        if (t == null) {
            t = start();
        }
        LockSupport.unpark(t);
        return done;
    }

    /**
     * {@link #poll} for a future of the program's (its dependent stages are the program's code): it
     * is completed on another thread than the progress thread ({@link #completeForProgram}).
     */
    public static <T> CompletableFuture<T> pollForProgram(Supplier<Optional<T>> attempt) {
        CompletableFuture<T> out = new CompletableFuture<>();
        poll(attempt).whenComplete((v, e) -> completeForProgram(() -> {
            if (e != null) {
                out.completeExceptionally(e);
            } else {
                out.complete(v);
            }
        }));
        return out;
    }

    /** Asks the thread to make its next round now (something it polls may have completed on another thread). */
    static void wake() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** True on the progress thread. */
    static boolean isCurrent() {
        return Thread.currentThread() == thread;
    }

    /**
     * Completes {@code action} (a future of the program's: its dependent stages are the program's
     * code) here, or on a new virtual thread when called on the progress thread, which must not
     * run the program's code: a stage that blocked there would hold up every other completion.
     */
    static void completeForProgram(Runnable action) {
        if (isCurrent()) {
            Thread.ofVirtual().name("ferry-future").start(action);
        } else {
            action.run();
        }
    }

    /** Before MPI_Finalize (with the finalized flag set): waits for the round in flight, so that no attempt is inside MPI. */
    private static void quiesce() {
        ROUND.lock();
        ROUND.unlock();
    }

    private static synchronized Thread start() {
        if (thread == null) {
            Thread t = new Thread(ProgressThread::run, "ferry-progress");
            t.setDaemon(true); // never keeps the JVM alive; what it still polls at exit is left, as any request in flight
            t.start();
            thread = t;
        }
        return thread;
    }

    private static void run() {
        List<Attempt<?>> active = new ArrayList<>();
        List<Runnable> completed = new ArrayList<>();
        long pause = 0;
        long busySince = System.nanoTime(); // when something last completed or was handed over
        while (true) {
            boolean added = false;
            for (Attempt<?> a; (a = ADDED.poll()) != null; ) {
                active.add(a);
                added = true;
            }
            if (active.isEmpty()) {
                pause = 0;
                LockSupport.park();
                busySince = System.nanoTime();
                continue;
            }
            if (added) {
                pause = 0;
                busySince = System.nanoTime();
            }
            long start = System.nanoTime();
            ROUND.lock();
            try {
                for (Iterator<Attempt<?>> it = active.iterator(); it.hasNext(); ) {
                    Runnable c = it.next().once();
                    if (c != null) {
                        it.remove();
                        completed.add(c);
                    }
                }
            } finally {
                ROUND.unlock();
            }
            if (!completed.isEmpty()) {
                for (Runnable c : completed) {
                    c.run(); // Ferry's own completions: a waiting thread is unparked, a program's future handed on
                }
                completed.clear();
                pause = 0;
                busySince = System.nanoTime();
                continue;
            }
            if (System.nanoTime() - busySince < SPIN_NANOS) {
                Thread.onSpinWait();
                continue;
            }
            pause = pause == 0 ? MIN_PAUSE_NANOS : Math.min(pause * 2, MAX_PAUSE_NANOS);
            long round = System.nanoTime() - start;
            LockSupport.parkNanos(Math.max(pause, Math.min(round, MAX_ROUND_PAUSE_NANOS)));
        }
    }
}
