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
 * collectives in the same order (MPI's rule), so the duplicates see them in the same order too; running on a communicator of their own, they never match the
 * caller's own blocking collectives and point-to-point messages, and they progress while the
 * caller computes or waits on something else. Made by the communicator's first non-blocking
 * collective (a collective call, as MPI_Comm_dup), closed with the communicator.
 */
final class CollectiveLane implements AutoCloseable {
    private final CheckedCommunicator shadow;
    private final ExecutorService thread;

    CollectiveLane(CheckedCommunicator owner, CheckedCommunicator shadow) {
        this.shadow = shadow;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ferry-collectives-" + owner.id());
            t.setDaemon(true); // never keeps the JVM alive; MpiLifecycle sees a call in flight on it at exit
            return t;
        });
    }

    /** Queues {@code body} (a started collective's work on the duplicate); the request completes when it has run. */
    Request submit(String label, Consumer<CheckedCommunicator> body) {
        CompletableFuture<Void> done = CompletableFuture.runAsync(() -> body.accept(shadow), thread);
        return new LaneRequest(label, done);
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
            shadow.close();
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
