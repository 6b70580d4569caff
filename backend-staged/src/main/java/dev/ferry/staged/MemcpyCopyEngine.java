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
 */
final class MemcpyCopyEngine implements CopyEngine {
    private final ExecutorService toStaging;
    private final ExecutorService fromStaging;

    /** {@code threaded}: one worker per direction; else copies run in the caller. */
    MemcpyCopyEngine(boolean threaded) {
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
        // host memory: nothing is queued on it
    }

    @Override
    public Fence toStaging(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes) {
        MemorySegment from = host(src).asSlice(srcOffset, bytes);
        MemorySegment to = staging.segment().asSlice(stagingOffset, bytes);
        return run(toStaging, from, to);
    }

    @Override
    public Fence fromStaging(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes) {
        MemorySegment from = staging.segment().asSlice(stagingOffset, bytes);
        MemorySegment to = host(dst).asSlice(dstOffset, bytes);
        return run(fromStaging, from, to);
    }

    private static MemorySegment host(Buffer b) {
        if (b instanceof HostBuffer h) {
            return h.segment();
        }
        throw new IllegalArgumentException("the memcpy engine copies host memory only, not " + b);
    }

    private static Fence run(ExecutorService worker, MemorySegment from, MemorySegment to) {
        if (from.byteSize() == 0) {
            return Fence.DONE;
        }
        if (worker == null) {
            MemorySegment.copy(from, 0, to, 0, from.byteSize());
            return Fence.DONE;
        }
        Future<?> f = worker.submit(() -> MemorySegment.copy(from, 0, to, 0, from.byteSize()));
        return new Fence() {
            @Override
            public boolean isDone() {
                if (!f.isDone()) {
                    return false;
                }
                await();
                return true;
            }

            @Override
            public void await() {
                try {
                    f.get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FerryException("interrupted while waiting for a staging copy", e);
                } catch (ExecutionException e) {
                    throw new FerryException("staging copy failed: " + e.getCause(), e.getCause());
                }
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
