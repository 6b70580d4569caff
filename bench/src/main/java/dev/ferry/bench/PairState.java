// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * A rank's partner for point-to-point benchmarks: rank {@code i} of the first half pairs with rank
 * {@code i + size/2} (with two ranks, 0 with 1; across two nodes filled in order, a pair spans
 * both). All pairs run at once; a rank left over in an odd-sized job idles. Rank 0, whose time
 * JMH reports, is always an initiator.
 */
@State(Scope.Benchmark)
public abstract class PairState extends JobState {
    /** Message tag of the payload. */
    protected static final int DATA = 1;
    /** Message tag of acknowledgements. */
    protected static final int ACK = 2;

    /** The partner's rank, or -1 on an idle rank. */
    protected int peer;

    /** True on the first half (the side that starts each exchange). */
    protected boolean initiator;

    /** {@link #open()}, then finds the partner. */
    protected void openPair() {
        open();
        int half = comm.size() / 2;
        int r = comm.rank();
        if (half == 0) {
            throw new IllegalStateException("point-to-point benchmarks need at least 2 ranks");
        }
        if (r < half) {
            peer = r + half;
            initiator = true;
        } else if (r < 2 * half) {
            peer = r - half;
            initiator = false;
        } else {
            peer = -1;
        }
    }
}
