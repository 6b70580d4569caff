// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class BufferLifetimeTest {
    @Test
    void closedWithoutPinsIsFreedAtOnceAndRefusesPins() {
        AtomicInteger frees = new AtomicInteger();
        BufferLifetime l = new BufferLifetime(frees::incrementAndGet);
        assertTrue(l.isOpen());
        assertFalse(l.isFreed());
        l.close();
        l.close();
        assertFalse(l.isOpen());
        assertTrue(l.isFreed());
        assertEquals(1, frees.get());
        BufferFreedException e = assertThrows(BufferFreedException.class, () -> l.pin(null));
        assertEquals("buffer null was closed", e.getMessage());
        assertEquals(0, l.pins());
    }

    @Test
    void closedWhilePinnedIsFreedByTheLastUnpin() {
        AtomicInteger frees = new AtomicInteger();
        BufferLifetime l = new BufferLifetime(frees::incrementAndGet);
        l.pin(null);
        l.pin(null);
        assertEquals(2, l.pins());
        l.close();
        assertFalse(l.isOpen());
        assertFalse(l.isFreed());
        assertEquals(2, l.pins());
        l.unpin();
        assertEquals(0, frees.get());
        l.unpin();
        assertTrue(l.isFreed());
        assertEquals(1, frees.get());
        IllegalStateException e = assertThrows(IllegalStateException.class, l::unpin);
        assertEquals("unpin without a pin", e.getMessage());
    }

    @Test
    void borrowedMemoryIsNeverFreedHere() {
        BufferLifetime l = new BufferLifetime(null);
        l.pin(null);
        l.close();
        l.unpin();
        assertTrue(l.isFreed());
    }

    /** Threads pin and unpin while another closes: the memory is freed exactly once, after the last pin. */
    @Test
    void concurrentPinsAndCloseFreeOnce() throws InterruptedException {
        for (int round = 0; round < 50; round++) {
            AtomicInteger frees = new AtomicInteger();
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger freedWhilePinned = new AtomicInteger();
            BufferLifetime l = new BufferLifetime(() -> {
                if (inFlight.get() != 0) freedWhilePinned.incrementAndGet();
                frees.incrementAndGet();
            });
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    for (int i = 0; i < 2_000; i++) {
                        try {
                            l.pin(null);
                        } catch (BufferFreedException closed) {
                            return;
                        }
                        inFlight.incrementAndGet();
                        inFlight.decrementAndGet();
                        l.unpin();
                    }
                }));
            }
            start.countDown();
            Thread.onSpinWait();
            l.close();
            for (Thread t : threads) t.join();
            assertTrue(l.isFreed());
            assertEquals(0, l.pins());
            assertEquals(1, frees.get(), "freed exactly once");
            assertEquals(0, freedWhilePinned.get(), "never freed while pinned");
        }
    }
}
