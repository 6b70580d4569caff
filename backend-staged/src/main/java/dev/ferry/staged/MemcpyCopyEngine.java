// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Staging copies between host memories: what {@link CudaCopyEngine} does with DMA, done with
 * {@link MemorySegment#copy}. With one worker thread per direction the copies are really
 * asynchronous and ordered per direction, like copies on two CUDA streams, so that tests without
 * a GPU see fences that are still pending; with none they run inline.
 *
 * <p>A test mode in the production jar, on purpose: it is chosen by the setting
 * {@code ferry.staged.stageHostBuffers=true} (never by default), which the conformance suite
 * ({@code StagedConformanceIT}, {@code StagedContract}) passes to its rank JVMs under mpirun so that
 * CI runs the whole pipeline (chunking, fences, progress, the IPC fallback) on machines with no GPU.
 * Moving it to the test sources would need a plug-in point for copy engines in the runtime, which
 * is more production surface than this engine; the probe report names the test mode when it is on.
 */
final class MemcpyCopyEngine implements CopyEngine {
    private final ExecutorService toStaging;
    private final ExecutorService fromStaging;
    private final Calls calls;

    /** {@code threaded}: one worker per direction; else copies run in the caller. */
    MemcpyCopyEngine(boolean threaded) {
        this(threaded, new Calls());
    }

    /**
     * As above, counting in {@code calls} the CUDA calls the CUDA engine would make for the same
     * steps (an asynchronous copy and its event record, a query or wait on a fence, a context sync
     * for staged memory), so that tests without a GPU see the per-message call budget.
     */
    MemcpyCopyEngine(boolean threaded, Calls calls) {
        this.calls = calls;
        if (threaded) {
            toStaging = Executors.newSingleThreadExecutor(r -> daemon(r, "ferry-staged-memcpy-out"));
            fromStaging = Executors.newSingleThreadExecutor(r -> daemon(r, "ferry-staged-memcpy-in"));
        } else {
            toStaging = null;
            fromStaging = null;
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    @Override
    public String name() {
        return toStaging == null ? "memcpy" : "memcpy (threaded)";
    }

    @Override
    public void awaitPriorWork(Buffer buffer) {
        // host memory: nothing is queued on it; counted as the cuCtxSynchronize the CUDA engine makes
        calls.count(Calls.Kind.CTX_SYNC);
    }

    @Override
    public Fence toStaging(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes) {
        MemorySegment from = host(src).asSlice(srcOffset, bytes);
        MemorySegment to = staging.segment().asSlice(stagingOffset, bytes);
        return run(toStaging, from, to, Calls.Kind.D2H_ASYNC);
    }

    @Override
    public Fence fromStaging(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes) {
        MemorySegment from = staging.segment().asSlice(stagingOffset, bytes);
        MemorySegment to = host(dst).asSlice(dstOffset, bytes);
        return run(fromStaging, from, to, Calls.Kind.H2D_ASYNC);
    }

    @Override
    public void toStagingNow(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes) {
        if (bytes == 0) return;
        long t = calls.start();
        MemorySegment.copy(host(src), srcOffset, staging.segment(), stagingOffset, bytes);
        calls.end(Calls.Kind.D2H_SYNC, t);
    }

    @Override
    public void fromStagingNow(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes) {
        if (bytes == 0) return;
        long t = calls.start();
        MemorySegment.copy(staging.segment(), stagingOffset, host(dst), dstOffset, bytes);
        calls.end(Calls.Kind.H2D_SYNC, t);
    }

    private static MemorySegment host(Buffer b) {
        if (b instanceof HostBuffer h) {
            return h.segment();
        }
        throw new IllegalArgumentException("the memcpy engine copies host memory only, not " + b);
    }

    private Fence run(ExecutorService worker, MemorySegment from, MemorySegment to, Calls.Kind kind) {
        if (from.byteSize() == 0) {
            return Fence.DONE;
        }
        long t = calls.start();
        Future<?> f;
        if (worker == null) {
            MemorySegment.copy(from, 0, to, 0, from.byteSize());
            f = null;
        } else {
            f = worker.submit(() -> MemorySegment.copy(from, 0, to, 0, from.byteSize()));
        }
        calls.end(kind, t);
        calls.count(Calls.Kind.EVENT_RECORD);
        // like an event: the first query or wait that finds it passed is counted; later ones are free
        return new Fence() {
            private boolean passed;

            @Override
            public synchronized boolean isDone() {
                if (passed) {
                    return true;
                }
                calls.count(Calls.Kind.EVENT_QUERY);
                if (f != null && !f.isDone()) {
                    return false;
                }
                get();
                return true;
            }

            @Override
            public synchronized void await() {
                if (passed) {
                    return;
                }
                calls.count(Calls.Kind.EVENT_SYNC);
                get();
            }

            private void get() {
                if (f != null) {
                    try {
                        f.get();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new FerryException("interrupted while waiting for a staging copy", e);
                    } catch (ExecutionException e) {
                        throw new FerryException("staging copy failed: " + e.getCause(), e.getCause());
                    }
                }
                passed = true;
            }
        };
    }

    @Override
    public void close() {
        for (ExecutorService e : new ExecutorService[] {toStaging, fromStaging}) {
            if (e != null) {
                e.shutdown();
                try {
                    e.awaitTermination(10, TimeUnit.SECONDS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
