package dev.ferry.staged;

import dev.ferry.HostBuffer;
import java.util.ArrayDeque;
import java.util.function.LongFunction;

/**
 * Staging buffers of one size (pinned host memory with CUDA), reused across transfers.
 *
 * <p>Bounded, and free of the deadlock a plain bounded pool invites: a transfer that holds no
 * buffer always gets one ({@code guaranteed}), allocated beyond the bound if need be, so that
 * every transfer in flight can make progress whatever the others hold (two ranks that both
 * send large messages before receiving would otherwise each wait for a buffer the other's
 * transfer keeps). Further buffers of a transfer (its pipeline depth) come only from the bound.
 * At most {@code capacity} buffers are kept: one returned above that is freed at once. Pinned
 * allocation is slow (milliseconds for megabytes), so steady traffic reuses the same buffers.
 */
final class PinnedPool implements AutoCloseable {
    private final long bufferBytes;
    private final int capacity;
    private final LongFunction<HostBuffer> allocator;
    private final ArrayDeque<HostBuffer> free = new ArrayDeque<>();
    private int outstanding; // lent and not returned
    private int allocated;   // alive: free + outstanding
    private long allocations; // ever, for reports and leak checks
    private int peak;
    private boolean closed;

    PinnedPool(long bufferBytes, int capacity, LongFunction<HostBuffer> allocator) {
        this.bufferBytes = bufferBytes;
        this.capacity = capacity;
        this.allocator = allocator;
    }

    long bufferBytes() {
        return bufferBytes;
    }

    /**
     * A buffer, or null when the pool is at its bound and {@code guaranteed} is false. With
     * {@code guaranteed} a buffer is allocated beyond the bound when none is free.
     */
    HostBuffer acquire(boolean guaranteed) {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the staging pool was closed (Ferry.shutdown?)");
            }
            HostBuffer b = free.pollFirst();
            if (b != null) {
                outstanding++;
                peak = Math.max(peak, outstanding);
                return b;
            }
            if (allocated >= capacity && !guaranteed) {
                return null;
            }
            allocated++;
            outstanding++;
            allocations++;
            peak = Math.max(peak, outstanding);
        }
        try {
            return allocator.apply(bufferBytes);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                allocated--;
                outstanding--;
            }
            throw e;
        }
    }

    /** Returns a buffer: kept for reuse up to the bound, freed above it or after {@link #close()}. */
    void release(HostBuffer b) {
        if (b == null) {
            return;
        }
        boolean keep;
        synchronized (this) {
            outstanding--;
            keep = !closed && free.size() < capacity && allocated <= capacity;
            if (keep) {
                free.addFirst(b); // most recently used first: warm in caches and TLBs
            } else {
                allocated--;
            }
        }
        if (!keep) {
            b.close();
        }
    }

    /** Buffers lent and not returned. */
    synchronized int outstanding() {
        return outstanding;
    }

    /** Buffers alive (kept and lent). */
    synchronized int allocated() {
        return allocated;
    }

    /** Allocations ever made. */
    synchronized long allocations() {
        return allocations;
    }

    /** Most buffers lent at once. */
    synchronized int peak() {
        return peak;
    }

    /** Frees the kept buffers; lent ones are freed when returned. Idempotent. */
    @Override
    public void close() {
        HostBuffer[] drop;
        synchronized (this) {
            closed = true;
            drop = free.toArray(new HostBuffer[0]);
            free.clear();
            allocated -= drop.length;
        }
        for (HostBuffer b : drop) {
            b.close();
        }
    }
}
