// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.HostBuffer;

/**
 * The copy steps of staging, behind one small interface so that the pipeline runs the same with a
 * GPU ({@link CudaCopyEngine}: cuMemcpyAsync on streams, events as fences) and without one
 * ({@link MemcpyCopyEngine}: host memory copies, for tests of the pipeline on machines with no GPU).
 *
 * <p>Copies are asynchronous: each returns a {@link Fence} that says when the bytes have arrived.
 * Copies of one direction run in the order they were issued.
 */
interface CopyEngine extends AutoCloseable {
    /** "cuda" or "memcpy", for reports. */
    String name();

    /**
     * Makes the work that was queued on {@code buffer}'s memory before this call complete before the
     * engine reads or writes it (cuCtxSynchronize of its device; nothing for host memory).
     */
    void awaitPriorWork(Buffer buffer);

    /** Copies {@code bytes} from {@code src} at {@code srcOffset} into the staging buffer at {@code stagingOffset}. */
    Fence toStaging(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes);

    /** Copies {@code bytes} from the staging buffer at {@code stagingOffset} into {@code dst} at {@code dstOffset}. */
    Fence fromStaging(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes);

    /**
     * Copies {@code bytes} from {@code src} into the staging buffer and returns when they are there:
     * one synchronous driver call (cuMemcpy), cheaper for small copies than an asynchronous copy,
     * an event record and a wait.
     */
    void toStagingNow(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes);

    /** Copies {@code bytes} from the staging buffer into {@code dst} and returns when they are there (cuMemcpy from pinned memory). */
    void fromStagingNow(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes);

    /** Waits for every copy in flight and releases streams, events and threads. */
    @Override
    void close();

    /** Completion of an asynchronous copy. */
    interface Fence {
        /** A fence that is already passed. */
        Fence DONE = new Fence() {
            @Override
            public boolean isDone() {
                return true;
            }

            @Override
            public void await() {
            }
        };

        /** True once the copy is complete; throws if it failed. */
        boolean isDone();

        /** Blocks until the copy is complete; throws if it failed. */
        void await();
    }
}
