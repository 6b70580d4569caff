// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.util.Locale;

/**
 * The eight questions the suite answers, each one JMH benchmark class, and the arithmetic shared by
 * the Java suite, the native C reference and the report: how many bytes one invocation moves, how
 * many "operations" it counts for, and whether the answer is read as a latency or a bandwidth.
 *
 * <p>JMH's score is the time per operation: for {@link #LATENCY} the operation is one one-way
 * message (half a round trip, as OSU reports it), for {@link #BANDWIDTH} one window of messages
 * plus its acknowledgement, for {@link #BIBANDWIDTH} one window each way, for the collectives one
 * collective call.
 */
public enum Question {
    /** Ping-pong between pairs of ranks; the score is half the round trip. */
    LATENCY("latency", PingPongLatency.class, "ping-pong latency (one way, half the round trip)", false, 2),
    /** A window of non-blocking sends, then a small acknowledgement (OSU bw). */
    BANDWIDTH("bw", UnidirectionalBandwidth.class, "unidirectional bandwidth (window of non-blocking sends)", true, 1),
    /** Both sides of a pair send a window to each other at once (OSU bibw). */
    BIBANDWIDTH("bibw", BidirectionalBandwidth.class, "bi-directional bandwidth (both ways at once)", true, 1),
    /** MPI_Bcast from rank 0. */
    BROADCAST("bcast", Broadcast.class, "broadcast from rank 0 (slowest rank)", false, 1),
    /** MPI_Allreduce, SUM of doubles. */
    ALLREDUCE("allreduce", AllReduce.class, "allreduce, SUM of doubles (slowest rank)", false, 1),
    /**
     * MPI_Reduce_scatter_block, SUM of doubles; {@code size} is what each rank contributes (its send
     * buffer), each rank receives {@code size / 8 / ranks} doubles.
     */
    REDUCE_SCATTER("reducescatter", ReduceScatter.class, "reduce-scatter, SUM of doubles, size bytes sent per rank (slowest rank)", false, 1),
    /** MPI_Allgather; {@code size} is what each rank receives in total, {@code size / ranks} bytes from every rank. */
    ALLGATHER("allgather", AllGather.class, "all-gather, size bytes received per rank (slowest rank)", false, 1),
    /** MPI_Alltoall, {@code size} bytes to every rank. */
    ALLTOALL("alltoall", AllToAll.class, "all-to-all, size bytes per pair of ranks (slowest rank)", false, 1);

    /** Every id, comma-separated, in order: {@code latency,bw,...}. */
    public static final String KNOWN = String.join(",", java.util.Arrays.stream(values()).map(Question::id).toList());

    private final String id;
    private final Class<?> benchmark;
    private final String title;
    private final boolean bandwidth;
    private final int opsPerInvocation;

    Question(String id, Class<?> benchmark, String title, boolean bandwidth, int opsPerInvocation) {
        this.id = id;
        this.benchmark = benchmark;
        this.title = title;
        this.bandwidth = bandwidth;
        this.opsPerInvocation = opsPerInvocation;
    }

    /** Short name used on the command line, in file names and in the C reference's output. */
    public String id() {
        return id;
    }

    /** The JMH benchmark class. */
    public Class<?> benchmark() {
        return benchmark;
    }

    /** One line for tables and plots. */
    public String title() {
        return title;
    }

    /** True when the report shows this question as a bandwidth (GB/s), false for a latency (us). */
    public boolean isBandwidth() {
        return bandwidth;
    }

    /** True for collectives, whose time is the slowest rank's. */
    public boolean isCollective() {
        return ordinal() >= BROADCAST.ordinal();
    }

    /** True for the questions that take a window (how many messages are in flight at once). */
    public boolean hasWindow() {
        return this == BANDWIDTH || this == BIBANDWIDTH;
    }

    /** Operations one invocation of the benchmark method counts for (2 for a round trip: two one-way messages). */
    public int opsPerInvocation() {
        return opsPerInvocation;
    }

    /** Bytes one invocation moves over the wire (counting both directions): sizes the batches. */
    public long bytesPerInvocation(long size, int window, int ranks) {
        return switch (this) {
            case LATENCY -> 2 * size;
            case BANDWIDTH -> window * size;
            case BIBANDWIDTH -> 2L * window * size;
            case BROADCAST, ALLREDUCE, REDUCE_SCATTER, ALLGATHER -> size;
            case ALLTOALL -> size * ranks;
        };
    }

    /** Payload bytes of one operation, for converting a time per operation into a bandwidth. */
    public long bytesPerOperation(long size, int window) {
        return switch (this) {
            case LATENCY, BROADCAST, ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL -> size;
            case BANDWIDTH -> window * size;
            case BIBANDWIDTH -> 2L * window * size;
        };
    }

    /**
     * Elements each rank's block holds for a message of {@code size} bytes on {@code ranks} ranks,
     * for the collectives that split {@code size} over the ranks: {@code size / 8 / ranks} doubles
     * for {@link #REDUCE_SCATTER}, {@code size / ranks} bytes for {@link #ALLGATHER} (rounded down;
     * the buffers hold {@code block * ranks} elements); 0 when {@code size} is too small to give
     * every rank one element, and such a size is not run (by the Java suite and the C reference
     * alike). Every other question: 1 (nothing is split).
     */
    public long block(long size, int ranks) {
        return switch (this) {
            case REDUCE_SCATTER -> size / 8 / ranks;
            case ALLGATHER -> size / ranks;
            default -> 1;
        };
    }

    /** True when a message of {@code size} bytes on {@code ranks} ranks is run: {@link #block} is at least 1. */
    public boolean runs(long size, int ranks) {
        return block(size, ranks) > 0;
    }

    /** The question with this id ({@code latency}, {@code bw}, ...), or its enum name. */
    public static Question parse(String s) {
        String k = s.trim().toLowerCase(Locale.ROOT);
        for (Question q : values()) {
            if (q.id.equals(k) || q.name().toLowerCase(Locale.ROOT).equals(k)) {
                return q;
            }
        }
        throw new IllegalArgumentException("unknown benchmark '" + s + "'; known: " + KNOWN);
    }

    /** The question a JMH benchmark name ({@code dev.ferry.bench.PingPongLatency.roundTrip}) belongs to, or null. */
    public static Question ofBenchmark(String jmhName) {
        for (Question q : values()) {
            if (jmhName.startsWith(q.benchmark.getName() + ".")) {
                return q;
            }
        }
        return null;
    }
}
