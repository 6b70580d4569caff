package dev.ferry.staged;

import dev.ferry.HostBuffer;
import java.util.ArrayDeque;
import java.util.function.LongFunction;

/**
 * Staging buffers (pinned host memory with CUDA), reused across transfers, in power-of-two size
 * classes from {@code minBytes} to {@code maxBytes} (the chunk size), so that the 100 KiB rest
 * of a message does not hold a 4 MiB buffer.
 *
 * <p>Bounded, and free of the deadlock a plain bounded pool invites: a transfer that holds no
 * buffer always gets one ({@code guaranteed}), allocated beyond the bound if need be, so that
 * every transfer in flight can make progress whatever the others hold (two ranks that both send
 * large messages before receiving would otherwise each wait for a buffer the other's transfer
 * keeps). Further buffers of a transfer (its pipeline depth) come only from within the bound.
 * At most {@code capacityBytes} are kept: a buffer returned above that is freed at once. Pinned
 * allocation is slow (about a millisecond per megabyte), so steady traffic reuses the same buffers.
 */
final class PinnedPool implements AutoCloseable {
    private final long minBytes;
    private final long maxBytes;
    private final long capacityBytes;
    private final LongFunction<HostBuffer> allocator;
    private final java.util.List<ArrayDeque<HostBuffer>> free = new java.util.ArrayList<>();
    private long allocatedBytes;  // alive: kept and lent
    private int outstanding;      // lent and not returned
    private long allocations;     // ever
    private int peak;
    private boolean closed;

    /** One size only: {@code bytes}, at most {@code count} kept. */
    PinnedPool(long bytes, int count, LongFunction<HostBuffer> allocator) {
        this(bytes, bytes, bytes * count, allocator);
    }

    PinnedPool(long minBytes, long maxBytes, long capacityBytes, LongFunction<HostBuffer> allocator) {
        if (minBytes <= 0 || maxBytes < minBytes) {
            throw new IllegalArgumentException("size classes [" + minBytes + ", " + maxBytes + "]");
        }
        this.minBytes = minBytes;
        this.maxBytes = maxBytes;
        this.capacityBytes = capacityBytes;
        this.allocator = allocator;
        int classes = 1;
        for (long s = minBytes; s < maxBytes; s <<= 1) classes++;
        for (int i = 0; i < classes; i++) free.add(new ArrayDeque<>());
    }

    /** The largest buffer. */
    long maxBytes() {
        return maxBytes;
    }

    private int classOf(long bytes) {
        int c = 0;
        for (long s = minBytes; s < bytes && s < maxBytes; s <<= 1) c++;
        return c;
    }

    private long sizeOf(int c) {
        return Math.min(minBytes << c, maxBytes);
    }

    /**
     * A buffer of at least {@code bytes} (at most the largest class), or null when the pool is at its
     * bound and {@code guaranteed} is false. With {@code guaranteed} a buffer is allocated beyond the
     * bound when none is free.
     */
    HostBuffer acquire(long bytes, boolean guaranteed) {
        if (bytes > maxBytes) {
            throw new IllegalArgumentException(bytes + " bytes is more than the largest staging buffer (" + maxBytes + ")");
        }
        int c = classOf(bytes);
        long size = sizeOf(c);
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the staging pool was closed (Ferry.shutdown?)");
            }
            HostBuffer b = free.get(c).pollFirst();
            if (b != null) {
                lent();
                return b;
            }
            if (allocatedBytes + size > capacityBytes && !guaranteed) {
                // at the bound: make room from buffers of other classes kept free, else refuse
                if (!dropFreeFor(size)) {
                    return null;
                }
            }
            allocatedBytes += size;
            allocations++;
            lent();
        }
        try {
            return allocator.apply(size);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                allocatedBytes -= size;
                outstanding--;
            }
            throw e;
        }
    }

    private void lent() {
        outstanding++;
        peak = Math.max(peak, outstanding);
    }

    /** Frees kept buffers (largest classes first) until {@code size} more fits in the bound. */
    private boolean dropFreeFor(long size) {
        for (int c = free.size() - 1; c >= 0 && allocatedBytes + size > capacityBytes; c--) {
            HostBuffer b;
            while (allocatedBytes + size > capacityBytes && (b = free.get(c).pollFirst()) != null) {
                allocatedBytes -= b.byteSize();
                b.close();
            }
        }
        return allocatedBytes + size <= capacityBytes;
    }

    /** Returns a buffer: kept for reuse within the bound, freed above it or after {@link #close()}. */
    void release(HostBuffer b) {
        if (b == null) {
            return;
        }
        boolean keep;
        synchronized (this) {
            outstanding--;
            keep = !closed && allocatedBytes <= capacityBytes;
            if (keep) {
                free.get(classOf(b.byteSize())).addFirst(b); // most recently used first: warm in caches and TLBs
            } else {
                allocatedBytes -= b.byteSize();
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

    /** Bytes alive (kept and lent). */
    synchronized long allocatedBytes() {
        return allocatedBytes;
    }

    /** The bound on kept bytes. */
    long capacityBytes() {
        return capacityBytes;
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
        java.util.List<HostBuffer> drop = new java.util.ArrayList<>();
        synchronized (this) {
            closed = true;
            for (ArrayDeque<HostBuffer> q : free) {
                for (HostBuffer b : q) {
                    allocatedBytes -= b.byteSize();
                    drop.add(b);
                }
                q.clear();
            }
        }
        for (HostBuffer b : drop) {
            b.close();
        }
    }
}
