// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/**
 * What a stream-ordered view's thread may not do while it runs a call: the caller's stream waits
 * for that call (a {@code cuStreamWaitValue64} on the stream), so a CUDA call that waits for the
 * whole context or device, such as {@code cuIpcCloseMemHandle}, would wait for the stream, which
 * waits for the call: a deadlock, seen with ranks sharing one GPU under MPS. Such work is handed to
 * {@link #runWhenReleased}: on a view's thread it runs on the caller's thread at the view's next
 * {@code synchronize()} or {@code close()} (or at a later call, once many are waiting), when no
 * mark of Ferry's holds the stream; on any other thread it runs at once.
 */
public final class HeldStream {
    private HeldStream() {
    }

    /** True on a stream-ordered view's thread, where the caller's stream waits for the running call. */
    public static boolean holding() {
        return StreamOrderedCommunicator.onViewThread();
    }

    /** Runs {@code work} now, or, on a view's thread, once the view holds no stream (see the class comment). */
    public static void runWhenReleased(Runnable work) {
        if (!StreamOrderedCommunicator.deferOnViewThread(work)) {
            work.run();
        }
    }
}
