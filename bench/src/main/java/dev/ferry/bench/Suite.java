// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A suite's sizes and its iteration policy, identical for the Java benchmarks and the native C
 * reference (which receives it as {@link #nativeArguments()}).
 *
 * <p>Every measurement is a batch: {@code reps} invocations back to back, timed as one; the time
 * per operation is the batch time divided by {@code reps * opsPerInvocation}. A run is
 * {@code warmup} batches, thrown away (more for the first size of a series: {@link #warmup(long, int, boolean)}),
 * then {@code iterations} measured batches; the report gives
 * the median batch and the spread (min and max). Batch length in invocations:
 * {@code reps = clamp(batchBytes / bytesPerInvocation, minReps, maxReps)}. The bandwidth window:
 * {@code window = clamp(windowBytes / size, 1, maxWindow)}, 64 messages in flight (as OSU) unless
 * that would put more than {@code windowBytes} on the wire at once.
 *
 * @param name        suite name
 * @param sizes       message sizes in bytes, ascending
 * @param warmup      warmup batches per run
 * @param iterations  measured batches per run
 * @param batchBytes  bytes one batch aims to move
 * @param minReps     fewest invocations per batch
 * @param maxReps     most invocations per batch
 * @param windowBytes most bytes in flight in one bandwidth window
 * @param maxWindow   messages in flight in a bandwidth window (64, as OSU)
 */
public record Suite(String name, List<Long> sizes, int warmup, int iterations, long batchBytes, int minReps, int maxReps,
                    long windowBytes, int maxWindow) {

    /** One kibibyte. */
    public static final long KI = 1024;
    /** One mebibyte. */
    public static final long MI = KI * KI;

    public Suite {
        sizes = List.copyOf(sizes);
        if (sizes.isEmpty() || warmup < 0 || iterations < 1 || minReps < 1 || maxReps < minReps || maxWindow < 1) {
            throw new IllegalArgumentException("bad suite " + name);
        }
    }

    /**
     * The named suite: {@code tiny} (2 sizes, for the tests), {@code quick} (8 B to 8 MiB in steps of
     * 16, small batches: a minute or two on a 2-core machine), {@code full} (8 B to 256 MiB in steps of 4, for GPU
     * machines: at most 200 invocations per batch, so that small sizes take about a second each).
     */
    public static Suite named(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "tiny" -> new Suite("tiny", List.of(8L, 4 * KI), 1, 3, 256 * KI, 2, 50, MI, 64);
            case "quick" -> new Suite("quick", geometric(8, 16, 8 * MI), 3, 10, 8 * MI, 1, 500, 8 * MI, 64);
            case "full" -> {
                List<Long> s = geometric(8, 4, 128 * MI);
                s.add(256 * MI);
                yield new Suite("full", s, 2, 10, 64 * MI, 1, 200, 256 * MI, 64);
            }
            default -> throw new IllegalArgumentException("unknown suite '" + name + "'; known: tiny, quick, full");
        };
    }

    /** {@code first, first*factor, ...} up to {@code last} inclusive. */
    static List<Long> geometric(long first, long factor, long last) {
        List<Long> out = new ArrayList<>();
        for (long s = first; s <= last; s *= factor) {
            out.add(s);
        }
        return out;
    }

    /** This suite with other sizes. */
    public Suite withSizes(List<Long> newSizes) {
        return new Suite(name, newSizes, warmup, iterations, batchBytes, minReps, maxReps, windowBytes, maxWindow);
    }

    /** This suite with other warmup and measured batch counts. */
    public Suite withIterations(int newWarmup, int newIterations) {
        return new Suite(name, sizes, newWarmup, newIterations, batchBytes, minReps, maxReps, windowBytes, maxWindow);
    }

    /** Messages in flight in one bandwidth window for messages of {@code size} bytes. */
    public int window(long size) {
        return (int) Math.max(1, Math.min(maxWindow, windowBytes / Math.max(1, size)));
    }

    /** Invocations per batch for {@code q} at {@code size} bytes on {@code ranks} ranks. */
    public int reps(Question q, long size, int ranks) {
        long perInvocation = Math.max(1, q.bytesPerInvocation(size, q.hasWindow() ? window(size) : 1, ranks));
        return (int) Math.max(minReps, Math.min(maxReps, batchBytes / perInvocation));
    }

    /**
     * Invocations the first run of a series warms up with at least (so the JIT has compiled the path):
     * with 10,000 a host call of 8 bytes over Open MPI still read 0.1 to 0.4 µs slower than with
     * 100,000 (bench/results/2026-11-27-cpu-host-call-cost.md), while the C reference did not move.
     */
    public static final int FIRST_RUN_WARMUP_INVOCATIONS = 100_000;
    /** Most warmup batches of a series' first run. */
    public static final int FIRST_RUN_MAX_WARMUP = 400;
    /** Largest message size that gets the first run's extra warmup (the JIT matters for small messages only). */
    public static final long FIRST_RUN_MAX_SIZE = 64 * KI;

    /**
     * Warmup batches of a run of messages of {@code size} bytes with {@code reps} invocations per
     * batch: the suite's count, and for the first size of each series (question, backend, memory
     * kind), when at most {@value #FIRST_RUN_MAX_SIZE} bytes, enough batches for
     * {@value #FIRST_RUN_WARMUP_INVOCATIONS} invocations (at most {@value #FIRST_RUN_MAX_WARMUP}),
     * so that JIT compilation is over before anything is measured. The C reference does the same.
     */
    public int warmup(long size, int reps, boolean firstOfSeries) {
        if (!firstOfSeries || size > FIRST_RUN_MAX_SIZE) {
            return warmup;
        }
        long need = (FIRST_RUN_WARMUP_INVOCATIONS + reps - 1L) / reps;
        return (int) Math.max(warmup, Math.min(FIRST_RUN_MAX_WARMUP, need));
    }

    /** The arguments that make the native C reference use this suite's sizes and policy. */
    public List<String> nativeArguments() {
        List<String> a = new ArrayList<>();
        a.add("--sizes");
        a.add(String.join(",", sizes.stream().map(String::valueOf).toList()));
        a.addAll(List.of("--warmup", Integer.toString(warmup), "--iterations", Integer.toString(iterations),
                "--batch-bytes", Long.toString(batchBytes), "--min-reps", Integer.toString(minReps),
                "--max-reps", Integer.toString(maxReps), "--window-bytes", Long.toString(windowBytes),
                "--max-window", Integer.toString(maxWindow)));
        return a;
    }

    /** "8 B", "4 KiB", "256 MiB". */
    public static String formatSize(long bytes) {
        if (bytes >= MI && bytes % MI == 0) return (bytes / MI) + " MiB";
        if (bytes >= KI && bytes % KI == 0) return (bytes / KI) + " KiB";
        return bytes + " B";
    }

    /** Parses "8", "4k", "4KiB", "2M", "256MiB" into bytes. */
    public static long parseSize(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT).replace(" ", "");
        long mul = 1;
        if (t.endsWith("ib")) t = t.substring(0, t.length() - 2);
        else if (t.endsWith("b")) t = t.substring(0, t.length() - 1);
        if (t.endsWith("k")) { mul = KI; t = t.substring(0, t.length() - 1); }
        else if (t.endsWith("m")) { mul = MI; t = t.substring(0, t.length() - 1); }
        else if (t.endsWith("g")) { mul = KI * MI; t = t.substring(0, t.length() - 1); }
        long v = Long.parseLong(t) * mul;
        if (v < 1) {
            throw new IllegalArgumentException("message size must be at least 1 byte: " + s);
        }
        return v;
    }
}
