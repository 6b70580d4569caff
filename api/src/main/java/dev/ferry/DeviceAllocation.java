// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One device allocation, shared by every {@link DeviceBuffer} sliced from it. Knows its base
 * address and size (what CUDA IPC needs), whether it was freed, and who wants to hear of the free
 * (caches of peer mappings, e.g.).
 */
public final class DeviceAllocation {
    private static final AtomicLong IDS = new AtomicLong();

    private final long id = IDS.incrementAndGet();
    private final int device;
    private final long base;
    private final long size;
    private final MemoryKind kind;
    private final Runnable free; // null when borrowed
    private final BufferLifetime lifetime = new BufferLifetime(this::freeNow);
    private final List<Runnable> releaseListeners = new CopyOnWriteArrayList<>();
    private volatile Object runtimeData;

    DeviceAllocation(int device, long base, long size, MemoryKind kind, Runnable free) {
        this.device = device;
        this.base = base;
        this.size = size;
        this.kind = kind;
        this.free = free;
    }

    /** Process-unique id, stable for the allocation's life. */
    public long id() {
        return id;
    }

    public int device() {
        return device;
    }

    public long baseAddress() {
        return base;
    }

    public long byteSize() {
        return size;
    }

    public MemoryKind kind() {
        return kind;
    }

    /** True when Ferry frees this allocation on release; false for borrowed pointers. */
    public boolean isOwned() {
        return free != null;
    }

    /** False once released (freed, or freed when the operations in flight on it end). */
    public boolean isAlive() {
        return lifetime.isOpen();
    }

    /** The life of this allocation, shared by every buffer sliced from it. */
    public BufferLifetime lifetime() {
        return lifetime;
    }

    /**
     * What the device runtime keeps of this allocation (the context that owns it, e.g.), computed
     * by {@code compute} on first use and kept for the allocation's life.
     */
    public Object runtimeData(java.util.function.Function<DeviceAllocation, Object> compute) {
        Object d = runtimeData;
        if (d == null) {
            d = compute.apply(this);
            runtimeData = d;
        }
        return d;
    }

    /** Runs {@code listener} just before the memory is freed (once). */
    public void onRelease(Runnable listener) {
        releaseListeners.add(listener);
    }

    /** Closes the allocation: tells listeners and frees owned memory now, or when the last operation in flight on it ends. Idempotent. */
    void release() {
        lifetime.close();
    }

    private void freeNow() {
        RuntimeException first = null;
        for (Runnable r : releaseListeners) {
            try {
                r.run();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        releaseListeners.clear();
        if (free != null) {
            free.run();
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "DeviceAllocation#" + id + "[device " + device + ", " + size + " bytes @0x" + Long.toHexString(base) + (isAlive() ? "" : lifetime.isFreed() ? ", freed" : ", closed") + "]";
    }
}
