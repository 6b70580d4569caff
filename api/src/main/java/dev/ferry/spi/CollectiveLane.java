// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Where the non-blocking collectives of one communicator run: a duplicate of it and one thread
 * of Ferry's that runs them as blocking collectives on that duplicate, in the order they were
 * started (checked at the start, their buffers pinned by their requests). Every rank starts its
 * collectives in the same order (MPI's rule), so the duplicates see them in the same order too;
 * running on a communicator of their own, they never match the caller's own blocking collectives
 * and point-to-point messages, and they progress while the caller computes or waits on something
 * else.
 *
 * <p>Made by the communicator's first non-blocking collective, which stays a local call: the
 * duplicate is only started there ({@link Transport#startDuplicate()}, MPI_Comm_idup: it takes its
 * place in the communicator's sequence of collectives without waiting for the other ranks), and
 * the lane's thread finishes it before it runs the first collective. Two communicators whose
 * first non-blocking collectives different ranks start in different orders therefore cannot wait
 * for each other. Closed with the communicator.
 */
final class CollectiveLane implements AutoCloseable {
    private final ExecutorService thread;
    // read and written on the lane's thread only (close reads them after the thread ended)
    private PendingDuplicate pending;
    private CheckedCommunicator shadow;
    private RuntimeException failed;

    CollectiveLane(CheckedCommunicator owner, PendingDuplicate duplicate) {
        this.pending = duplicate;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ferry-collectives-" + owner.id());
            t.setDaemon(true); // never keeps the JVM alive; MpiLifecycle sees a call in flight on it at exit
            return t;
        });
    }

    /** Queues {@code body} (a started collective's work on the duplicate); the request completes when it has run. */
    Request submit(String label, Consumer<CheckedCommunicator> body) {
        CompletableFuture<Void> done = CompletableFuture.runAsync(() -> body.accept(shadow()), thread);
        done.whenComplete((v, e) -> ProgressThread.wake()); // a future of the request, or a virtual thread waiting for it, completes now
        return new LaneRequest(label, done);
    }

    /** The duplicate, finished by the first collective that needs it; on the lane's thread. */
    private CheckedCommunicator shadow() {
        if (shadow == null) {
            if (failed != null) {
                throw new FerryException("the communicator of this communicator's non-blocking collectives could not be made: " + failed, failed);
            }
            try {
                shadow = new CheckedCommunicator(pending.finish());
            } catch (RuntimeException e) {
                failed = e;
                throw e;
            } finally {
                pending = null;
            }
        }
        return shadow;
    }

    /** Waits for the collectives already started (each under its own watchdog), then frees the duplicate and the thread. */
    @Override
    public void close() {
        thread.shutdown();
        try {
            thread.awaitTermination(Long.MAX_VALUE, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (shadow != null) {
                shadow.close();
            }
        }
    }

    /** A non-blocking collective: done when its blocking form returned on the lane's thread. */
    private record LaneRequest(String label, CompletableFuture<Void> done) implements Request {
        private static final Status NONE = new Status(Communicator.ANY_SOURCE, Communicator.ANY_TAG, 0);

        @Override
        public Status waitFor() {
            boolean interrupted = false;
            try {
                while (true) {
                    try {
                        done.get();
                        return NONE;
                    } catch (InterruptedException e) {
                        interrupted = true; // MPI's wait is not interruptible either: finish, then restore the flag
                    }
                }
            } catch (ExecutionException e) {
                throw rethrown(e.getCause());
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public Optional<Status> test() {
            if (!done.isDone()) {
                return Optional.empty();
            }
            return Optional.of(waitFor());
        }

        private RuntimeException rethrown(Throwable cause) {
            if (cause instanceof RuntimeException r) {
                return r; // the collective's own exception (MpiException, TruncationException, ...), as the blocking form throws it
            }
            if (cause instanceof Error e) {
                throw e;
            }
            return new FerryException(label + " failed: " + cause, cause);
        }

        @Override
        public String toString() {
            return label + (done.isDone() ? " (done)" : " (in flight)");
        }
    }
}
