// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import dev.ferry.Buffer;
import dev.ferry.CudaException;
import dev.ferry.DeviceBuffer;
import dev.ferry.spi.DeviceSupport;
import java.util.ArrayList;
import java.util.List;

/**
 * The device runtime of the API ({@link DeviceSupport}) on the CUDA driver: the ordering
 * contract by context synchronization, and the facts for {@code ferry doctor}.
 *
 * <p>Why synchronize contexts and not streams: the caller may have queued the work that writes
 * a buffer on any stream (the legacy or per-thread default stream, a blocking or non-blocking
 * stream of its own), and only the context knows them all. Three contexts can hold such work:
 * the one current on the calling thread (an application that made its own context current), the
 * one that allocated the buffer's memory, and the primary context of the buffer's device (where
 * Ferry, the CUDA runtime API and most libraries queue their work). Each distinct one is
 * synchronized once; with nothing queued a synchronization costs a few microseconds.
 */
public final class CudaDeviceSupport implements DeviceSupport {
    /** No owning context could be read (memory of a stream-ordered pool, e.g.): the primary context stands for it. */
    private static final Long UNKNOWN = 0L;

    @Override
    public boolean isAvailable() {
        return Cuda.isAvailable();
    }

    @Override
    public String describe() {
        return Cuda.describe();
    }

    @Override
    public List<String> details() {
        if (!Cuda.isAvailable() || Cuda.deviceCount() < 2) {
            return List.of();
        }
        List<String> lines = new ArrayList<>();
        lines.add("peer access (row can map column):");
        StringBuilder head = new StringBuilder("       ");
        for (int j = 0; j < Cuda.deviceCount(); j++) head.append(String.format("GPU%-3d", j));
        lines.add(head.toString());
        for (int i = 0; i < Cuda.deviceCount(); i++) {
            StringBuilder row = new StringBuilder(String.format("  GPU%-2d", i));
            for (int j = 0; j < Cuda.deviceCount(); j++) row.append(String.format("%-6s", i == j ? "-" : Cuda.canAccessPeer(i, j) ? "yes" : "no"));
            lines.add(row.toString());
        }
        return lines;
    }

    @Override
    public Scope enter(List<Buffer> deviceBuffers) {
        if (!Cuda.isAvailable()) {
            return Scope.NONE;
        }
        long caller = DriverContexts.current();
        for (long ctx : contexts(caller, deviceBuffers)) {
            DriverContexts.synchronize(ctx, caller);
        }
        return restoring(caller);
    }

    /**
     * The contexts of {@link #enter}, not waited for yet: {@link DeferredOrder#before} makes a
     * stream wait on the GPU for each primary context's work ({@code cuCtxRecordEvent}, CUDA 12.5
     * on) and waits on the host for any other (a context the application made, which it may
     * destroy, and with it an event of ours).
     */
    @Override
    public DeferredOrder enterDeferred(List<Buffer> deviceBuffers) {
        if (!Cuda.isAvailable()) {
            return DeviceSupport.super.enterDeferred(deviceBuffers);
        }
        long caller = DriverContexts.current();
        long[] contexts = contexts(caller, deviceBuffers);
        Scope restore = restoring(caller);
        return new DeferredOrder() {
            /** Contexts not yet waited for on the host. */
            private long[] pending = contexts;

            @Override
            public void complete() {
                long[] p = pending;
                pending = NO_CONTEXTS;
                long current = p.length == 0 ? 0 : DriverContexts.current();
                for (long ctx : p) {
                    DriverContexts.synchronize(ctx, current);
                }
            }

            @Override
            public void before(dev.ferry.DeviceStream stream) {
                long[] p = pending;
                if (p.length == 0) return;
                long current = DriverContexts.current(), handle = stream.streamHandle();
                // what was waited for on the host here is done: only the contexts ordered on the GPU stay pending
                long[] kept = null; // made at the first context waited for on the host (usually none is)
                int n = 0;
                for (long ctx : p) {
                    if (Cuda.isPrimaryContext(ctx) && DriverContexts.orderOnGpu(ctx, handle)) {
                        if (kept != null) kept[n] = ctx;
                        n++;
                    } else {
                        if (kept == null) kept = p.clone(); // its first n entries are the contexts ordered so far
                        DriverContexts.synchronize(ctx, current);
                    }
                }
                pending = kept == null ? p : n == 0 ? NO_CONTEXTS : java.util.Arrays.copyOf(kept, n);
            }

            @Override
            public void close() {
                restore.close();
            }
        };
    }

    private static final long[] NO_CONTEXTS = {};

    /**
     * The contexts whose work a call on {@code deviceBuffers} waits for: the caller's current one,
     * and each buffer's owner and its device's primary context, each once.
     */
    private static long[] contexts(long caller, List<Buffer> deviceBuffers) {
        long[] found = new long[1 + 2 * deviceBuffers.size()];
        int n = 0;
        if (caller != 0) {
            found[n++] = caller;
        }
        for (Buffer b : deviceBuffers) {
            if (!(b instanceof DeviceBuffer d)) {
                continue;
            }
            n = add(found, n, owner(d));
            n = add(found, n, Cuda.device(d.device()).contextHandle());
        }
        return n == found.length ? found : java.util.Arrays.copyOf(found, n);
    }

    private final java.util.Map<Integer, CudaStream> reductionStreams = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public boolean reducesOnDevice(dev.ferry.DataType type, dev.ferry.ReduceOp op) {
        return Cuda.isAvailable() && op.appliesTo(type);
    }

    @Override
    public void reduce(int device, dev.ferry.DataType type, dev.ferry.ReduceOp op, long out, long[] sources, long count) {
        // one stream per device for these folds, made once (never destroyed: it lives as long as the process's contexts)
        CudaStream stream = reductionStreams.computeIfAbsent(device, Cuda::newStream);
        DeviceReduction.reduce(type, op, out, sources, count, stream);
        stream.synchronize();
    }

    @Override
    public Buffer allocateLike(Buffer like, long bytes) {
        return Cuda.allocate(like.device(), bytes);
    }

    @Override
    public void copy(Buffer dst, Buffer src, long bytes) {
        Cuda.copy(dst, src, bytes);
    }

    @Override
    public void copyToDevice(long address, dev.ferry.HostBuffer src, long bytes) {
        Cuda.copy(address, src.address(), bytes);
    }

    @Override
    public StreamOrder streamOrder(dev.ferry.DeviceStream stream) {
        return CudaStreamOrder.of(stream);
    }

    @Override
    public Scope preserveContext() {
        return Cuda.isAvailable() ? restoring(DriverContexts.current()) : Scope.NONE;
    }

    /** A scope whose close makes {@code caller} current again (when it is not). */
    static Scope restoring(long caller) {
        return () -> {
            if (DriverContexts.current() != caller) {
                DriverContexts.setCurrent(caller);
            }
        };
    }

    /** {@code found}'s first {@code n} contexts with {@code ctx} added, unless it is 0 or there: the new count. */
    private static int add(long[] found, int n, long ctx) {
        if (ctx == 0) return n;
        for (int i = 0; i < n; i++) {
            if (found[i] == ctx) return n;
        }
        found[n] = ctx;
        return n + 1;
    }

    /** The context that owns {@code d}'s allocation (0 when the driver cannot tell), asked once per allocation. */
    static long owner(DeviceBuffer d) {
        return (Long) d.allocation().runtimeData(a -> owningContext(a.baseAddress()));
    }

    private static Long owningContext(long address) {
        try {
            return DriverContexts.contextOf(address);
        } catch (CudaException e) {
            return UNKNOWN;
        }
    }
}
