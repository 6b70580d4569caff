// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import dev.ferry.CudaException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The receiving side's cache of peer allocations mapped with cuIpcOpenMemHandle, so that a
 * buffer that is sent again and again is mapped once.
 *
 * <p>Key: the owner process (node and pid), the allocation's base address in the owner, and the
 * local device the mapping lives on. A hit is valid only when the offer's handle bytes, size and
 * generation equal the entry's: the owner bumps the generation when an allocation is released,
 * and CUDA gives a new allocation a new handle even at a reused address, so a stale mapping
 * (owner freed the memory and allocated again at the same address) is detected at the next
 * offer, closed, and the new allocation mapped. Owners never send invalidations: staleness is
 * found lazily, as MPI libraries do in their IPC registration caches.
 *
 * <p>CUDA maps a block of an owner's memory once per process: small allocations share blocks, and
 * an allocation may land in a block that is still mapped here for one the owner has freed (found
 * stale only when its address is offered again). cuIpcOpenMemHandle then fails with
 * CUDA_ERROR_ALREADY_MAPPED; the cache closes that owner's mappings that no copy is using and maps
 * again.
 *
 * <p>Bounded: above {@code capacity} entries the least recently used mapping that no copy is
 * using is closed (cuIpcCloseMemHandle). A mapping in use is never closed under a copy; a stale
 * one is detached and closed when its last copy completes. {@link #close()} closes everything.
 */
public final class CudaIpcCache implements AutoCloseable {
    /** Maps and unmaps handles: CUDA on a GPU, a fake in unit tests. */
    public interface Mapper {
        /** cuIpcOpenMemHandle on {@code device}; the mapped base address. */
        long open(byte[] handle, int device);

        /** cuIpcCloseMemHandle of an address returned by {@link #open}. */
        void close(long mapped, int device);
    }

    /** Which mapping: owner process and allocation, and the local device it is mapped on. */
    public record Key(long node, long pid, long base, int device) {
    }

    /** One open mapping. */
    public static final class Mapping {
        final Key key;
        final byte[] handle;
        final long size;
        final long generation;
        final long address;
        int users;
        boolean detached;

        Mapping(Key key, byte[] handle, long size, long generation, long address) {
            this.key = key;
            this.handle = handle;
            this.size = size;
            this.generation = generation;
            this.address = address;
        }

        /** The mapped address of the owner's {@code offset}. */
        public long at(long offset) {
            return address + offset;
        }
    }

    private final Mapper mapper;
    private final int capacity;
    private final LinkedHashMap<Key, Mapping> entries = new LinkedHashMap<>(16, 0.75f, true);
    private long opens, hits, stale, evictions, closes;
    private boolean closed;

    public CudaIpcCache(Mapper mapper, int capacity) {
        this.mapper = mapper;
        this.capacity = capacity;
    }

    /**
     * The mapping of the owner's allocation, opened if needed; the caller must {@link #release} it
     * when its copy is complete. Throws what the mapper throws (the caller falls back to staging).
     */
    public synchronized Mapping acquire(long node, long pid, byte[] handle, long base, long size, long generation, int device) {
        if (closed) {
            throw new IllegalStateException("the IPC cache was closed (Ferry.shutdown?)");
        }
        Key key = new Key(node, pid, base, device);
        Mapping m = entries.get(key);
        if (m != null) {
            if (m.generation == generation && m.size == size && Arrays.equals(m.handle, handle)) {
                hits++;
                m.users++;
                return m;
            }
            stale++;
            entries.remove(key);
            retire(m);
        }
        long address;
        try {
            address = mapper.open(handle.clone(), device);
        } catch (CudaException e) {
            // CUDA maps a block of the owner's memory once per process: an allocation that the owner's
            // allocator placed in a block still mapped here for an allocation it has since freed (not yet
            // found stale: its address was not offered again) cannot be mapped until that mapping is closed
            // (not on a stream-ordered view's thread, where the closes wait until the view holds no stream)
            if (e.result() != ALREADY_MAPPED || dev.ferry.spi.HeldStream.holding() || !dropUnused(node, pid, device)) {
                throw e;
            }
            address = mapper.open(handle.clone(), device);
        }
        opens++;
        m = new Mapping(key, handle.clone(), size, generation, address);
        m.users = 1;
        entries.put(key, m);
        evict();
        return m;
    }

    /** CUDA_ERROR_ALREADY_MAPPED: this process has the block of that handle mapped already. */
    static final int ALREADY_MAPPED = 208;

    /** Closes every mapping of the owner's memory on {@code device} that no copy is using; true when there was one. */
    private boolean dropUnused(long node, long pid, int device) {
        boolean any = false;
        Iterator<Mapping> it = entries.values().iterator();
        while (it.hasNext()) {
            Mapping m = it.next();
            if (m.users == 0 && m.key.node() == node && m.key.pid() == pid && m.key.device() == device) {
                it.remove();
                stale++;
                unmap(m);
                any = true;
            }
        }
        return any;
    }

    /** Ends one use of a mapping (its copy completed). */
    public synchronized void release(Mapping m) {
        m.users--;
        if (m.users == 0 && (m.detached || closed)) {
            unmap(m);
        } else if (m.users == 0) {
            evict();
        }
    }

    /** Closes least recently used mappings without users while above capacity. */
    private void evict() {
        Iterator<Mapping> it = entries.values().iterator();
        while (entries.size() > capacity && it.hasNext()) {
            Mapping m = it.next();
            if (m.users == 0) {
                it.remove();
                evictions++;
                unmap(m);
            }
        }
    }

    private void retire(Mapping m) {
        if (m.users == 0) {
            unmap(m);
        } else {
            m.detached = true;
        }
    }

    private void unmap(Mapping m) {
        closes++;
        // cuIpcCloseMemHandle may wait for the context's streams: on a stream-ordered view's thread one of them waits for
        // the running call, so the close waits until the view holds no stream
        dev.ferry.spi.HeldStream.runWhenReleased(() -> mapper.close(m.address, m.key.device()));
    }

    /** Open mappings in the cache. */
    public synchronized int size() {
        return entries.size();
    }

    /** How many mappings this cache has closed so far: unchanged between two moments, every mapping held at the first is still held. */
    public synchronized long closes() {
        return closes;
    }

    /** opens, hits, stale, evictions, closes. */
    public synchronized long[] stats() {
        return new long[] {opens, hits, stale, evictions, closes};
    }

    /** Closes every mapping without users now; those in use are closed when released. Idempotent. */
    @Override
    public void close() {
        List<Mapping> drop = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            for (Map.Entry<Key, Mapping> e : entries.entrySet()) {
                drop.add(e.getValue());
            }
            entries.clear();
        }
        RuntimeException first = null;
        for (Mapping m : drop) {
            synchronized (this) {
                if (m.users > 0) {
                    m.detached = true;
                    continue;
                }
            }
            try {
                synchronized (this) {
                    unmap(m);
                }
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
