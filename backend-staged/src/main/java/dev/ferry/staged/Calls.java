// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts of the native calls the staged backend makes (CUDA driver calls of the copy engine and
 * calls into the inner MPI), and optionally the time spent in them, by kind. The memcpy engine
 * counts the CUDA calls its CUDA twin would make for the same step, so that CPU tests can assert
 * the per-message call budget (see {@code StagedCallCountTest}); the GPU check prints the real
 * counts and a per-phase time breakdown from the same counters.
 *
 * <p>Counting is always on (a {@link LongAdder} increment per call); timing ({@link #timing}) is
 * off unless a measurement turns it on ({@link StagedDiagnostics#timeNativeCalls}), and then costs two {@code System.nanoTime()} per call.
 */
final class Calls {
    /** What a call was. The comment names the CUDA driver call (or its memcpy-engine stand-in). */
    enum Kind {
        CTX_SYNC("cuCtxSynchronize"),
        D2H_ASYNC("cuMemcpyAsync D2H"),
        H2D_ASYNC("cuMemcpyAsync H2D"),
        D2D_ASYNC("cuMemcpyAsync D2D (ipc)"),
        D2H_SYNC("cuMemcpy D2H"),
        H2D_SYNC("cuMemcpy H2D"),
        EVENT_RECORD("cuEventRecord"),
        EVENT_QUERY("cuEventQuery"),
        EVENT_SYNC("cuEventSynchronize"),
        EVENT_CREATE("cuEventCreate"),
        KERNEL_LAUNCH("cuLaunchKernel"),
        STREAM_SYNC("wait for a node-local collective's GPU work (stream synchronize or status word)"),
        STREAM_CREATE("cuStreamCreate"),
        MPI_POST("MPI isend/irecv"),
        MPI_TEST("MPI test"),
        BOARD("node board exchange/barrier"),
        POOL("staging pool acquire/release"),
        IDLE("idle polling (no progress)");

        final String label;

        Kind(String label) {
            this.label = label;
        }

        /** True for calls into the CUDA driver (or the memcpy engine's stand-ins). */
        boolean cuda() {
            return ordinal() <= STREAM_CREATE.ordinal();
        }
    }

    private static final Kind[] KINDS = Kind.values();
    private final LongAdder[] counts = new LongAdder[KINDS.length];
    private final LongAdder[] nanos = new LongAdder[KINDS.length];
    private volatile boolean timing;

    Calls() {
        for (int i = 0; i < KINDS.length; i++) {
            counts[i] = new LongAdder();
            nanos[i] = new LongAdder();
        }
    }

    /** Turns timing of calls on or off. */
    void timing(boolean on) {
        timing = on;
    }

    boolean timing() {
        return timing;
    }

    /** A start time for {@link #end}, or 0 when timing is off. */
    long start() {
        return timing ? System.nanoTime() : 0;
    }

    /** Counts one call of {@code k} and, when timing, the time since {@code start}. */
    void end(Kind k, long start) {
        counts[k.ordinal()].increment();
        if (start != 0) {
            nanos[k.ordinal()].add(System.nanoTime() - start);
        }
    }

    /** Counts one call without timing it. */
    void count(Kind k) {
        counts[k.ordinal()].increment();
    }

    /** Adds time to {@code k} without counting a call (idle polling). */
    void addNanos(Kind k, long n) {
        nanos[k.ordinal()].add(n);
    }

    /** Counts and nanoseconds now, for differences. */
    Snapshot snapshot() {
        long[] c = new long[KINDS.length], n = new long[KINDS.length];
        for (int i = 0; i < KINDS.length; i++) {
            c[i] = counts[i].sum();
            n[i] = nanos[i].sum();
        }
        return new Snapshot(c, n);
    }

    /** Counters at one moment. */
    record Snapshot(long[] counts, long[] nanos) {
        long count(Kind k) {
            return counts[k.ordinal()];
        }

        long nanos(Kind k) {
            return nanos[k.ordinal()];
        }

        /** This minus {@code before}. */
        Snapshot since(Snapshot before) {
            long[] c = counts.clone(), n = nanos.clone();
            for (int i = 0; i < c.length; i++) {
                c[i] -= before.counts[i];
                n[i] -= before.nanos[i];
            }
            return new Snapshot(c, n);
        }

        /** Native CUDA calls (or stand-ins) in all. */
        long cudaCalls() {
            long s = 0;
            for (Kind k : KINDS) if (k.cuda()) s += counts[k.ordinal()];
            return s;
        }

        /** Non-zero counts by kind. */
        Map<Kind, Long> nonZero() {
            Map<Kind, Long> m = new EnumMap<>(Kind.class);
            for (Kind k : KINDS) if (counts[k.ordinal()] != 0) m.put(k, counts[k.ordinal()]);
            return m;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<Kind, Long> e : nonZero().entrySet()) {
                if (b.length() > 1) b.append(", ");
                b.append(e.getKey().label).append('=').append(e.getValue());
            }
            return b.append('}').toString();
        }
    }
}
