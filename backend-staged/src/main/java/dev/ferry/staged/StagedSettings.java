package dev.ferry.staged;

import dev.ferry.InvalidArgumentException;
import dev.ferry.spi.BindingCommunicator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.BinaryOperator;

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
 * @param ipc            {@code ferry.staged.ipc}: CUDA IPC between device buffers of one node (default true)
 * @param ipcCacheSize   {@code ferry.staged.ipcCacheSize}: peer mappings kept open, least recently used evicted (default 64)
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
 * @param deviceCollectives {@code ferry.staged.deviceCollectives}: how collectives on device buffers run: {@code auto}
 *                       (the default: broadcast, reduce, allReduce and allGather among ranks all on one node over CUDA
 *                       IPC, reducing on the GPU, when every rank's buffers allow it; large reductions of device buffers
 *                       across nodes by the reduction chain, reducing on the GPUs; else staged through host memory),
 *                       {@code ipc} (as auto, but a node-local device-buffer collective that cannot take the IPC path fails
 *                       instead of staging), {@code host} (always staged through host memory, reduced by the inner MPI)
 */
public record StagedSettings(long chunk, long minChunk, int depth, long threshold, long eager, int poolChunks, boolean ipc, int ipcCacheSize,
                             boolean contextSync, boolean stageHostBuffers, int memcpyThreads, boolean offerIpcForHost,
                             boolean progressThread, DeviceCollectives deviceCollectives) {

    /** {@code ferry.staged.deviceCollectives}: which path node-local collectives on device buffers take. */
    public enum DeviceCollectives {
        /** CUDA IPC and GPU reductions where possible, host staging otherwise. */
        AUTO,
        /** CUDA IPC and GPU reductions; a device-buffer collective that cannot take that path fails. */
        IPC,
        /** Always staged through host memory, reduced by the inner MPI. */
        HOST
    }

    /** Largest chunk: one MPI message per chunk, below the bindings' 2 GiB limit. */
    public static final long MAX_CHUNK = 1L << 30;
    /** Smallest eager size: an IPC offer (handle and addresses) must fit in the first piece. */
    public static final long MIN_EAGER = 256;

    /** Reads and checks every setting. */
    public static StagedSettings read(BinaryOperator<String> setting) {
        long chunk = size(setting, "ferry.staged.chunk", "4MiB");
        long minChunk = size(setting, "ferry.staged.minChunk", Long.toString(Math.min(1024 * 1024, chunk)));
        int depth = (int) number(setting, "ferry.staged.depth", "4");
        long threshold = size(setting, "ferry.staged.threshold", "1MiB");
        // the first piece (header + eager bytes) is received before its length is known: it must fit in
        // one piece of the inner binding, or the inner receive would wait for pieces that never come
        long firstPieceRoom = BindingCommunicator.configuredMaxPieceBytes() - Wire.HEADER;
        long eager = size(setting, "ferry.staged.eager", Long.toString(Math.max(MIN_EAGER, Math.min(Math.min(16 * 1024, threshold), firstPieceRoom))));
        if (eager > firstPieceRoom) {
            throw new InvalidArgumentException("ferry.staged.eager=" + eager + ": the first piece (" + Wire.HEADER + " + eager bytes) must fit in one piece of "
                    + "ferry.maxPieceBytes=" + BindingCommunicator.configuredMaxPieceBytes() + ": lower ferry.staged.eager or raise ferry.maxPieceBytes");
        }
        int pool = (int) number(setting, "ferry.staged.pool", Integer.toString(2 * Math.max(depth, 1)));
        boolean ipc = bool(setting, "ferry.staged.ipc", "true");
        int cache = (int) number(setting, "ferry.staged.ipcCacheSize", "64");
        boolean sync = bool(setting, "ferry.staged.contextSync", "false");
        boolean stageHost = bool(setting, "ferry.staged.stageHostBuffers", "false");
        int threads = (int) number(setting, "ferry.staged.memcpyThreads", "1");
        boolean offer = bool(setting, "ferry.staged.test.offerIpc", "false");
        boolean assistant = bool(setting, "ferry.staged.progressThread", "true");
        String dc = setting.apply("ferry.staged.deviceCollectives", "auto").trim().toLowerCase(Locale.ROOT);
        DeviceCollectives collectives = switch (dc) {
            case "auto" -> DeviceCollectives.AUTO;
            case "ipc" -> DeviceCollectives.IPC;
            case "host" -> DeviceCollectives.HOST;
            default -> throw new InvalidArgumentException("ferry.staged.deviceCollectives='" + dc + "': expected auto, ipc or host");
        };
        StagedSettings s = new StagedSettings(chunk, minChunk, depth, threshold, eager, pool, ipc, cache, sync, stageHost, threads, offer, assistant,
                collectives);
        s.check();
        return s;
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
        if (ipcCacheSize < 1) {
            throw new InvalidArgumentException("ferry.staged.ipcCacheSize=" + ipcCacheSize + ": must be at least 1");
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
        m.put("device collectives", switch (deviceCollectives) {
            case AUTO -> "auto (CUDA IPC and GPU reductions within a node where every rank's buffers allow, else staged)";
            case IPC -> "ipc (CUDA IPC and GPU reductions within a node, or an exception)";
            case HOST -> "host (staged through host memory, reduced by the inner MPI)";
        });
        m.put("progress thread", progressThread ? "yes (under MPI_THREAD_MULTIPLE)" : "no (ferry.staged.progressThread=false)");
        if (stageHostBuffers) {
            m.put("stage host buffers", "yes (test mode, " + (memcpyThreads == 0 ? "inline" : "threaded") + " memcpy)");
        }
        if (offerIpcForHost) {
            m.put("offer ipc for host buffers", "yes (test mode)");
        }
        return m;
    }

    /** "4 MiB", "64 KiB", "1027 B". */
    public static String bytes(long n) {
        if (n >= (1L << 30) && n % (1L << 30) == 0) return (n >> 30) + " GiB";
        if (n >= (1L << 20) && n % (1L << 20) == 0) return (n >> 20) + " MiB";
        if (n >= (1L << 10) && n % (1L << 10) == 0) return (n >> 10) + " KiB";
        return n + " B";
    }

    /** Parses "4MiB", "64k", "1g", "1048576". */
    static long parseSize(String key, String v) {
        String s = v.trim().toLowerCase(Locale.ROOT).replace("_", "");
        long mul = 1;
        String[][] units = {{"gib", "30"}, {"mib", "20"}, {"kib", "10"}, {"gb", "30"}, {"mb", "20"}, {"kb", "10"}, {"g", "30"}, {"m", "20"}, {"k", "10"}, {"b", "0"}};
        for (String[] u : units) {
            if (s.endsWith(u[0])) {
                mul = 1L << Integer.parseInt(u[1]);
                s = s.substring(0, s.length() - u[0].length()).trim();
                break;
            }
        }
        try {
            return Math.multiplyExact(Long.parseLong(s), mul);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new InvalidArgumentException(key + "='" + v + "' is not a size (examples: 4MiB, 64k, 1048576)");
        }
    }

    private static long size(BinaryOperator<String> setting, String key, String fallback) {
        return parseSize(key, setting.apply(key, fallback));
    }

    private static long number(BinaryOperator<String> setting, String key, String fallback) {
        String v = setting.apply(key, fallback);
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new InvalidArgumentException(key + "='" + v + "' is not a number");
        }
    }

    private static boolean bool(BinaryOperator<String> setting, String key, String fallback) {
        String v = setting.apply(key, fallback).trim().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new InvalidArgumentException(key + "='" + v + "': expected true or false");
        };
    }
}
