// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The life of one piece of memory, shared by a buffer and every slice of it: open, closed, and
 * the operations in flight on it.
 *
 * <p>A communicator pins a buffer for as long as an operation uses it (a blocking call, or a
 * non-blocking one until its {@link Request} completes). {@code close()} on a pinned buffer
 * returns at once: the buffer is closed (new operations refuse it with
 * {@link BufferFreedException}) and its memory is freed when the last pin is released, so an
 * operation in flight never reads or writes freed memory. A request that is never completed keeps
 * its memory until the process ends.
 */
public final class BufferLifetime {
    /**
     * The pins times two, plus {@link #CLOSED}: one word changed by compare-and-set, so that a call
     * pins and unpins its buffers without a lock (a monitor for each check, pin and unpin cost an
     * 8-byte call's checked front about a quarter of its time). Freed exactly when it reads
     * {@code CLOSED}: closed, and no pin left (a closed buffer takes no new pin).
     */
    private volatile int state;
    private static final int CLOSED = 1;
    private static final int PIN = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(BufferLifetime.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Runnable free; // null: the memory is borrowed and never freed here

    BufferLifetime(Runnable free) {
        this.free = free;
    }

    /** True until {@link #close()} was asked for. */
    public boolean isOpen() {
        return (state & CLOSED) == 0;
    }

    /** True once the memory was given back (closed, and no operation was in flight or the last one ended). */
    public boolean isFreed() {
        return state == CLOSED;
    }

    /** Operations in flight on this memory. */
    public int pins() {
        return state / PIN;
    }

    /**
     * Marks an operation in flight; throws {@link BufferFreedException} when the buffer was
     * closed. Every pin must be released once.
     */
    public void pin(Buffer b) {
        int s;
        do {
            s = state;
            if ((s & CLOSED) != 0) {
                throw new BufferFreedException("buffer " + b + " was closed");
            }
        } while (!STATE.compareAndSet(this, s, s + PIN));
    }

    /** Ends one operation; frees the memory when the buffer was closed meanwhile and this was the last one. */
    public void unpin() {
        int s;
        do {
            s = state;
            if (s < PIN) {
                throw new IllegalStateException("unpin without a pin");
            }
        } while (!STATE.compareAndSet(this, s, s - PIN));
        if (s - PIN == CLOSED && free != null) {
            free.run();
        }
    }

    /** Closes: frees now, or when the last operation in flight ends. Idempotent. */
    void close() {
        int s;
        do {
            s = state;
            if ((s & CLOSED) != 0) {
                return;
            }
        } while (!STATE.compareAndSet(this, s, s | CLOSED));
        if (s == 0 && free != null) {
            free.run();
        }
    }
}
