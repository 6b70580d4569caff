// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Platform threads of Ferry's that make the blocking calls of virtual threads that cannot be
 * polled: a collective, a split or a duplicate called on a virtual thread runs here while that
 * thread parks, so that it never holds its carrier while it waits for the other ranks. (A
 * message can be waited for with short non-blocking calls, see
 * {@link Polling#onVirtualThread}; a collective is the planner's algorithm, made of blocking
 * calls, and gets a thread for its length.) One thread per such call in flight, started when
 * none is idle and ended after 30 s idle; collectives on one communicator never overlap, so there
 * are at most as many as communicators in use at once.
 */
final class PlatformThreads {
    private static final AtomicInteger COUNT = new AtomicInteger();
    private static final ExecutorService POOL = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
        Thread t = new Thread(r, "ferry-blocking-" + COUNT.incrementAndGet());
        t.setDaemon(true); // as the calling thread's call: MpiLifecycle sees that call in flight at exit
        return t;
    });

    private PlatformThreads() {
    }

    /** Runs {@code body} on a platform thread while the calling (virtual) thread parks; its value, or its exception as it threw it. */
    static <T> T call(Supplier<T> body) {
        try {
            return CompletableFuture.supplyAsync(body, POOL).join();
        } catch (CompletionException e) {
            throw Polling.unwrapped(e.getCause());
        }
    }
}
