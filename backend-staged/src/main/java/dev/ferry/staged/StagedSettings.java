// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.FerrySettings;
import dev.ferry.collectives.ipc.IpcSettings;
import dev.ferry.InvalidArgumentException;
import dev.ferry.Settings;
import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tunables of the staged backend, read once from settings ({@code -Dferry.staged.*} or
 * {@code FERRY_STAGED_*}) and checked. Sizes accept a suffix: {@code 64k}, {@code 4MiB}, {@code 1g}.
 *
 * @param chunk          {@code ferry.staged.chunk}: bytes per pipelined chunk, and the size of each pooled staging buffer (default 4 MiB)
 * @param minChunk       {@code ferry.staged.minChunk}: smallest chunk of a pipelined message; a message is cut in
 *                       about 2 x depth chunks between this and {@code chunk} (default 1 MiB, see the README's measured defaults; equal to chunk: fixed chunks)
 * @param depth          {@code ferry.staged.depth}: chunks one transfer keeps in flight (default 4)
 * @param threshold      {@code ferry.staged.threshold}: messages up to this size move as one piece through one
 *                       staging buffer; larger ones are pipelined in chunks (default 1 MiB, at most {@code chunk})
 * @param eager          {@code ferry.staged.eager}: messages up to this size travel as one MPI message with no
 *                       header (default 16 KiB, at least 256, at most {@code threshold}); must be equal on every rank
 * @param poolChunks     {@code ferry.staged.pool}: staging buffers the pool keeps for reuse (default 2 x depth)
 * @param ipc            {@code ferry.ipc} (of the collectives module): CUDA IPC between device buffers of one node (default true)
 * @param contextSync    {@code ferry.staged.contextSync}: one more cuCtxSynchronize of the device's primary context
 *                       inside staged before it reads or writes a device buffer (default false: every communicator
 *                       already orders each call after the caller's device work, see DeviceSupport)
 * @param stageHostBuffers {@code ferry.staged.stageHostBuffers}: for tests without a GPU, send host buffers through the
 *                       whole staging pipeline with host-memory copies (default false)
 * @param progressThread {@code ferry.staged.progressThread}: a thread that advances transfers in flight while no
 *                       application thread is inside a staged call (default true; used only under MPI_THREAD_MULTIPLE)
 * @param memcpyThreads  {@code ferry.staged.memcpyThreads}: with stageHostBuffers, copies run on a worker thread per
 *                       direction (1, the default, so that fences really are pending) or inline (0)
 * @param offerIpcForHost {@code ferry.staged.test.offerIpc}: for tests without a GPU, host buffers to peers of the
 *                       node are offered as if by IPC; receivers refuse, which exercises the fallback (default false)
 * @param nodeGroup      {@code ferry.staged.test.nodeGroup}: for tests on one machine, ranks count as on separate nodes in
 *                       groups of this many consecutive world ranks (0, the default: the real nodes); see {@link Peers}
 *
 * <p>How collectives run is the planner's choice ({@code ferry.collectives}); staged's own collectives
 * are its pipeline through pinned host memory over the inner MPI.
 */
public record StagedSettings(long chunk, long minChunk, int depth, long threshold, long eager, int poolChunks, boolean ipc,
                             boolean contextSync, boolean stageHostBuffers, int memcpyThreads, boolean offerIpcForHost,
                             boolean progressThread, int nodeGroup) {

    /** Largest chunk: one MPI message per chunk, below the bindings' 2 GiB limit. */
    public static final long MAX_CHUNK = 1L << 30;
    /** Smallest eager size: an IPC offer (handle and addresses) must fit in the first piece. */
    public static final long MIN_EAGER = 256;

    private static final String MODULE = "backend-staged";

    /** {@code ferry.staged.inner}: the MPI backend staged wraps; unset: the launched one. */
    public static final Setting<String> INNER = Setting.of(MODULE, "ferry.staged.inner", Setting.choice("ompi", "mvapich"), null,
            "the MPI backend `staged` wraps (`ompi` or `mvapich`); unset: the one the launcher's MPI family serves");
    /** {@code ferry.staged.chunk}. */
    public static final Setting<Long> CHUNK = Setting.of(MODULE, "ferry.staged.chunk", Setting.BYTES, 4L << 20,
            "bytes per pipelined chunk, and the size of each pooled staging buffer (multiple of 8, 4 KiB to 1 GiB)");
    /** {@code ferry.staged.minChunk}. */
    public static final Setting<Long> MIN_CHUNK = Setting.derived(MODULE, "ferry.staged.minChunk", Setting.BYTES, "min(1 MiB, chunk)",
            "smallest chunk: a message is cut in about 2 x depth chunks between this and `chunk` (equal to chunk: fixed chunks)");
    /** {@code ferry.staged.depth}. */
    public static final Setting<Integer> DEPTH = Setting.of(MODULE, "ferry.staged.depth", Setting.INT, 4,
            "chunks one transfer keeps in flight (1 to 64)");
    /** {@code ferry.staged.threshold}. */
    public static final Setting<Long> THRESHOLD = Setting.of(MODULE, "ferry.staged.threshold", Setting.BYTES, 1L << 20,
            "messages up to this size move as one piece through one staging buffer; larger ones are pipelined (at most `chunk`)");
    /** {@code ferry.staged.eager}. */
    public static final Setting<Long> EAGER = Setting.derived(MODULE, "ferry.staged.eager", Setting.BYTES, "min(16 KiB, threshold), at least 256",
            "messages up to this size travel as one MPI message with no header (at least 256, at most `threshold`); equal on every rank");
    /** {@code ferry.staged.pool}. */
    public static final Setting<Integer> POOL = Setting.derived(MODULE, "ferry.staged.pool", Setting.INT, "2 x depth",
            "staging buffers the pool keeps for reuse (1 to 1024)");
    /** {@code ferry.staged.contextSync}. */
    public static final Setting<Boolean> CONTEXT_SYNC = Setting.of(MODULE, "ferry.staged.contextSync", Setting.BOOLEAN, false,
            "one more `cuCtxSynchronize` before staged reads or writes a device buffer");
    /** {@code ferry.staged.stageHostBuffers}. */
    public static final Setting<Boolean> STAGE_HOST_BUFFERS = Setting.forTests(MODULE, "ferry.staged.stageHostBuffers", Setting.BOOLEAN, false,
            "for tests without a GPU: send host buffers through the whole staging pipeline with host-memory copies");
    /** {@code ferry.staged.memcpyThreads}. */
    public static final Setting<Integer> MEMCPY_THREADS = Setting.forTests(MODULE, "ferry.staged.memcpyThreads", Setting.INT, 1,
            "with `stageHostBuffers`: copies on a worker thread per direction (1) or inline (0)");
    /** {@code ferry.staged.test.offerIpc}. */
    public static final Setting<Boolean> OFFER_IPC_FOR_HOST = Setting.forTests(MODULE, "ferry.staged.test.offerIpc", Setting.BOOLEAN, false,
            "for tests without a GPU: host buffers to peers of the node are offered as if by IPC (receivers refuse: the fallback runs)");
    /** {@code ferry.staged.progressThread}. */
    public static final Setting<Boolean> PROGRESS_THREAD = Setting.of(MODULE, "ferry.staged.progressThread", Setting.BOOLEAN, true,
            "a thread advances transfers in flight while no application thread is inside a staged call (under `MPI_THREAD_MULTIPLE`)");
    /** {@code ferry.staged.test.nodeGroup}. */
    public static final Setting<Integer> NODE_GROUP = Setting.forTests(MODULE, "ferry.staged.test.nodeGroup", Setting.INT, 0,
            "for tests on one machine: ranks count as on separate nodes in groups of this many consecutive world ranks "
                    + "(no CUDA IPC between groups; reductions across nodes run node by node); 0: the real nodes");

    /** The staged backend's settings, for {@link SettingsCatalog#all()}. */
    public static final class Catalog implements SettingsCatalog {
        @Override
        public List<Setting<?>> settings() {
            return List.of(INNER, CHUNK, MIN_CHUNK, DEPTH, THRESHOLD, EAGER, POOL, CONTEXT_SYNC, STAGE_HOST_BUFFERS,
                    MEMCPY_THREADS, OFFER_IPC_FOR_HOST, PROGRESS_THREAD, NODE_GROUP);
        }
    }

    /** Reads and checks every setting. */
    public static StagedSettings read(Settings settings) {
        long chunk = settings.get(CHUNK);
        long minChunk = orElse(settings.get(MIN_CHUNK), Math.min(1024 * 1024, chunk));
        int depth = settings.get(DEPTH);
        long threshold = settings.get(THRESHOLD);
        // the first piece (header + eager bytes) is received before its length is known: it must fit in
        // one piece of the inner binding, or the inner receive would wait for pieces that never come
        long maxPiece = settings.get(FerrySettings.MAX_PIECE_BYTES);
        long firstPieceRoom = maxPiece - Wire.HEADER;
        long eager = orElse(settings.get(EAGER), Math.max(MIN_EAGER, Math.min(Math.min(16 * 1024, threshold), firstPieceRoom)));
        if (eager > firstPieceRoom) {
            throw new InvalidArgumentException("ferry.staged.eager=" + eager + ": the first piece (" + Wire.HEADER + " + eager bytes) must fit in one piece of "
                    + "ferry.maxPieceBytes=" + maxPiece + ": lower ferry.staged.eager or raise ferry.maxPieceBytes");
        }
        int pool = orElse(settings.get(POOL), 2 * Math.max(depth, 1));
        StagedSettings s = new StagedSettings(chunk, minChunk, depth, threshold, eager, pool, settings.get(IpcSettings.IPC),
                settings.get(CONTEXT_SYNC), settings.get(STAGE_HOST_BUFFERS), settings.get(MEMCPY_THREADS), settings.get(OFFER_IPC_FOR_HOST),
                settings.get(PROGRESS_THREAD), settings.get(NODE_GROUP));
        s.check();
        return s;
    }

    private static <T> T orElse(T given, T derived) {
        return given != null ? given : derived;
    }

    /** Throws {@link InvalidArgumentException} naming the setting when a value is out of range. */
    public void check() {
        if (chunk < 4096 || chunk > MAX_CHUNK || chunk % 8 != 0) {
            throw new InvalidArgumentException("ferry.staged.chunk=" + chunk + ": must be a multiple of 8 within [4 KiB, 1 GiB]");
        }
        if (minChunk < 4096 || minChunk > chunk || minChunk % 8 != 0) {
            throw new InvalidArgumentException("ferry.staged.minChunk=" + minChunk + ": must be a multiple of 8 within [4 KiB, chunk=" + chunk + "]");
        }
        if (depth < 1 || depth > 64) {
            throw new InvalidArgumentException("ferry.staged.depth=" + depth + ": must be within [1, 64]");
        }
        if (threshold < 0 || threshold > chunk) {
            throw new InvalidArgumentException("ferry.staged.threshold=" + threshold + ": must be within [0, chunk=" + chunk + "]");
        }
        if (eager < MIN_EAGER || eager > Math.max(threshold, MIN_EAGER) || eager > chunk) {
            throw new InvalidArgumentException("ferry.staged.eager=" + eager + ": must be within [" + MIN_EAGER + ", max(threshold, "
                    + MIN_EAGER + ")] and at most the chunk size");
        }
        if (poolChunks < 1 || poolChunks > 1024) {
            throw new InvalidArgumentException("ferry.staged.pool=" + poolChunks + ": must be within [1, 1024]");
        }
        if (nodeGroup < 0) {
            throw new InvalidArgumentException("ferry.staged.test.nodeGroup=" + nodeGroup + ": must be at least 0 (0: the real nodes)");
        }
        if (memcpyThreads != 0 && memcpyThreads != 1) {
            throw new InvalidArgumentException("ferry.staged.memcpyThreads=" + memcpyThreads + ": must be 0 or 1");
        }
    }

    /** The settings for the probe report, in a stable order. */
    public Map<String, String> describe() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("chunk", bytes(chunk) + (minChunk < chunk ? " (adaptive from " + bytes(minChunk) + ")" : " (fixed)"));
        m.put("depth", Integer.toString(depth));
        m.put("threshold", bytes(threshold));
        m.put("eager", bytes(eager));
        m.put("pool", poolChunks + " x " + bytes(chunk));
        m.put("context sync", contextSync ? "yes" : "no");
        m.put("progress thread", progressThread ? "yes (under MPI_THREAD_MULTIPLE)" : "no (ferry.staged.progressThread=false)");
        if (stageHostBuffers) {
            m.put("stage host buffers", "yes (test mode, " + (memcpyThreads == 0 ? "inline" : "threaded") + " memcpy)");
        }
        if (offerIpcForHost) {
            m.put("offer ipc for host buffers", "yes (test mode)");
        }
        if (nodeGroup > 0) {
            m.put("node groups", "groups of " + nodeGroup + " consecutive world ranks count as separate nodes (test mode)");
        }
        return m;
    }

    /** "4 MiB", "64 KiB", "1027 B" ({@link Setting#bytes}). */
    public static String bytes(long n) {
        return Setting.bytes(n);
    }

    /** Parses "4MiB", "64k", "1g", "1048576" ({@link Setting#BYTES}); {@link InvalidArgumentException} naming {@code key} otherwise. */
    static long parseSize(String key, String v) {
        try {
            return Setting.parseBytes(v);
        } catch (IllegalArgumentException e) {
            throw new InvalidArgumentException(key + "='" + v + "' is not a size (examples: 4MiB, 64k, 1048576)");
        }
    }
}
