// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.lang.foreign.ValueLayout;

/**
 * One timed batch of a collective: every rank meets at a barrier, runs its calls, and the batch's
 * time is the slowest rank's mean per call (a collective is done when its last rank is).
 */
final class CollectiveBatch {
    private CollectiveBatch() {}

    /**
     * Runs {@code call} {@code calls} times on every rank after a barrier of {@code meet}, and
     * returns the slowest rank's mean time per call in microseconds (a MAX allReduce on {@code meet}
     * through the 8-byte buffers {@code mine} and {@code max}).
     */
    static double slowestMeanMicros(Communicator meet, HostBuffer mine, HostBuffer max, int calls, Runnable call) {
        meet.barrier();
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) call.run();
        mine.segment().set(ValueLayout.JAVA_DOUBLE, 0, (System.nanoTime() - t0) / 1e3 / calls);
        meet.allReduce(mine, max, 1, DataType.DOUBLE, ReduceOp.MAX);
        return max.segment().get(ValueLayout.JAVA_DOUBLE, 0);
    }
}
