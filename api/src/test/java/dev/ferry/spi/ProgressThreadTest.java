// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.ThreadLevel;
import dev.ferry.TruncationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The progress thread and the waits of virtual threads, without MPI: attempts that a flag or a counter completes. */
class ProgressThreadTest {

    /**
     * Many more virtual threads than carriers wait on attempts that only a virtual thread started
     * after them can satisfy: were a waiting thread to hold its carrier, that one would never run.
     */
    @Test
    void virtualThreadsWaitingOnAttemptsHoldNoCarrier() throws InterruptedException {
        int waiters = 8 * Runtime.getRuntime().availableProcessors() + 10;
        AtomicBoolean go = new AtomicBoolean();
        AtomicInteger done = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            int me = i;
            threads.add(Thread.ofVirtual().start(() -> {
                int got = Polling.onVirtualThread(() -> go.get() ? Optional.of(me) : Optional.empty(), ThreadLevel.MULTIPLE);
                if (got == me) done.incrementAndGet();
            }));
        }
        Thread.sleep(50); // every waiter has handed its attempt over (after 50 µs of its own attempts) and parked
        threads.add(Thread.ofVirtual().start(() -> go.set(true)));
        for (Thread t : threads) {
            assertTrue(t.join(Duration.ofSeconds(30)), "a waiting virtual thread held its carrier, or the progress thread never completed it");
        }
        assertEquals(waiters, done.get());
    }

    /** The exception an attempt throws on the progress thread is thrown by the waiting thread, the same one. */
    @Test
    void theAttemptsExceptionIsThrownAsItIs() throws InterruptedException {
        TruncationException failure = new TruncationException("a receive", 15, 15, "MPI_ERR_TRUNCATE", null);
        AtomicInteger attempts = new AtomicInteger();
        AtomicReference<Throwable> seen = new AtomicReference<>();
        Thread v = Thread.ofVirtual().start(() -> {
            try {
                Polling.onVirtualThread(() -> {
                    if (attempts.incrementAndGet() < 2000) return Optional.empty(); // still failing after the hand-over
                    throw failure;
                }, ThreadLevel.MULTIPLE);
            } catch (Throwable e) {
                seen.set(e);
            }
        });
        assertTrue(v.join(Duration.ofSeconds(30)));
        assertSame(failure, seen.get());
    }

    /** Below MPI_THREAD_MULTIPLE a virtual thread makes its attempts itself: none runs on the progress thread. */
    @Test
    void belowMultipleTheWaitingThreadMakesEveryAttempt() throws InterruptedException {
        AtomicInteger attempts = new AtomicInteger();
        AtomicBoolean elsewhere = new AtomicBoolean();
        AtomicReference<Thread> self = new AtomicReference<>();
        Thread v = Thread.ofVirtual().start(() -> {
            self.set(Thread.currentThread());
            Polling.onVirtualThread(() -> {
                if (Thread.currentThread() != self.get()) elsewhere.set(true);
                return attempts.incrementAndGet() < 200 ? Optional.empty() : Optional.of(1);
            }, ThreadLevel.SERIALIZED);
        });
        assertTrue(v.join(Duration.ofSeconds(30)));
        assertFalse(elsewhere.get(), "an attempt ran on another thread than the waiting one");
    }

    /** A future for the program is completed off the progress thread: its stages never run there. */
    @Test
    void aProgramsFutureIsCompletedOffTheProgressThread() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        CompletableFuture<String> stage = ProgressThread.pollForProgram(() -> attempts.incrementAndGet() < 50 ? Optional.empty() : Optional.of(7))
                .thenApply(v -> Thread.currentThread().getName());
        String ranOn = stage.get(30, TimeUnit.SECONDS);
        assertFalse(ranOn.equals("ferry-progress"), "a stage ran on the progress thread");
    }
}
