// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.HostBuffer;
import java.util.ArrayDeque;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

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
 *
 * <p>Pinned allocation is slow (about a millisecond per megabyte), so steady traffic must reuse
 * the same buffers, bursts included: a window of 64 non-blocking 1 MiB sends holds 64 guaranteed
 * buffers at once, and freeing them on return only to allocate them again for the next window
 * would cost more than the transfers. So buffers beyond the bound are kept while the pool is
 * under pressure (more bytes lent than the bound) and for {@code trimAfterNanos} after the last
 * such moment; the first acquire or release after that frees kept buffers down to
 * {@code capacityBytes}. Outside bursts at most {@code capacityBytes} stay allocated.
 */
final class PinnedPool implements AutoCloseable {
    private final long minBytes;
    private final long maxBytes;
    private final long capacityBytes;
    private final LongFunction<HostBuffer> allocator;
    private final java.util.List<ArrayDeque<HostBuffer>> free = new java.util.ArrayList<>();
    private final long trimAfterNanos;
    private final LongSupplier clock;
    private long allocatedBytes;  // alive: kept and lent
    private long lentBytes;       // lent and not returned
    private long lastPressure;    // clock when lent bytes last exceeded the bound
    private boolean pressured;    // ever (so that a fresh pool does not trim at time 0)
    private boolean exhausted;    // a transfer holding nothing was refused, and no buffer has come back since
    private long exhaustedSince;
    private long stallGrants;     // buffers granted beyond the bound after a stall
    private int outstanding;      // lent and not returned
    private long allocations;     // ever
    private int peak;
    private boolean closed;

    /** One size only: {@code bytes}, at most {@code count} kept. */
    PinnedPool(long bytes, int count, LongFunction<HostBuffer> allocator) {
        this(bytes, bytes, bytes * count, allocator);
    }

    PinnedPool(long minBytes, long maxBytes, long capacityBytes, LongFunction<HostBuffer> allocator) {
        this(minBytes, maxBytes, capacityBytes, allocator, DEFAULT_TRIM_AFTER_NANOS, System::nanoTime);
    }

    /** How long an exhausted pool waits for a buffer to come back before a transfer holding none gets one beyond the bound: 1 ms. */
    static final long STALL_NANOS = 1_000_000L;

    /**
     * A staging buffer for a transfer's pipeline: one within the bound, or null (the caller asks
     * again at its next progress step). A transfer that holds none ({@code holdsNone}) gets one
     * beyond the bound only when the pool has been exhausted for {@link #STALL_NANOS} with no
     * buffer returned (one such buffer per stall), or when none is lent at all. Waiting first keeps a window of 64 transfers
     * inside the bound, reusing a few cache-warm buffers instead of staging all 64 at once through
     * 64 cold ones (the copies through MPI run at memory speed, several times slower than from
     * cache); granting after a stall keeps the guarantee that matters: transfers that hold every
     * buffer while waiting on the peer (whose transfers wait on theirs) cannot deadlock.
     */
    HostBuffer acquireForTransfer(long bytes, boolean holdsNone) {
        HostBuffer b = acquire(bytes, false);
        if (b != null || !holdsNone) {
            return b;
        }
        synchronized (this) {
            long now = clock.getAsLong();
            if (outstanding > 0) {
                if (!exhausted) {
                    exhausted = true;
                    exhaustedSince = now;
                    return null;
                }
                if (now - exhaustedSince < STALL_NANOS) {
                    return null;
                }
                // one buffer per stall, and the stall clock starts over: a stall then frees the one
                // transfer it needs, instead of every waiting transfer of a window getting a buffer
                // beyond the bound at once (which staged all 64 transfers of a window through 64 buffers)
                exhaustedSince = now;
            }
            stallGrants++;
        }
        return acquire(bytes, true);
    }

    /** Buffers beyond the bound are kept this long after the last moment of pressure: one second. */
    static final long DEFAULT_TRIM_AFTER_NANOS = 1_000_000_000L;

    PinnedPool(long minBytes, long maxBytes, long capacityBytes, LongFunction<HostBuffer> allocator, long trimAfterNanos,
               LongSupplier clock) {
        this.trimAfterNanos = trimAfterNanos;
        this.clock = clock;
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
        java.util.List<HostBuffer> dropped = new java.util.ArrayList<>();
        HostBuffer kept;
        boolean allocate = false;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the staging pool was closed (Ferry.shutdown?)");
            }
            trimIfCalm(-1, dropped);
            // the bound is on what is lent, not only on what is allocated: buffers kept from a burst
            // serve guaranteed requests, but do not let a pipeline's further chunks widen its working set
            kept = guaranteed || lentBytes + size <= capacityBytes ? free.get(c).pollFirst() : null;
            if (kept != null) {
                lent(kept.byteSize());
            } else {
                // within the bound, after making room from buffers of other classes kept free (colder than
                // this request; but a refusable request in a burst drops nothing: the burst wants them
                // back), or guaranteed beyond it; so a burst holds at most the bound or what it lends
                boolean fits = allocatedBytes + size <= capacityBytes; // (lent <= allocated)
                if (!fits && (guaranteed || !underPressure()) && lentBytes + size <= capacityBytes) {
                    fits = takeFree(capacityBytes - size, -1, dropped);
                }
                if (fits || guaranteed) {
                    if (!fits) {
                        pressure(); // a burst: what it allocates is worth keeping a while
                    }
                    allocatedBytes += size;
                    allocations++;
                    lent(size);
                    allocate = true;
                }
            }
        }
        dropped.forEach(HostBuffer::close);
        if (!allocate) {
            return kept; // null: at the bound
        }
        try {
            return allocator.apply(size);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                allocatedBytes -= size;
                lentBytes -= size;
                outstanding--;
            }
            throw e;
        }
    }

    private void lent(long size) {
        outstanding++;
        lentBytes += size;
        peak = Math.max(peak, outstanding);
        if (lentBytes > capacityBytes) {
            pressure();
        }
    }

    private void pressure() {
        lastPressure = clock.getAsLong();
        pressured = true;
    }

    /** True while buffers beyond the bound are still worth keeping (a burst is on or just ended). */
    private boolean underPressure() {
        return lentBytes > capacityBytes || (pressured && clock.getAsLong() - lastPressure < trimAfterNanos);
    }

    /**
     * When the last burst is over: takes kept buffers off the free lists, into {@code dropped},
     * down to the bound, class {@code hot} (just returned, warm) last; the caller frees them outside the lock.
     */
    private void trimIfCalm(int hot, java.util.List<HostBuffer> dropped) {
        if (allocatedBytes > capacityBytes && !underPressure()) {
            takeFree(capacityBytes, hot, dropped);
        }
    }

    /**
     * Takes kept buffers off the free lists, into {@code dropped}, until at most {@code limit}
     * bytes are allocated: largest classes first, class {@code hot} last, the least recently used
     * of a class first. True when the limit was reached.
     */
    private boolean takeFree(long limit, int hot, java.util.List<HostBuffer> dropped) {
        for (int pass = 0; pass < 2; pass++) {
            for (int c = free.size() - 1; c >= 0 && allocatedBytes > limit; c--) {
                if ((c == hot) == (pass == 0)) {
                    continue;
                }
                HostBuffer b;
                while (allocatedBytes > limit && (b = free.get(c).pollLast()) != null) {
                    allocatedBytes -= b.byteSize();
                    dropped.add(b);
                }
            }
        }
        return allocatedBytes <= limit;
    }

    /** Returns a buffer: kept for reuse within the bound or during a burst, freed above it otherwise or after {@link #close()}. */
    void release(HostBuffer b) {
        if (b == null) {
            return;
        }
        java.util.List<HostBuffer> dropped = new java.util.ArrayList<>();
        synchronized (this) {
            outstanding--;
            lentBytes -= b.byteSize();
            exhausted = false;
            if (closed) {
                allocatedBytes -= b.byteSize();
                dropped.add(b);
            } else {
                int c = classOf(b.byteSize());
                free.get(c).addFirst(b); // most recently used first: warm in caches and TLBs
                trimIfCalm(c, dropped); // above the bound after a burst: colder buffers go first, this one last
            }
        }
        dropped.forEach(HostBuffer::close);
    }

    /** Frees kept buffers beyond the bound if the last burst is over (otherwise the next acquire or release does it). */
    void trim() {
        java.util.List<HostBuffer> dropped = new java.util.ArrayList<>();
        synchronized (this) {
            trimIfCalm(-1, dropped);
        }
        dropped.forEach(HostBuffer::close);
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

    /** Buffers granted beyond the bound because the pool stalled (see {@link #acquireForTransfer}). */
    synchronized long stallGrants() {
        return stallGrants;
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
