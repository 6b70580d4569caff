// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.util.concurrent.locks.LockSupport;

/**
 * The pause between two tests of something that will complete without the caller: spins briefly,
 * then parks for growing intervals up to 50 µs, a wait that costs little CPU and reacts within
 * tens of microseconds. One per wait; not thread-safe.
 */
public final class Backoff {
    private int rounds;

    /** Pauses before the next test. */
    public void pause() {
        if (rounds < 64) {
            rounds++;
            Thread.onSpinWait();
        } else {
            LockSupport.parkNanos(Math.min(50_000L, 1_000L << Math.min(6, (rounds++ - 64) / 16)));
        }
    }
}
