// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.FerryException;
import dev.ferry.InvalidArgumentException;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.spi.CallTracker.Op;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The waits that poll {@link Request#test()}: {@link Request#waitFor(java.time.Duration)},
 * {@link Request#waitAny}, {@link Request#testAny}, {@link Request#testAll}, and the waits of
 * virtual threads in blocking calls ({@link #onVirtualThread}). One backoff for all:
 * the first poll again at once (a spin hint), then sleeps doubling from a microsecond to a
 * millisecond, so that a short wait costs no sleep and a long one little CPU. Not for
 * applications: call the methods of {@link Request}.
 */
public final class Polling {
    /** Longest sleep between two polls. */
    static final long MAX_PAUSE_NANOS = 1_000_000;

    private Polling() {
    }

    /**
     * Calls {@code attempt} until it gives a value or {@code timeoutNanos} have passed (never, when
     * negative); the value, or empty on timeout.
     */
    public static <T> Optional<T> until(Supplier<Optional<T>> attempt, long timeoutNanos) {
        long start = System.nanoTime();
        long pause = 0;
        while (true) {
            Optional<T> v = attempt.get();
            if (v.isPresent()) {
                return v;
            }
            long waited = System.nanoTime() - start;
            if (timeoutNanos >= 0 && waited >= timeoutNanos) {
                return Optional.empty();
            }
            if (pause == 0) {
                pause = 1_000;
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(timeoutNanos >= 0 ? Math.min(pause, timeoutNanos - waited) : pause);
                pause = Math.min(pause * 2, MAX_PAUSE_NANOS);
            }
        }
    }

    /**
     * How long a virtual thread makes its attempts itself before it hands its wait to the
     * {@link ProgressThread}: a short wait (a message a few round trips away) costs no hand-off,
     * and a thousand waiting threads cost their carriers about 50 ms in all.
     */
    static final long VIRTUAL_POLL_NANOS = 50_000;

    /**
     * The wait of a virtual thread in a blocking call: {@code attempt} (non-blocking: a request's
     * test, a probe) until it gives a value, without holding the thread's carrier longer than one
     * attempt. The thread makes attempts itself for {@value #VIRTUAL_POLL_NANOS} ns, yielding its
     * carrier between them, then hands the attempt to the {@link ProgressThread} and parks until
     * that gives the value (or the exception the attempt threw, thrown here as it is). Below
     * {@code MPI_THREAD_MULTIPLE} ({@code level}), where Ferry's thread may not call MPI, it goes
     * on making them itself, parking between them with the backoff of {@link #until}.
     */
    static <T> T onVirtualThread(Supplier<Optional<T>> attempt, ThreadLevel level) {
        long start = System.nanoTime();
        do {
            Optional<T> v = attempt.get();
            if (v.isPresent()) {
                return v.get();
            }
            Thread.yield(); // a virtual thread gives its carrier to the next one that can run
        } while (System.nanoTime() - start < VIRTUAL_POLL_NANOS);
        if (level != ThreadLevel.MULTIPLE) {
            return until(attempt, -1).orElseThrow();
        }
        try {
            return ProgressThread.poll(attempt).join(); // parks: the carrier runs other virtual threads meanwhile
        } catch (CompletionException e) {
            throw unwrapped(e.getCause());
        }
    }

    /** The exception an attempt threw, as it threw it. */
    static RuntimeException unwrapped(Throwable cause) {
        if (cause instanceof RuntimeException r) {
            return r;
        }
        if (cause instanceof Error e) {
            throw e;
        }
        return new FerryException(String.valueOf(cause), cause);
    }

    private static void checkElements(Collection<? extends Request> requests, String op, boolean mayBeEmpty) {
        if (requests == null) {
            throw new InvalidArgumentException(op + ": the list of requests is null");
        }
        if (!mayBeEmpty && requests.isEmpty()) {
            throw new InvalidArgumentException(op + ": the list of requests is empty: there is nothing to wait for");
        }
        int i = 0;
        for (Request r : requests) {
            if (r == null) {
                throw new InvalidArgumentException(op + ": request " + i + " of " + requests.size() + " is null");
            }
            i++;
        }
    }

    /** {@link Request#testAny}: the index of the first complete request, in list order. */
    public static OptionalInt testAny(List<? extends Request> requests) {
        checkElements(requests, "Request.testAny", false);
        return firstComplete(requests);
    }

    private static OptionalInt firstComplete(List<? extends Request> requests) {
        for (int i = 0; i < requests.size(); i++) {
            if (requests.get(i).test().isPresent()) {
                return OptionalInt.of(i);
            }
        }
        return OptionalInt.empty();
    }

    /** {@link Request#waitAny}: polls {@link #testAny} with the backoff, inside one watched call for the watchdog and the threading rules. */
    public static int waitAny(List<? extends Request> requests) {
        checkElements(requests, "Request.waitAny", false);
        CallTracker.Slot s = CallTracker.enter(null, MpiLifecycle.threadLevel(), Op.WAIT_ANY, requests.size() + " requests", -2, -2, -2, -2, -1, null);
        try {
            return until(() -> {
                OptionalInt i = firstComplete(requests);
                return i.isPresent() ? Optional.of(i.getAsInt()) : Optional.<Integer>empty();
            }, -1).orElseThrow();
        } finally {
            CallTracker.exit(s);
        }
    }

    /** {@link Request#testAll}: tests every request; all statuses, or empty while one is in flight. */
    public static Optional<List<Status>> testAll(Collection<? extends Request> requests) {
        checkElements(requests, "Request.testAll", true);
        List<Status> out = new ArrayList<>(requests.size());
        RuntimeException failure = null;
        boolean all = true;
        for (Request r : requests) {
            try {
                Optional<Status> s = r.test();
                all &= s.isPresent();
                out.add(s.orElse(null));
            } catch (RuntimeException e) {
                // test the rest too: each test lets its operation progress
                if (failure == null) failure = e; else failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return all ? Optional.of(out) : Optional.empty();
    }
}
