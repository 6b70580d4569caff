// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.cuda.Cuda;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.cuda.CudaStream;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * What staged communicators of a process share: the staging pool and the small first-piece slots,
 * the copy engines (CUDA streams and events, or the memcpy workers of the test mode), a reference
 * to the process's CUDA IPC ({@link NodeIpc}: export table and mapping cache), and the progress engine. Made by the first open communicator,
 * released with the last one (or at {@code Ferry.shutdown()}), so that a loop of open and close
 * leaves nothing behind.
 */
final class StagedRuntime {
    private static StagedRuntime current;

    final StagedSettings settings;
    final String inner;
    final PinnedPool chunks;
    final PinnedPool slots;
    final CudaCopyEngine cuda;       // null without CUDA
    final MemcpyCopyEngine memcpy;   // null unless host buffers are staged (test mode)
    /** The process's CUDA IPC (its exports and mappings are used only when {@link #ipcEnabled()}). */
    final NodeIpc ipc;
    final Stats stats = new Stats();
    /** Native calls (CUDA driver, inner MPI) by kind, and their time when a measurement asks ({@link StagedDiagnostics#timeNativeCalls}). */
    final Calls calls = new Calls();
    final Progress progress;
    private int refs;
    private boolean closed;

    private StagedRuntime(StagedSettings s, String inner) {
        this.settings = s;
        this.inner = inner;
        this.progress = new Progress(calls, s.progressThread());
        boolean gpu = Cuda.isAvailable();
        LongFunction<HostBuffer> alloc = gpu ? Cuda::allocatePinned : HostBuffer::allocate;
        this.chunks = new PinnedPool(Math.min(s.chunk(), 64 * 1024), s.chunk(), s.chunk() * s.poolChunks(), alloc);
        this.slots = new PinnedPool(Wire.slot(s.eager()), 64, alloc);
        this.cuda = gpu ? new CudaCopyEngine(s.contextSync(), calls) : null;
        this.memcpy = s.stageHostBuffers() ? new MemcpyCopyEngine(s.memcpyThreads() > 0, calls) : null;
        this.ipc = NodeIpc.acquire(dev.ferry.Settings.process());
    }

    /** The process's runtime, made on first use; each communicator holds one reference. */
    static synchronized StagedRuntime acquire(StagedSettings s, String inner) {
        if (current == null || current.closed) {
            current = new StagedRuntime(s, inner);
        }
        current.refs++;
        return current;
    }

    /** The runtime if one is alive (for tests and reports), else null. */
    static synchronized StagedRuntime currentOrNull() {
        return current == null || current.closed ? null : current;
    }

    /** Drops one reference; the last one closes the runtime. */
    void release() {
        synchronized (StagedRuntime.class) {
            if (closed || --refs > 0) {
                return;
            }
        }
        close();
    }

    /** Closes everything now (Ferry.shutdown). */
    static void shutdown() {
        StagedRuntime r;
        synchronized (StagedRuntime.class) {
            r = current;
            current = null;
        }
        if (r != null) {
            r.close();
        }
    }

    boolean ipcEnabled() {
        return ipc.enabled() && settings.ipc();
    }

    /**
     * The engine that stages {@code b}: CUDA for device and managed memory, memcpy for host
     * memory in the test mode, or null: host memory goes straight to MPI.
     */
    CopyEngine engineFor(Buffer b) {
        if (b == null) {
            return null;
        }
        if (b.kind().needsCuda()) {
            return cuda;
        }
        return memcpy;
    }

    /** True for memory the IPC path can export (device memory, not managed). */
    static boolean ipcExportable(Buffer b) {
        return b != null && b.kind() == MemoryKind.DEVICE;
    }

    private void close() {
        synchronized (StagedRuntime.class) {
            if (closed) {
                return;
            }
            closed = true;
            if (current == this) {
                current = null;
            }
        }
        progress.close();
        RuntimeException first = null;
        for (AutoCloseable c : new AutoCloseable[] {cuda, memcpy, chunks, slots}) {
            if (c == null) continue;
            try {
                c.close();
            } catch (Exception e) {
                RuntimeException r = e instanceof RuntimeException re ? re : new RuntimeException(e);
                if (first == null) first = r; else first.addSuppressed(r);
            }
        }
        try {
            ipc.release();
        } catch (RuntimeException e) {
            if (first == null) first = e; else first.addSuppressed(e);
        }
        if (first != null) {
            throw first;
        }
    }

    boolean isClosed() {
        synchronized (StagedRuntime.class) {
            return closed;
        }
    }
}
