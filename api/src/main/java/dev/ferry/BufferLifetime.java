// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

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
    private final Runnable free; // null: the memory is borrowed and never freed here
    private int pins;
    private boolean closed;
    private boolean freed;

    BufferLifetime(Runnable free) {
        this.free = free;
    }

    /** True until {@link #close()} was asked for. */
    public synchronized boolean isOpen() {
        return !closed;
    }

    /** True once the memory was given back (closed, and no operation was in flight or the last one ended). */
    public synchronized boolean isFreed() {
        return freed;
    }

    /** Operations in flight on this memory. */
    public synchronized int pins() {
        return pins;
    }

    /**
     * Marks an operation in flight; throws {@link BufferFreedException} when the buffer was
     * closed. Every pin must be released once.
     */
    public synchronized void pin(Buffer b) {
        if (closed) {
            throw new BufferFreedException("buffer " + b + " was closed");
        }
        pins++;
    }

    /** Ends one operation; frees the memory when the buffer was closed meanwhile and this was the last one. */
    public void unpin() {
        boolean freeNow;
        synchronized (this) {
            if (pins <= 0) {
                throw new IllegalStateException("unpin without a pin");
            }
            pins--;
            freeNow = pins == 0 && closed && !freed;
            if (freeNow) freed = true;
        }
        if (freeNow && free != null) {
            free.run();
        }
    }

    /** Closes: frees now, or when the last operation in flight ends. Idempotent. */
    void close() {
        boolean freeNow;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            freeNow = pins == 0;
            if (freeNow) freed = true;
        }
        if (freeNow && free != null) {
            free.run();
        }
    }
}
