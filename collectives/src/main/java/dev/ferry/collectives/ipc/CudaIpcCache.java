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
 * again. Where the block is mapped for an allocation still in use (two live allocations of one owner
 * in one block, both needed by one call), the new allocation is reached through that mapping: the
 * block is mapped whole, so the allocation lies at the same distance from the mapped one as in the
 * owner (checked against the mapped range, {@link Mapper#range}); that alias holds the mapping it
 * rides on until it is released, and is not kept.
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

        /** The base and size of the mapped range holding {@code address} in this process (cuMemGetAddressRange), or null when none. */
        default long[] range(long address, int device) {
            return null;
        }
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
        /** The mapping whose block this one lies in (an alias, never closed itself), or null. */
        final Mapping within;
        int users;
        boolean detached;

        Mapping(Key key, byte[] handle, long size, long generation, long address, Mapping within) {
            this.key = key;
            this.handle = handle;
            this.size = size;
            this.generation = generation;
            this.address = address;
            this.within = within;
        }

        /** The mapped address of the owner's {@code offset}. */
        public long at(long offset) {
            return address + offset;
        }
    }

    private final Mapper mapper;
    private final int capacity;
    private final LinkedHashMap<Key, Mapping> entries = new LinkedHashMap<>(16, 0.75f, true);
    /** Every mapping opened and not yet closed: the entries, and the detached ones still in use. */
    private final java.util.Set<Mapping> live = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    private long opens, hits, stale, evictions, closes, aliases;
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
            if (e.result() != ALREADY_MAPPED) {
                throw e;
            }
            CudaException last = e;
            Long again = null;
            if (!dev.ferry.spi.HeldStream.holding() && dropUnused(node, pid, device)) {
                try {
                    again = mapper.open(handle.clone(), device);
                } catch (CudaException e2) {
                    if (e2.result() != ALREADY_MAPPED) throw e2;
                    last = e2;
                }
            }
            if (again == null) {
                // the block is mapped for an allocation in use: reach this one through that mapping
                Mapping alias = alias(key, handle, size, generation);
                if (alias == null) throw last;
                return alias;
            }
            address = again;
        }
        opens++;
        m = new Mapping(key, handle.clone(), size, generation, address, null);
        m.users = 1;
        entries.put(key, m);
        live.add(m);
        evict();
        return m;
    }

    /**
     * The owner's allocation at {@code key.base()} reached through a mapping of the same owner whose
     * mapped range holds it at the owners' distance, or null: held (its mapping with it) until released.
     */
    private Mapping alias(Key key, byte[] handle, long size, long generation) {
        for (Mapping l : live) {
            if (l.key.node() != key.node() || l.key.pid() != key.pid() || l.key.device() != key.device()) continue;
            long at = l.address + (key.base() - l.key.base());
            long[] block = mapper.range(l.address, key.device());
            if (block == null || at < block[0] || at + size > block[0] + block[1]) continue;
            long[] there = mapper.range(at, key.device());
            if (there == null || there[0] != block[0]) continue;
            aliases++;
            l.users++;
            Mapping a = new Mapping(key, handle.clone(), size, generation, at, l);
            a.users = 1;
            return a;
        }
        return null;
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
        if (m.within != null) {
            if (--m.users == 0) release(m.within);
            return;
        }
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
        live.remove(m);
        // cuIpcCloseMemHandle may wait for the context's streams: on a stream-ordered view's thread one of them waits for
        // the running call, so the close waits until the view holds no stream
        dev.ferry.spi.HeldStream.runWhenReleased(() -> mapper.close(m.address, m.key.device()));
    }

    /** Open mappings in the cache. */
    public synchronized int size() {
        return entries.size();
    }

    /** opens, hits, stale, evictions, closes, aliases. */
    public synchronized long[] stats() {
        return new long[] {opens, hits, stale, evictions, closes, aliases};
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
