// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Communicator;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The measurement hook of the staged backend: what a measurement tool (the GPU check
 * {@code dev.ferry.bench.StagedCheck} in the bench module) reads from or sets on staged
 * communicators, and nothing else. It is public only so that such tools can live outside this
 * module; applications have no use for it, and it may change with the tools that use it.
 *
 * <p>Every method that takes a communicator requires one opened on the {@code staged} backend
 * (or a duplicate or split of one) that is not closed, and throws {@link IllegalArgumentException}
 * for any other. The counters and call times are those of the whole process (every staged
 * communicator of a process shares one runtime), not of the communicator passed.
 */
public final class StagedDiagnostics {
    private StagedDiagnostics() {
    }

    /**
     * One kind of native call, as counted (and, inside {@link #timeNativeCalls}, timed) by the staged backend.
     *
     * @param kind  the kind's constant name, stable for tools: {@code CTX_SYNC}, {@code D2H_ASYNC},
     *              {@code H2D_ASYNC}, {@code D2D_ASYNC}, {@code D2H_SYNC}, {@code H2D_SYNC},
     *              {@code EVENT_RECORD}, {@code EVENT_QUERY}, {@code EVENT_SYNC}, {@code EVENT_CREATE},
     *              {@code KERNEL_LAUNCH}, {@code STREAM_SYNC}, {@code STREAM_CREATE}, {@code MPI_POST},
     *              {@code MPI_TEST}, {@code BOARD}, {@code POOL}, {@code IDLE}
     * @param label what the call is, for reports ({@code cuCtxSynchronize}, {@code MPI isend/irecv}, ...)
     * @param count calls of this kind ({@code IDLE}: none, it only has time)
     * @param nanos nanoseconds spent in them ({@code IDLE}: in polls that found no progress)
     */
    public record NativeCalls(String kind, String label, long count, long nanos) {
    }

    private static StagedTransport staged(Communicator c) {
        if (c instanceof dev.ferry.spi.CheckedCommunicator f) {
            dev.ferry.spi.Transport t = f.transport();
            while (!(t instanceof StagedTransport) && t instanceof dev.ferry.spi.ForwardingTransport w) {
                t = w.inner(); // under the collectives planner
            }
            if (t instanceof StagedTransport s) {
                if (s.runtime().isClosed()) {
                    throw new IllegalArgumentException("the staged runtime of this communicator was closed");
                }
                return s;
            }
        }
        throw new IllegalArgumentException("not a staged communicator: " + (c == null ? "null" : c.backend()));
    }

    /** The name of the inner backend {@code c} stages over ({@code ompi}, {@code mvapich}). */
    public static String innerBackend(Communicator c) {
        return staged(c).runtime().inner;
    }

    /** The process's staged settings, described for a report (the probe report's details, in a stable order). */
    public static Map<String, String> describeSettings(Communicator c) {
        return staged(c).runtime().settings.describe();
    }

    /** Turns IPC offers of {@code c} on or off (off: device-to-device sends take the staging pipeline). */
    public static void offerIpc(Communicator c, boolean on) {
        staged(c).offerIpc(on);
    }

    /** True when device buffers between this rank and {@code peer} of {@code c} may move by CUDA IPC. */
    public static boolean ipcWith(Communicator c, int peer) {
        StagedTransport s = staged(c);
        return s.runtime().ipcEnabled() && s.peers().ipcPeer(peer);
    }

    /** The largest staging buffer in bytes: the largest chunk {@link #tune} accepts. */
    public static long stagingBufferBytes(Communicator c) {
        return staged(c).runtime().chunks.maxBytes();
    }

    /**
     * Re-tunes how {@code c} cuts the messages it sends (only the sender decides, so ranks may
     * differ); see {@code ferry.staged.chunk}, {@code minChunk}, {@code threshold} and {@code depth}
     * in the README for the meaning.
     *
     * @throws dev.ferry.InvalidArgumentException when the tuning does not fit the staging buffers
     *                                            ({@link #stagingBufferBytes}) or is out of range
     */
    public static void tune(Communicator c, long chunk, long minChunk, long threshold, int depth) {
        staged(c).tune(new Tuning(chunk, minChunk, threshold, depth));
    }

    /** Puts {@code c} back on the process settings' tuning. */
    public static void resetTuning(Communicator c) {
        StagedTransport s = staged(c);
        s.tune(Tuning.of(s.runtime().settings));
    }

    /** The process's message counters by name ({@code eagerSends}, {@code ipcCopies}, {@code ipcRefused}, ...), now. */
    public static Map<String, Long> counters(Communicator c) {
        return staged(c).runtime().stats.snapshot();
    }

    /** One line for a report: the message counters, the IPC mapping cache's and the staging pool's. */
    public static String describeCounters(Communicator c) {
        StagedRuntime rt = staged(c).runtime();
        var cache = rt.ipcEnabled() ? rt.ipc.mappings() : null;
        return rt.stats + (cache == null ? "" : ", ipc cache (opens, hits, stale, evictions, closes) " + Arrays.toString(cache.stats()))
                + ", staging pool: " + rt.chunks.allocations() + " allocations, " + rt.chunks.stallGrants()
                + " buffers granted beyond its bound after a stall, " + rt.chunks.peak() + " lent at most";
    }

    /**
     * Runs {@code work} with every native call of the process's staged backend timed (two
     * {@code System.nanoTime()} per call while it runs), and returns the calls made and their time
     * during it, by kind in a fixed order (keyed by {@link NativeCalls#kind}).
     */
    public static Map<String, NativeCalls> timeNativeCalls(Communicator c, Runnable work) {
        Calls calls = staged(c).runtime().calls;
        calls.timing(true);
        Calls.Snapshot d;
        try {
            Calls.Snapshot before = calls.snapshot();
            work.run();
            d = calls.snapshot().since(before);
        } finally {
            calls.timing(false);
        }
        Map<String, NativeCalls> out = new LinkedHashMap<>();
        for (Calls.Kind k : Calls.Kind.values()) {
            out.put(k.name(), new NativeCalls(k.name(), k.label, d.count(k), d.nanos(k)));
        }
        return out;
    }

    /** Peer access between the visible GPUs, for a report: "0&lt;-&gt;1 yes", or how many devices there are. */
    public static String peerAccess() {
        return StagedProvider.peerAccess();
    }
}
