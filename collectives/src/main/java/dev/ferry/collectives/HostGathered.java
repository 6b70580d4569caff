// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.HostReduction;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;

/**
 * {@code host-gathered}: reductions of device buffers gathered raw through pinned host memory and
 * folded on the GPU. Each rank copies its input into pinned host memory, the backend gathers every
 * rank's input as bytes (an allGather, or for reduce a gather to the root) into pinned host memory,
 * and one reduction kernel on the rank's GPU reads what the rank needs from there and folds it in
 * rank order into the receive buffer ({@link DeviceReduction}): two device round trips, as many as
 * staging the call through the MPI's own reduction, and nothing is reduced on the host.
 *
 * <ul>
 * <li>allReduce: every rank folds every rank's input; reduce: the root gathers and folds.</li>
 * <li>reduce-scatter: every rank gathers every rank's whole send buffer and folds its own block.</li>
 * <li>scan: rank {@code r} folds the inputs of ranks {@code 0..r}; exscan: of ranks {@code 0..r-1}
 *     (rank 0's receive buffer is not written).</li>
 * </ul>
 *
 * <p>The fold is {@code ((x_0 op x_1) op x_2) ...}, element by element: the bytes of
 * {@link HostReduction}'s fold, for every type and operator. While the gathered bytes on a rank
 * ({@code ranks x input}) are at most {@link #LIMIT}. Where the backend stages host buffers in its
 * test mode ({@link Transport#stagesHostBuffers()}) the buffers are plain host memory and the fold
 * {@link HostReduction}, so that the protocol runs without a GPU.
 */
final class HostGathered implements Algorithm {
    /** The most bytes a rank gathers (every rank's input together): its pinned memory. */
    static final long LIMIT = 8L << 20;

    private final Group group;
    private final NodeIpc ipc;
    /** This rank's input and every rank's gathered, in host memory (pinned for device buffers); kept for the next call. */
    private HostBuffer mine, all;
    private boolean closed;

    /** Holds a reference to the process's {@link NodeIpc} (its streams and counters) until {@link #close()}. */
    HostGathered(Group group) {
        this.group = group;
        this.ipc = NodeIpc.acquire(dev.ferry.Settings.process());
    }

    @Override
    public String name() {
        return "host-gathered";
    }

    @Override
    public String description() {
        return "every input gathered as bytes through pinned host memory, folded in rank order by a kernel that reads it there";
    }

    @Override
    public boolean carries(Collective c) {
        return c == Collective.REDUCE || c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER || c == Collective.SCAN || c == Collective.EXSCAN;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        int n = t.size();
        if (n < 2) return "one rank";
        if (!t.cudaEverywhere() && !group.mover().stagesHostBuffers()) return "not every rank has a GPU";
        long perRank = s.bytes();
        if (perRank > LIMIT / n) return "every rank's input together exceeds " + (LIMIT >> 20) + " MiB";
        if (s.type().size() % DeviceReduction.alignment(s.type()) != 0) return s.type() + " inputs cannot lie end to end at the kernels' alignment";
        return null;
    }

    @Override
    public Agreement agreement() {
        return Agreement.VOTE;
    }

    /**
     * This rank's buffers suit it (device memory of one GPU, or host memory the backend stages for
     * tests), and its host memory for the call is made now, before the ranks agree: a rank that cannot
     * get pinned memory declines (every rank then takes another algorithm) instead of failing alone.
     */
    @Override
    public boolean needsDevice() {
        return !group.mover().stagesHostBuffers(); // the staged backend's host test mode runs these protocols on host memory
    }

    @Override
    public boolean takes(CollectiveCall c) {
        Buffer send = c.send();
        if (send == null) return false;
        for (Buffer b : new Buffer[] {send, c.recv()}) {
            if (b == null) continue;
            boolean ok = b instanceof HostBuffer ? group.mover().stagesHostBuffers()
                    : b.kind() == MemoryKind.DEVICE && b.device() == send.device() && Cuda.inPrimaryContext(b);
            if (!ok) return false;
        }
        long bytes = c.collective() == Collective.REDUCE_SCATTER ? c.shape().bytes() : c.type().bytes(c.count());
        try {
            mine = host(mine, send, bytes);
            all = host(all, send, bytes * group.size());
            return true;
        } catch (RuntimeException e) {
            System.getLogger("dev.ferry.collectives").log(System.Logger.Level.WARNING, "rank " + group.rank() + ": no host memory for a gathered "
                    + "reduction of " + bytes + " bytes per rank (" + e.getMessage() + "); this call takes another algorithm");
            return false;
        }
    }

    @Override
    public int preference() {
        return 45;
    }

    @Override
    public boolean run(CollectiveCall c) {
        switch (c.collective()) {
            case ALL_REDUCE -> allReduce(c.send(), c.recv(), c.count(), c.type(), c.op());
            case REDUCE -> reduce(c.send(), c.recv(), c.count(), c.type(), c.op(), c.root());
            case REDUCE_SCATTER -> reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
            case SCAN -> scan(c.send(), c.recv(), c.count(), c.type(), c.op(), true);
            case EXSCAN -> scan(c.send(), c.recv(), c.count(), c.type(), c.op(), false);
            default -> throw new IllegalArgumentException("host-gathered does not run " + c.collective());
        }
        return true;
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            if (mine != null) mine.close();
            if (all != null) all.close();
            mine = all = null;
        } finally {
            ipc.release();
        }
    }

    void allReduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        ipc.count("gatheredReductions");
        long bytes = type.bytes(count);
        fold(type, op, recv, gatherEveryInput(send, bytes), bytes, 0, group.size(), count);
    }

    void reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        ipc.count("gatheredReductions");
        long bytes = type.bytes(count);
        int n = group.size();
        boolean isRoot = group.rank() == root;
        stageIn(send, bytes);
        inner().gather(mine.slice(0, bytes), isRoot ? all.slice(0, bytes * n) : null, bytes, DataType.BYTE, root);
        if (isRoot) {
            fold(type, op, recv, all, bytes, 0, n, count);
        }
    }

    /** This rank's block of the fold of every rank's {@code send} (laid out as {@code blocks}). */
    void reduceScatter(Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op) {
        ipc.count("gatheredReductions");
        long total = type.bytes(blocks.total());
        int n = group.size(), me = group.rank();
        HostBuffer gathered = gatherEveryInput(send, total);
        fold(type, op, recv, gathered.slice(blocks.byteOffset(me, type), total * n - blocks.byteOffset(me, type)), total, 0, n, blocks.count(me));
    }

    /** scan ({@code inclusive}) or exscan: the fold of ranks {@code 0..me} or {@code 0..me-1}; nothing at exscan's rank 0. */
    void scan(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, boolean inclusive) {
        ipc.count("gatheredReductions");
        long bytes = type.bytes(count);
        HostBuffer gathered = gatherEveryInput(send, bytes);
        int upTo = inclusive ? group.rank() + 1 : group.rank();
        if (upTo > 0) {
            fold(type, op, recv, gathered, bytes, 0, upTo, count);
        }
    }

    private Transport inner() {
        return group.mover();
    }

    /** Every rank's first {@code bytes} of its {@code send}, in rank order, in {@link #all} (an allGather). */
    private HostBuffer gatherEveryInput(Buffer send, long bytes) {
        stageIn(send, bytes);
        inner().allGather(mine.slice(0, bytes), all.slice(0, bytes * group.size()), bytes, DataType.BYTE);
        return all;
    }

    /**
     * This rank's {@code bytes} of {@code send} in {@link #mine}, complete when it returns ({@link #mine}
     * and {@link #all} were made by {@link #takes}, which every rank passed before the call took this path).
     */
    private void stageIn(Buffer send, long bytes) {
        if (bytes > 0) {
            if (send instanceof HostBuffer h) { // the test mode
                MemorySegment.copy(h.segment(), 0, mine.segment(), 0, bytes);
            } else {
                CudaStream stream = ipc.collectiveStream(send.device());
                Cuda.copyAsync(mine.address(), send.address(), bytes, stream);
                stream.synchronize();
            }
        }
    }

    /** {@code kept} if it holds {@code bytes}, else a new buffer: pinned for device memory ({@code like}), plain in the test mode. */
    private static HostBuffer host(HostBuffer kept, Buffer like, long bytes) {
        boolean pinned = !(like instanceof HostBuffer); // the kernel reads it: it must be pinned
        if (kept != null && kept.byteSize() >= bytes && (!pinned || kept.kind() == dev.ferry.MemoryKind.HOST_PINNED)) {
            return kept;
        }
        long size = Math.max(bytes, 64);
        HostBuffer fresh = pinned ? Cuda.allocatePinned(size) : HostBuffer.allocate(size);
        if (kept != null) kept.close(); // only once the new one exists: a failed allocation leaves the kept buffer usable
        return fresh;
    }

    /**
     * {@code out = fold of gathered[r * stride .. + count elements]} for {@code r} in {@code [from, to)},
     * in rank order; complete when it returns. For device memory the GPU reads the gathered inputs
     * straight from pinned host memory (unified addressing).
     */
    private void fold(DataType type, ReduceOp op, Buffer out, HostBuffer gathered, long stride, int from, int to, long count) {
        if (count == 0) {
            return;
        }
        long bytes = type.bytes(count);
        MemorySegment g = gathered.segment();
        if (!(out.kind().needsCuda())) { // the test mode
            MemorySegment acc = ((HostBuffer) out).segment();
            MemorySegment.copy(g, from * stride, acc, 0, bytes);
            for (int r = from + 1; r < to; r++) {
                HostReduction.apply(type, op, acc, g.asSlice(r * stride, bytes), count);
            }
            return;
        }
        long[] sources = new long[to - from];
        for (int r = from; r < to; r++) sources[r - from] = gathered.address() + r * stride;
        CudaStream stream = ipc.collectiveStream(out.device());
        DeviceReduction.reduce(type, op, out.address(), sources, count, stream);
        stream.synchronize();
        ipc.count("gpuReductions");
    }
}
