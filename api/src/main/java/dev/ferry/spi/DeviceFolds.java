package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;

/**
 * Reductions of device buffers under the MPI bindings, folded on the GPU instead of by the MPI
 * ({@code ferry.deviceReductions}). CUDA-aware MPIs move device memory at near copy speed but
 * reduce it on the host (Open MPI 5.0.7: allReduce of 64 MiB at about 3800 times one device copy,
 * bench/results). Here the data travels through the MPI's own device path and one kernel per rank
 * folds it in rank order:
 *
 * <ul>
 * <li><em>by blocks</em> (from {@link #BY_BLOCKS_FROM} per rank, and reduce-scatters): block r
 *     of every rank's input goes to rank r by allToAll, which folds it; the folded blocks travel to
 *     every rank (allGatherV) or to the root (gatherV);</li>
 * <li><em>gathered</em> (smaller reduce and allReduce, where every rank's input together is at most
 *     {@link #GATHER_LIMIT}): every rank's input goes to every rank (allGather) or to the root
 *     (gather), which folds them all.</li>
 * </ul>
 *
 * <p>{@code auto} folds where that measured faster than the MPI's own reduction: reduce and
 * allReduce from {@link #GATHERED_FROM} per rank, reduce-scatter from {@link #SCATTER_FROM} sent per
 * rank; {@code gpu} folds at every size (no reduction of device data on the host).
 *
 * <p>The ranks agree on the path with one one-integer allReduce per call (a rank with host memory
 * keeps the MPI's path for all). Scratch of up to {@link #CACHE_LIMIT} is kept between calls: a new
 * allocation per call cost about 400 µs a call on one H100, most of it the MPI mapping the new
 * memory again; larger scratch is allocated per call and freed after it.
 */
final class DeviceFolds implements AutoCloseable {
    /** How a reduction runs. */
    enum Path { MPI, GATHERED, BY_BLOCKS }

    /**
     * Bytes per rank from which reduce and allReduce fold by blocks: the crossover measured on one
     * H100 under MPS with the CUDA-aware Open MPI 5.0.7, 2 and 4 ranks, between 512 KiB and 2 MiB
     * (bench/results/2026-11-24-h100x1-mps-ipc-under-mpi.md).
     */
    static final long BY_BLOCKS_FROM = 1L << 20;
    /**
     * Bytes per rank from which {@code auto} folds reduce and allReduce below {@link #BY_BLOCKS_FROM},
     * gathered: the crossover against the MPI's own reduction (same machine and MPI, scratch kept),
     * between 32 KiB and 128 KiB at 2 and 4 ranks (same results file, call 10).
     */
    static final long GATHERED_FROM = 64L << 10;
    /** Bytes each rank sends from which {@code auto} folds a reduce-scatter by blocks: between 128 and 512 KiB at 4 ranks (call 10). */
    static final long SCATTER_FROM = 256L << 10;
    /** The most bytes every rank's input may take together for the gathered path. */
    static final long GATHER_LIMIT = 8L << 20;
    /** The most scratch kept between calls. */
    static final long CACHE_LIMIT = 64L << 20;
    private static final long ALIGN = 256;

    private final BindingTransport t;
    /** Scratch kept between calls, on the device of the last call's buffers; null before the first. */
    private Buffer cached;

    DeviceFolds(BindingTransport t) {
        this.t = t;
    }

    /**
     * How this reduction of {@code count} elements per rank runs; the same answer on every rank (one
     * agreement when it may fold). {@code blocksOnly}: a reduce-scatter, which folds only by blocks.
     */
    Path path(Buffer send, Buffer result, long count, DataType type, ReduceOp op, boolean blocksOnly) {
        String mode = dev.ferry.Settings.process().get(dev.ferry.FerrySettings.DEVICE_REDUCTIONS);
        int n = t.size();
        long bytes = type.bytes(count);
        // count, type, the size and the setting are the same on every rank: so is this first answer, without a message
        if (mode.equals("mpi") || n == 1 || count == 0) {
            return Path.MPI;
        }
        boolean folds = mode.equals("gpu") || bytes >= (blocksOnly ? SCATTER_FROM : GATHERED_FROM);
        Path p;
        if (blocksOnly) {
            p = folds && count >= n ? Path.BY_BLOCKS : Path.MPI;
        } else if (bytes >= BY_BLOCKS_FROM && count >= n) {
            p = Path.BY_BLOCKS;
        } else if (!folds) {
            p = Path.MPI;
        } else if (bytes * n <= GATHER_LIMIT) {
            p = Path.GATHERED;
        } else {
            p = count >= n ? Path.BY_BLOCKS : Path.MPI;
        }
        if (p == Path.MPI) {
            return p;
        }
        boolean mine = send.kind() == MemoryKind.DEVICE && result != null && result.kind() == MemoryKind.DEVICE
                && send.device() == result.device() && DeviceSupport.get().reducesOnDevice(type, op);
        // buffers may differ between ranks: one with host memory keeps the MPI path for all
        return t.anyRank(!mine) ? Path.MPI : p;
    }

    /** allReduce ({@code root} -1) or reduce on {@code path} (not {@link Path#MPI}). */
    void reduce(Buffer send, Buffer result, long count, DataType type, ReduceOp op, int root, Path path) {
        if (path == Path.GATHERED) {
            gathered(send, result, count, type, op, root);
        } else {
            byBlocks(send, result, count, type, op, root);
        }
    }

    /** Every rank's input to every rank (or the root), folded there in rank order. */
    private void gathered(Buffer send, Buffer result, long count, DataType type, ReduceOp op, int root) {
        int n = t.size(), me = t.rank();
        long bytes = type.bytes(count);
        if (root >= 0 && me != root) {
            t.gather(send, null, count, type, root);
            return;
        }
        // 16-byte aligned results are written by the kernel; others through a slot of the scratch
        boolean direct = result.address() % 16 == 0;
        try (Memory m = memory(send, aligned(bytes * n) + (direct ? 0 : bytes))) {
            Buffer all = m.at(0, bytes * n);
            if (root < 0) {
                t.allGather(send, all, count, type);
            } else {
                t.gather(send, all, count, type, root);
            }
            long[] sources = new long[n];
            for (int r = 0; r < n; r++) sources[r] = all.address() + r * bytes;
            Buffer into = direct ? result : m.at(aligned(bytes * n), bytes);
            DeviceSupport.get().reduce(send.device(), type, op, into.address(), sources, count);
            if (!direct) {
                DeviceSupport.get().copy(result, into, bytes);
            }
        }
    }

    /** Slices folded by their ranks ({@link #foldOwnBlock}), results through allGatherV or gatherV. */
    private void byBlocks(Buffer send, Buffer result, long count, DataType type, ReduceOp op, int root) {
        int me = t.rank();
        Blocks slices = Blocks.sliced(count, type, t.size());
        long mine = slices.count(me);
        try (Memory m = blockMemory(send, mine, type)) {
            Buffer part = foldOwnBlock(send, slices, m, type, op);
            if (root < 0) {
                t.allGatherV(part, mine, result, slices, type);
            } else {
                t.gatherV(part, mine, me == root ? result : null, me == root ? slices : null, type, root);
            }
        }
    }

    /** Reduce-scatter: the own block folded into scratch (aligned for the kernels whatever the caller's buffer), then copied. */
    void reduceScatter(Buffer send, Buffer result, Blocks blocks, DataType type, ReduceOp op) {
        long mine = blocks.count(t.rank());
        try (Memory m = blockMemory(send, mine, type)) {
            Buffer part = foldOwnBlock(send, blocks, m, type, op);
            if (mine > 0) {
                DeviceSupport.get().copy(result, part, type.bytes(mine));
            }
        }
    }

    /** Scratch for {@link #foldOwnBlock}: every rank's block of {@code mine} elements, then this rank's folded block. */
    private Memory blockMemory(Buffer send, long mine, DataType type) {
        return memory(send, aligned(type.bytes(mine * t.size())) + Math.max(1, type.bytes(mine)));
    }

    /**
     * Block r of every rank's {@code send} ({@code blocks}) to rank r, into the start of {@code m}
     * ({@link #blockMemory}); this rank folds its block of every rank's input on the GPU in rank
     * order into the rest of {@code m}, which it returns. Equal blocks laid end to end travel by
     * allToAll, others by allToAllV: Open MPI 5.0.7 ran MPI_Alltoallv on device memory at about
     * 1.3 GB/s on two H200s, 360 times its MPI_Alltoall of the same bytes.
     */
    private Buffer foldOwnBlock(Buffer send, Blocks blocks, Memory m, DataType type, ReduceOp op) {
        int n = t.size();
        long mine = blocks.count(t.rank());
        long inBytes = aligned(type.bytes(mine * n));
        Buffer in = m.at(0, Math.max(1, type.bytes(mine * n)));
        Buffer part = m.at(inBytes, Math.max(1, type.bytes(mine)));
        long[] fromEach = new long[n];
        java.util.Arrays.fill(fromEach, mine);
        Blocks received = Blocks.contiguous(fromEach); // every rank's block `me`, in rank order
        if (equalAndContiguous(blocks)) {
            t.allToAll(send, in, mine, type);
        } else {
            t.allToAllV(send, blocks, in, received, type);
        }
        if (mine > 0) {
            long[] sources = new long[n];
            for (int r = 0; r < n; r++) sources[r] = in.address() + type.bytes(received.displacement(r));
            DeviceSupport.get().reduce(send.device(), type, op, part.address(), sources, mine);
        }
        return part;
    }

    /** Every block of one count, block r at r times that count. */
    private static boolean equalAndContiguous(Blocks blocks) {
        long c = blocks.count(0);
        for (int r = 0; r < blocks.size(); r++) {
            if (blocks.count(r) != c || blocks.displacement(r) != c * r) return false;
        }
        return true;
    }

    private static long aligned(long bytes) {
        return (bytes + ALIGN - 1) / ALIGN * ALIGN;
    }

    /** Scratch for one call: a view of the kept memory, or (above {@link #CACHE_LIMIT}) memory of its own. */
    private Memory memory(Buffer like, long bytes) {
        if (bytes > CACHE_LIMIT) {
            return new Memory(DeviceSupport.get().allocateLike(like, bytes), true);
        }
        if (cached == null || cached.device() != like.device() || cached.byteSize() < bytes) {
            long size = Math.max(1L << 20, Long.highestOneBit(Math.max(1, bytes - 1)) << 1);
            if (cached != null) {
                ((DeviceBuffer) cached).close();
                cached = null;
            }
            cached = DeviceSupport.get().allocateLike(like, Math.min(size, CACHE_LIMIT));
        }
        return new Memory(cached, false);
    }

    /** Frees the kept scratch. */
    @Override
    public void close() {
        if (cached != null) {
            ((DeviceBuffer) cached).close();
            cached = null;
        }
    }

    /** Scratch of one call. */
    private record Memory(Buffer buffer, boolean own) implements AutoCloseable {
        Buffer at(long offset, long bytes) {
            return buffer.slice(offset, bytes);
        }

        @Override
        public void close() {
            if (own) ((DeviceBuffer) buffer).close();
        }
    }
}
