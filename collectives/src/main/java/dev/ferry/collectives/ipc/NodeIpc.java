// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import dev.ferry.DeviceBuffer;
import dev.ferry.Settings;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaIpc;
import dev.ferry.cuda.CudaStream;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * CUDA IPC between the ranks of one node, as a process has it: the handles of its allocations that
 * it offers ({@link IpcExports}), the peers' allocations it has mapped ({@link CudaIpcCache}), and a
 * stream per device for the collectives that read and write peers' memory. Made by the first
 * communicator that uses it, released with the last (or at {@code Ferry.shutdown()}); under
 * {@code ferry.ipc=false} or without CUDA it is off ({@link #enabled()} false).
 */
public final class NodeIpc {
    private static NodeIpc current;

    private final boolean enabled;
    private final IpcExports exports;
    private final CudaIpcCache mappings;
    private final Map<Integer, CudaStream> streams = new HashMap<>();
    /** What the collectives over CUDA IPC did (for tests and reports): name -> count. */
    private final Map<String, LongAdder> counters = new java.util.concurrent.ConcurrentHashMap<>();
    private int refs;
    private boolean closed;

    private NodeIpc(Settings settings) {
        this.enabled = Cuda.isAvailable() && settings.get(IpcSettings.IPC);
        this.exports = enabled ? new IpcExports() : null;
        this.mappings = enabled ? new CudaIpcCache(new CudaIpcCache.Mapper() {
            @Override
            public long open(byte[] handle, int device) {
                return CudaIpc.open(handle, device);
            }

            @Override
            public void close(long mapped, int device) {
                CudaIpc.close(mapped, device);
            }
        }, settings.get(IpcSettings.CACHE_SIZE)) : null;
    }

    /** The process's node IPC, made on first use; each user holds one reference ({@link #release()}). */
    public static synchronized NodeIpc acquire(Settings settings) {
        if (current == null || current.closed) {
            current = new NodeIpc(settings);
        }
        current.refs++;
        return current;
    }

    /** The node IPC if one is alive (tests, reports), else null. */
    public static synchronized NodeIpc currentOrNull() {
        return current == null || current.closed ? null : current;
    }

    /** Drops one reference; the last one closes it. */
    public void release() {
        synchronized (NodeIpc.class) {
            if (closed || --refs > 0) {
                return;
            }
            closed = true;
            if (current == this) current = null;
        }
        close();
    }

    /** True when CUDA IPC is on in this process (CUDA present, {@code ferry.ipc} not false). */
    public boolean enabled() {
        return enabled;
    }

    /** This process's offer for {@code buffer} (CUDA IPC on). */
    public IpcOffer offer(DeviceBuffer buffer) {
        return exports.offer(buffer);
    }

    /** The exports (CUDA IPC on), for leak checks. */
    public IpcExports exports() {
        return exports;
    }

    /** The peers' allocations mapped here (CUDA IPC on). */
    public CudaIpcCache mappings() {
        return mappings;
    }

    /** The stream of the node's collectives on {@code device}, made on first use. */
    public synchronized CudaStream collectiveStream(int device) {
        if (closed) {
            throw new IllegalStateException("CUDA IPC of this process was closed (Ferry.shutdown?)");
        }
        return streams.computeIfAbsent(device, Cuda::newStream);
    }

    /** Adds one to counter {@code name}. */
    public void count(String name) {
        counters.computeIfAbsent(name, k -> new LongAdder()).increment();
    }

    /** The value of counter {@code name} (0 before the first). */
    public long counter(String name) {
        LongAdder a = counters.get(name);
        return a == null ? 0 : a.sum();
    }

    /** Every counter, for reports. */
    public Map<String, Long> counters() {
        Map<String, Long> m = new java.util.TreeMap<>();
        counters.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }

    /** Closes everything now (Ferry.shutdown). */
    public static void shutdown() {
        NodeIpc n;
        synchronized (NodeIpc.class) {
            n = current;
            current = null;
            if (n == null || n.closed) return;
            n.closed = true;
        }
        n.close();
    }

    private void close() {
        RuntimeException first = null;
        synchronized (this) {
            for (CudaStream st : streams.values()) {
                try {
                    st.synchronize();
                    st.close();
                } catch (RuntimeException e) {
                    if (first == null) first = e; else first.addSuppressed(e);
                }
            }
            streams.clear();
        }
        if (mappings != null) {
            try {
                mappings.close();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (exports != null) exports.clear();
        if (first != null) throw first;
    }
}
