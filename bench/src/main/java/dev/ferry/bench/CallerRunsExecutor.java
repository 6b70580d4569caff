// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * An executor that runs every task on the thread that submits it. {@link BenchMain} makes JMH use
 * it ({@code -Djmh.executor=CUSTOM}), so that benchmark methods run on the main thread, the one
 * that initialized MPI: MPI is then called from one thread only, which any thread level provided by
 * MPI allows (MPI_THREAD_FUNNELED included), and the CUDA context stays current. This works
 * because every Ferry benchmark runs one thread in {@code SingleShotTime} mode, where JMH waits
 * for the task instead of timing it from outside.
 */
public final class CallerRunsExecutor extends AbstractExecutorService {
    private volatile boolean shutdown;

    /** The constructor JMH calls: thread count (must be 1) and a name prefix. */
    public CallerRunsExecutor(int threads, String prefix) {
        if (threads != 1) {
            throw new IllegalArgumentException("Ferry benchmarks run one thread per rank; got " + threads);
        }
    }

    @Override
    public void execute(Runnable command) {
        if (shutdown) {
            throw new java.util.concurrent.RejectedExecutionException("executor is shut down");
        }
        command.run();
    }

    @Override
    public void shutdown() {
        shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
        shutdown = true;
        return List.of();
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return true;
    }
}
