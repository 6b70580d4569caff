// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.HostBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PinnedPoolTest {
    private final List<HostBuffer> made = new ArrayList<>();

    private long now; // the pools' clock, in nanoseconds

    /** A pool that trims beyond-bound buffers as soon as a burst is over. */
    private PinnedPool pool(long min, long max, long capacity) {
        return pool(min, max, capacity, 0);
    }

    private PinnedPool pool(long min, long max, long capacity, long trimAfterNanos) {
        return new PinnedPool(min, max, capacity, n -> {
            HostBuffer b = HostBuffer.allocate(n);
            made.add(b);
            return b;
        }, trimAfterNanos, () -> now);
    }

    @Test
    void aTransferHoldingNothingWaitsForAReturnedBufferAndGetsOneBeyondTheBoundAfterAStall() {
        PinnedPool p = pool(4096, 4096, 8192);
        HostBuffer a = p.acquireForTransfer(4096, true), b = p.acquireForTransfer(4096, true);
        assertNotNull(a);
        assertNotNull(b);
        assertNull(p.acquireForTransfer(4096, false), "a transfer already holding one waits");
        assertNull(p.acquireForTransfer(4096, true), "at the bound, a transfer holding none waits too");
        now += PinnedPool.STALL_NANOS / 2;
        assertNull(p.acquireForTransfer(4096, true), "not yet a stall");
        p.release(a);
        assertSame(a, p.acquireForTransfer(4096, true), "a returned buffer is reused");
        assertNull(p.acquireForTransfer(4096, true), "exhausted again: the stall clock starts over");
        now += PinnedPool.STALL_NANOS;
        HostBuffer c = p.acquireForTransfer(4096, true);
        assertNotNull(c, "no buffer came back for the stall time: granted beyond the bound (a deadlock cannot form)");
        assertEquals(1, p.stallGrants());
        assertNull(p.acquireForTransfer(4096, false), "but never to a transfer that already holds one");
        assertNull(p.acquireForTransfer(4096, true), "one buffer per stall: the next waiting transfer waits for another stall");
        now += PinnedPool.STALL_NANOS;
        HostBuffer d = p.acquireForTransfer(4096, true);
        assertNotNull(d, "a second stall grants a second buffer");
        assertEquals(2, p.stallGrants());
        p.release(a);
        p.release(b);
        p.release(c);
        p.release(d);
        p.close();
    }

    @Test
    void buffersBeyondTheBoundAreKeptThroughABurstAndTrimmedAfterIt() {
        PinnedPool p = pool(4096, 4096, 8192, 1_000_000);
        List<HostBuffer> window = new ArrayList<>();
        for (int round = 0; round < 3; round++) { // three windows of six transfers, each holding one guaranteed buffer
            for (int i = 0; i < 6; i++) window.add(p.acquire(4096, true));
            window.forEach(p::release);
            window.clear();
            now += 10_000; // the next window comes soon
        }
        assertEquals(6, p.allocations(), "the second and third windows reuse the first one's buffers");
        assertEquals(6 * 4096, p.allocatedBytes(), "kept during the burst");
        HostBuffer x = p.acquire(4096, false), y = p.acquire(4096, false);
        assertNotNull(x);
        assertNotNull(y);
        assertNull(p.acquire(4096, false), "kept buffers beyond the bound are not lent beyond it to a transfer that may wait");
        HostBuffer z = p.acquire(4096, true);
        assertEquals(6, p.allocations(), "but a guaranteed request takes one of them");
        p.release(x);
        p.release(y);
        p.release(z);
        now += 2_000_000; // the burst is over
        HostBuffer a = p.acquire(4096, false);
        assertEquals(8192, p.allocatedBytes(), "trimmed to the bound at the next use");
        assertEquals(6, p.allocations(), "and served from what was kept");
        p.release(a);
        assertEquals(4, made.stream().filter(b -> !b.isAlive()).count());
        p.close();
    }

    @Test
    void reusesWithinTheBoundAndRefusesBeyondItUnlessGuaranteed() {
        PinnedPool p = pool(1024, 4096, 8192);
        HostBuffer a = p.acquire(4096, false);
        HostBuffer b = p.acquire(3000, false);
        assertEquals(4096, b.byteSize(), "rounded up to its class");
        assertNull(p.acquire(4096, false), "at the bound");
        HostBuffer c = p.acquire(4096, true);
        assertNotNull(c, "a transfer holding nothing always gets one");
        assertEquals(3, p.outstanding());
        p.release(c);
        assertTrue(!c.isAlive(), "above the bound: freed at once");
        p.release(a);
        assertSame(a, p.acquire(4096, false), "kept and reused");
        p.release(a);
        p.release(b);
        assertEquals(0, p.outstanding());
        assertEquals(8192, p.allocatedBytes());
        p.close();
        assertEquals(0, p.allocatedBytes());
        assertTrue(made.stream().noneMatch(HostBuffer::isAlive), "close frees everything kept");
        assertThrows(IllegalStateException.class, () -> p.acquire(1, true));
    }

    @Test
    void smallRequestsTakeSmallClassesAndMakeRoomFromOtherClasses() {
        PinnedPool p = pool(1024, 16384, 16384);
        HostBuffer big = p.acquire(16384, false);
        p.release(big);
        HostBuffer small = p.acquire(100, false);
        assertEquals(1024, small.byteSize());
        assertTrue(!big.isAlive(), "the kept big buffer was freed to make room within the bound");
        HostBuffer mid = p.acquire(5000, false);
        assertEquals(8192, mid.byteSize());
        assertThrows(IllegalArgumentException.class, () -> p.acquire(16385, true));
        p.release(small);
        p.release(mid);
        p.close();
    }

    @Test
    void buffersReturnedAfterCloseAreFreed() {
        PinnedPool p = pool(4096, 4096, 4096 * 2);
        HostBuffer a = p.acquire(10, true);
        p.close();
        assertTrue(a.isAlive(), "a lent buffer is not freed under its user");
        p.release(a);
        assertTrue(!a.isAlive());
        assertEquals(0, p.allocatedBytes());
    }

    @Test
    void allocationFailureLeavesTheCountsRight() {
        PinnedPool p = new PinnedPool(4096, 4096, 4096, n -> {
            throw new OutOfMemoryError("pinned");
        });
        assertThrows(OutOfMemoryError.class, () -> p.acquire(1, true));
        assertEquals(0, p.outstanding());
        assertEquals(0, p.allocatedBytes());
    }
}
