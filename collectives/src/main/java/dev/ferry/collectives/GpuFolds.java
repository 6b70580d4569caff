// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.DeviceSupport;
import dev.ferry.spi.Transport;

/**
 * Reductions of device buffers whose data travels through the backend's own collectives (device
 * memory through a CUDA-aware MPI, or staged's pipeline) and is folded on the GPU in rank order,
 * with one kernel per rank, instead of by the MPI (CUDA-aware MPIs reduce device memory on the
 * host: Open MPI 5.0.7's allReduce of 64 MiB took about 3800 times one device copy,
 * bench/results). Two algorithms share the scratch memory kept between calls:
 *
 * <ul>
 * <li>{@code gathered}: every rank's input goes to every rank (allGather) or to the root (gather),
 *     which folds them all; while every rank's input together is at most {@link #GATHER_LIMIT};</li>
 * <li>{@code blocks}: block r of every rank's input goes to rank r (allToAll), which folds it; the
 *     folded blocks travel to every rank (allGatherV) or to the root (gatherV); reduce-scatter ends
 *     with the folded block.</li>
 * </ul>
 *
 * <p>Every rank's buffers must be device memory of one GPU with a kernel for the type and operator:
 * the ranks vote on it ({@link Algorithm.Agreement#VOTE}). Scratch of up to {@link #CACHE_LIMIT} is
 * kept between calls: a new allocation per call cost about 400 µs a call on one H100, most of it
 * the MPI mapping the new memory again; larger scratch is allocated per call and freed after it.
 */
final class GpuFolds implements AutoCloseable {
    /** The most bytes every rank's input may take together for {@code gathered} (its scratch on each rank). */
    static final long GATHER_LIMIT = 8L << 20;
    /** The most scratch kept between calls. */
    static final long CACHE_LIMIT = 64L << 20;
    private static final long ALIGN = 256;

    private final Group group;
    /** Scratch kept between calls, on the device of the last call's buffers; null before the first. */
    private Buffer cached;

    GpuFolds(Group group) {
        this.group = group;
    }

    /** The two algorithms over this scratch. */
    Algorithm gathered() {
        return new Fold("gathered", "every input to every rank (allGather or gather), folded on the GPU in rank order", true);
    }

    Algorithm byBlocks() {
        return new Fold("blocks", "block r of every input to rank r (allToAll), folded there on the GPU, the results gathered", false);
    }

    /** This rank's buffers suit a fold: device memory of one GPU with a kernel for the type and operator. */
    private static boolean takes(CollectiveCall c) {
        Buffer out = c.recv() != null ? c.recv() : c.send();
        return c.send() != null && c.send().kind() == MemoryKind.DEVICE && out.kind() == MemoryKind.DEVICE && c.send().device() == out.device()
                && DeviceSupport.get().reducesOnDevice(c.type(), c.op());
    }

    private final class Fold implements Algorithm {
        private final String name;
        private final String description;
        private final boolean gathers;

        Fold(String name, String description, boolean gathers) {
            this.name = name;
            this.description = description;
            this.gathers = gathers;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return description;
        }

        @Override
        public boolean carries(Collective c) {
            return c == Collective.REDUCE || c == Collective.ALL_REDUCE || (!gathers && c == Collective.REDUCE_SCATTER);
        }

        @Override
        public String unfit(Shape s, Topology t) {
            if (!t.cudaEverywhere()) return "not every rank has a GPU";
            if (!DeviceSupport.get().reducesOnDevice(s.type(), s.op())) return "no GPU kernel folds " + s.type() + " with " + s.op();
            int n = t.size();
            if (n < 2) return "one rank";
            long perRank = s.collective() == Collective.REDUCE_SCATTER ? s.bytes() / n : s.bytes();
            if (gathers && perRank * n > GATHER_LIMIT) return "every rank's input together exceeds " + (GATHER_LIMIT >> 20) + " MiB";
            if (!gathers && s.collective() != Collective.REDUCE_SCATTER && s.bytes() < (long) s.type().size() * n) return "fewer elements than ranks";
            return null;
        }

        @Override
        public Agreement agreement() {
            return Agreement.VOTE;
        }

        @Override
        public boolean takes(CollectiveCall c) {
            return GpuFolds.takes(c);
        }

        @Override
        public boolean needsDevice() {
            return true;
        }

        @Override
        public int preference() {
            return gathers ? 30 : 31;
        }

        @Override
        public boolean run(CollectiveCall c) {
            if (c.collective() == Collective.REDUCE_SCATTER) {
                reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
            } else if (gathers) {
                gathered(c.send(), c.recv(), c.count(), c.type(), c.op(), c.collective() == Collective.REDUCE ? c.root() : -1);
            } else {
                byBlocks(c.send(), c.recv(), c.count(), c.type(), c.op(), c.collective() == Collective.REDUCE ? c.root() : -1);
            }
            return true;
        }

        @Override
        public void close() {
            GpuFolds.this.close();
        }
    }

    /** Every rank's input to every rank (or the root), folded there in rank order. */
    private void gathered(Buffer send, Buffer result, long count, DataType type, ReduceOp op, int root) {
        Transport t = group.mover();
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
        Transport t = group.mover();
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
    private void reduceScatter(Buffer send, Buffer result, Blocks blocks, DataType type, ReduceOp op) {
        long mine = blocks.count(group.rank());
        try (Memory m = blockMemory(send, mine, type)) {
            Buffer part = foldOwnBlock(send, blocks, m, type, op);
            if (mine > 0) {
                DeviceSupport.get().copy(result, part, type.bytes(mine));
            }
        }
    }

    /** Scratch for {@link #foldOwnBlock}: every rank's block of {@code mine} elements, then this rank's folded block. */
    private Memory blockMemory(Buffer send, long mine, DataType type) {
        return memory(send, aligned(type.bytes(mine * group.size())) + Math.max(1, type.bytes(mine)));
    }

    /**
     * Block r of every rank's {@code send} ({@code blocks}) to rank r, into the start of {@code m}
     * ({@link #blockMemory}); this rank folds its block of every rank's input on the GPU in rank
     * order into the rest of {@code m}, which it returns. Equal blocks laid end to end travel by
     * allToAll, others by allToAllV: Open MPI 5.0.7 ran MPI_Alltoallv on device memory at about
     * 1.3 GB/s on two H200s, 360 times its MPI_Alltoall of the same bytes.
     */
    private Buffer foldOwnBlock(Buffer send, Blocks blocks, Memory m, DataType type, ReduceOp op) {
        Transport t = group.mover();
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
