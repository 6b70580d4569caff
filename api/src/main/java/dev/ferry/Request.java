// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.spi.Polling;
import dev.ferry.spi.ProgressThread;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * A non-blocking operation in flight. Its buffers must not be written (a send's) or read (a
 * receive's) until it completes; closing them meanwhile is safe (the memory is freed when the
 * request completes, see {@link Communicator}). Every request must be completed
 * ({@link #waitFor()}, a successful {@link #test()}, or its {@link #future()}, which Ferry
 * completes).
 *
 * <p>On a virtual thread {@link #waitFor()} does not hold the thread's carrier: it tests the
 * request for a few microseconds, then parks while Ferry's progress thread tests it (under
 * {@code MPI_THREAD_MULTIPLE}; below it, it goes on testing, parking between tests).
 */
public interface Request {
    /** Blocks until the operation completes; its status (for sends: destination, tag, bytes). */
    Status waitFor();

    /**
     * Completes the operation if it can without blocking: its status, or empty while in flight (or
     * while another thread is completing it, as {@link #future()}'s progress thread may be).
     */
    Optional<Status> test();

    /**
     * This operation as a {@link CompletableFuture}, which completes without any call of the
     * program's: Ferry's progress thread tests the request until it completes (a non-blocking
     * collective completes when the thread that runs it is done). It completes with the status
     * {@link #waitFor()} returns, or exceptionally with the exception {@code waitFor()} throws, the
     * same one (a truncated receive's {@link TruncationException}, say); as usual, a stage made
     * from it that needs its value ({@code thenApply}, ...) fails with a
     * {@link java.util.concurrent.CompletionException} whose cause is that exception.
     * The request may still be waited for and tested: it gives the same outcome. The same future is
     * returned each time.
     *
     * <pre>{@code
     * comm.irecv(in, n, DataType.DOUBLE, 0, 5).future()
     *     .thenApply(st -> st.count(DataType.DOUBLE))                  // elements received
     *     .thenCompose(k -> comm.isend(out, k, DataType.DOUBLE, 0, 6).future())
     *     .join();
     * }</pre>
     *
     * <p>{@code cancel} is {@link #cancel()}: a pending receive is cancelled, and so is the future
     * ({@code cancel} returns true; the request's status says cancelled); a receive that matched a
     * message already completes by receiving it, and a send or a collective cannot be cancelled:
     * {@code cancel} returns false and the future completes with the operation. Completing the
     * future by other means ({@code complete}, {@code orTimeout}, ...) changes the future only: the
     * operation goes on, its buffers stay in use until it ends, and Ferry still completes it.
     *
     * <p>Stages added without {@code Async} run on the thread that completes the future: a thread
     * of the program's that completed the request (by {@link #waitFor()}, say), or a virtual thread
     * that Ferry starts for them, never the progress thread itself. The progress thread calls MPI
     * beside the program's threads, so it needs {@code MPI_THREAD_MULTIPLE}; below it, this throws
     * {@link ThreadingException}, unless the request has completed already.
     *
     * <p>This default tests the request with {@link #test()} on Ferry's progress thread and
     * cannot cancel it; every request a {@link Communicator} returns overrides it.
     */
    default CompletableFuture<Status> future() {
        return ProgressThread.pollForProgram(this::test);
    }

    /**
     * Waits at most {@code timeout} for the operation, polling {@link #test()} (first spinning,
     * then sleeping up to a millisecond between polls). When it has not completed in time, throws
     * {@link OperationTimeoutException} and the request stays in flight, unchanged: its buffers
     * must stay alive, and it must still be completed later (by another wait or a successful test).
     */
    default Status waitFor(Duration timeout) {
        return Polling.until(this::test, timeout.toNanos()).orElseThrow(() -> new OperationTimeoutException(this
                + " did not complete within " + timeout.toMillis() + " ms; it is still in flight: keep its buffers alive and complete it later"));
    }

    /** Waits for every request, in order; the statuses in the same order. */
    static List<Status> waitAll(Collection<? extends Request> requests) {
        List<Status> out = new ArrayList<>(requests.size());
        RuntimeException failure = null;
        for (Request r : requests) {
            try {
                out.add(r.waitFor());
            } catch (RuntimeException e) {
                // keep completing the rest, so that no request is left dangling over freed memory
                if (failure == null) failure = e; else failure.addSuppressed(e);
                out.add(null);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return out;
    }

    /** Waits for every request, in order. */
    static List<Status> waitAll(Request... requests) {
        return waitAll(Arrays.asList(requests));
    }

    // ---- cancel, and completion of one of several requests ----------------------------------

    /**
     * Cancels a pending receive (MPI_Cancel followed by its completion). Returns once the request
     * is complete: {@code true} when the receive was cancelled: it took no message and wrote
     * nothing to its buffer, and {@link #waitFor()} / {@link #test()} return a {@link Status} with
     * {@link Status#cancelled()} true (byte count 0); a later message that it would have matched
     * goes to the next matching receive. {@code false} when it could not be cancelled because it
     * had matched a message already (on {@code staged}: once the first bytes of the message
     * arrived): it then completes by receiving that message, and {@link #waitFor()} returns its
     * status, or throws the receive's failure (e.g. {@link TruncationException}).
     *
     * <p>A request that has completed already is not changed: {@code false}. A send cannot be
     * cancelled (MPI 4 deprecates cancelling sends): {@code false} at once, the request stays in
     * flight, unchanged, and must be completed as usual. The receive of a {@link MatchedMessage}
     * has matched its message: {@code false}, and it is complete. This default cannot cancel
     * anything and returns {@code false}; every request a {@link Communicator} returns overrides it.
     */
    default boolean cancel() {
        return false;
    }

    /**
     * Blocks until one of {@code requests} completes, and returns its index in the list (the
     * lowest such index when several are complete), polling {@link #test()} of each like
     * {@link #waitFor(Duration)}, with the watchdog ({@code ferry.timeout}) watching the wait as
     * it watches {@link #waitFor()}. The request's status is then {@code requests.get(i).waitFor()}
     * (or {@code test()}), which returns at once. Unlike MPI_Waitany, which skips handles set to
     * MPI_REQUEST_NULL, a completed Ferry request stays complete: a request already completed is
     * returned again, so remove the returned one from the list before the next call.
     *
     * @throws InvalidArgumentException when the list is empty or holds {@code null} (MPI returns
     *         MPI_UNDEFINED for "nothing to wait for"; in Ferry that is a mistake)
     * @throws RuntimeException the failure of a request that completed with one (that request is
     *         then complete: its {@code waitFor()} throws the same exception)
     */
    static int waitAny(List<? extends Request> requests) {
        return Polling.waitAny(requests);
    }

    /**
     * Tests the requests in list order and returns the index of the first that is complete (it is
     * then complete as after a successful {@link #test()}); empty when none is complete yet. Each
     * test lets pending operations progress. A request already completed counts as complete, as in
     * {@link #waitAny}.
     *
     * @throws InvalidArgumentException when the list is empty or holds {@code null}
     * @throws RuntimeException the failure of the request that completed with one
     */
    static OptionalInt testAny(List<? extends Request> requests) {
        return Polling.testAny(requests);
    }

    /**
     * Tests every request (each test lets its operation progress, and completes it if it can) and
     * returns the statuses in the same order when all are complete, or empty when at least one is
     * still in flight (those that completed stay complete: their statuses are returned again by a
     * later call). An empty collection is complete: an empty list. When some requests fail, the
     * others are tested all the same, and the first failure is thrown (the others suppressed).
     *
     * @throws InvalidArgumentException when the collection holds {@code null}
     */
    static Optional<List<Status>> testAll(Collection<? extends Request> requests) {
        return Polling.testAll(requests);
    }
}
