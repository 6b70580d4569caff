// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.CudaException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The IPC mapping cache's rules, with a fake mapper: open once, stale detection, LRU bound, no unmapping under a copy. */
class CudaIpcCacheTest {
    private final Set<Long> open = new HashSet<>();
    private final List<String> log = new ArrayList<>();
    private long next = 0x1000;
    private boolean failOpen;

    private final CudaIpcCache.Mapper mapper = new CudaIpcCache.Mapper() {
        @Override
        public long open(byte[] handle, int device) {
            if (failOpen) throw new CudaException("cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_CONTEXT", 201);
            long a = next += 0x1000;
            open.add(a);
            log.add("open " + handle[0] + " on " + device);
            return a;
        }

        @Override
        public void close(long mapped, int device) {
            assertTrue(open.remove(mapped), "closes only what is open");
            log.add("close");
        }
    };

    /**
     * An owner's allocation that lands in a block still mapped here for a freed one: CUDA refuses to
     * map the block twice (ALREADY_MAPPED); the cache closes the owner's unused mappings and maps
     * again, and a mapping in use is left alone (the error reaches the caller).
     */
    @Test
    void aBlockStillMappedForAFreedAllocationIsClosedAndMappedAgain() {
        Set<Integer> blocks = new HashSet<>();
        java.util.Map<Long, Integer> blockOf = new java.util.HashMap<>();
        long[] nextAddress = {0x100000};
        CudaIpcCache.Mapper blocky = new CudaIpcCache.Mapper() {
            @Override
            public long open(byte[] handle, int device) {
                int block = handle[1];
                if (!blocks.add(block)) {
                    throw new CudaException("cuIpcOpenMemHandle failed: CUDA_ERROR_ALREADY_MAPPED (208)", CudaIpcCache.ALREADY_MAPPED);
                }
                long a = nextAddress[0] += 0x100000;
                blockOf.put(a, block);
                return a;
            }

            @Override
            public void close(long mapped, int device) {
                assertTrue(blocks.remove(blockOf.remove(mapped)), "closes only what is open");
            }
        };
        CudaIpcCache c = new CudaIpcCache(blocky, 8);
        byte[] x = handle(1), z = handle(2);
        x[1] = 5;
        z[1] = 5; // the same block of the owner's memory
        CudaIpcCache.Mapping mx = c.acquire(1, 100, x, 0xA000, 4096, 1, 0);
        // in use: the block cannot be closed, so the new allocation's mapping fails with CUDA's error
        CudaException busy = assertThrows(CudaException.class, () -> c.acquire(1, 100, z, 0xB000, 4096, 1, 0));
        assertEquals(CudaIpcCache.ALREADY_MAPPED, busy.result());
        c.release(mx);
        // unused (the owner freed it): closed, and the new allocation mapped
        CudaIpcCache.Mapping mz = c.acquire(1, 100, z, 0xB000, 4096, 1, 0);
        assertEquals(1, c.size(), "only the new allocation's mapping is open");
        assertEquals(Set.of(5), blocks);
        c.release(mz);
        // a block that stays mapped after the owner's unused mappings are closed: tried once more, then CUDA's error
        byte[] w = handle(3);
        w[1] = 6;
        blocks.add(6); // mapped by something other than this cache
        CudaIpcCache.Mapping again = null;
        try {
            again = c.acquire(1, 100, w, 0xC000, 4096, 1, 0);
        } catch (CudaException e) {
            assertEquals(CudaIpcCache.ALREADY_MAPPED, e.result(), "after closing what it could, CUDA's error reaches the caller");
        }
        assertNull(again, "block 6 stays mapped elsewhere, so the second try fails too");
        c.close();
    }

    private static byte[] handle(int id) {
        byte[] h = new byte[64];
        h[0] = (byte) id;
        return h;
    }

    @Test
    void mapsOncePerAllocationAndPeer() {
        CudaIpcCache c = new CudaIpcCache(mapper, 4);
        CudaIpcCache.Mapping a = c.acquire(1, 100, handle(1), 0xA000, 4096, 7, 0);
        c.release(a);
        CudaIpcCache.Mapping b = c.acquire(1, 100, handle(1), 0xA000, 4096, 7, 0);
        assertSame(a, b, "a hit");
        assertEquals(a.address + 16, b.at(16));
        c.release(b);
        CudaIpcCache.Mapping other = c.acquire(1, 101, handle(1), 0xA000, 4096, 7, 0);
        assertNotEquals(a.address, other.address, "another peer process is another mapping");
        c.release(other);
        CudaIpcCache.Mapping otherDevice = c.acquire(1, 100, handle(1), 0xA000, 4096, 7, 1);
        c.release(otherDevice);
        assertArrayEquals(new long[] {3, 1, 0, 0, 0}, c.stats());
        c.close();
        assertTrue(open.isEmpty(), "close unmaps everything");
    }

    @Test
    void aNewGenerationOrHandleAtTheSameAddressReplacesTheMapping() {
        CudaIpcCache c = new CudaIpcCache(mapper, 4);
        CudaIpcCache.Mapping a = c.acquire(1, 100, handle(1), 0xA000, 4096, 7, 0);
        c.release(a);
        CudaIpcCache.Mapping b = c.acquire(1, 100, handle(1), 0xA000, 4096, 8, 0);
        assertNotEquals(a.address, b.address);
        assertTrue(!open.contains(a.address), "the stale mapping was closed");
        c.release(b);
        CudaIpcCache.Mapping d = c.acquire(1, 100, handle(2), 0xA000, 4096, 8, 0);
        assertTrue(!open.contains(b.address), "a different handle is a different allocation");
        c.release(d);
        assertEquals(1, c.size());
        assertEquals(2, c.stats()[2], "two stale entries seen");
        c.close();
        assertTrue(open.isEmpty());
    }

    @Test
    void staleMappingInUseIsClosedAfterItsCopy() {
        CudaIpcCache c = new CudaIpcCache(mapper, 4);
        CudaIpcCache.Mapping a = c.acquire(1, 100, handle(1), 0xA000, 4096, 7, 0); // copy in flight
        CudaIpcCache.Mapping b = c.acquire(1, 100, handle(2), 0xA000, 4096, 8, 0);
        assertTrue(open.contains(a.address), "not unmapped under a running copy");
        c.release(a);
        assertTrue(!open.contains(a.address), "unmapped when the copy completed");
        c.release(b);
        c.close();
        assertTrue(open.isEmpty());
    }

    @Test
    void leastRecentlyUsedUnusedMappingsAreEvictedAboveTheBound() {
        CudaIpcCache c = new CudaIpcCache(mapper, 2);
        CudaIpcCache.Mapping m1 = c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0);
        c.release(m1);
        CudaIpcCache.Mapping m2 = c.acquire(1, 100, handle(2), 0x2000, 10, 2, 0);
        c.release(m2);
        c.release(c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0)); // m1 used again: m2 is the oldest
        CudaIpcCache.Mapping m3 = c.acquire(1, 100, handle(3), 0x3000, 10, 3, 0);
        assertTrue(!open.contains(m2.address), "m2 evicted");
        assertTrue(open.contains(m1.address));
        // in use: not evicted, the cache goes over its bound instead
        CudaIpcCache.Mapping m4 = c.acquire(1, 100, handle(4), 0x4000, 10, 4, 0);
        assertTrue(open.contains(m3.address), "in use, kept");
        assertTrue(!open.contains(m1.address), "the unused one went");
        c.release(m3);
        c.release(m4);
        assertEquals(2, c.size());
        c.close();
        assertTrue(open.isEmpty());
    }

    @Test
    void failedOpenPropagatesAndLeavesNothing() {
        CudaIpcCache c = new CudaIpcCache(mapper, 2);
        failOpen = true;
        assertThrows(CudaException.class, () -> c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0));
        assertEquals(0, c.size());
        failOpen = false;
        c.release(c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0));
        c.close();
        assertThrows(IllegalStateException.class, () -> c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0));
    }

    @Test
    void closeWithACopyInFlightUnmapsItWhenReleased() {
        CudaIpcCache c = new CudaIpcCache(mapper, 2);
        CudaIpcCache.Mapping m = c.acquire(1, 100, handle(1), 0x1000, 10, 1, 0);
        c.close();
        assertTrue(open.contains(m.address));
        c.release(m);
        assertTrue(open.isEmpty());
    }
}
