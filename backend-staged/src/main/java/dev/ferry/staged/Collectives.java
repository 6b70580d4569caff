// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.PointToPointCollectives;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * The staged backend's own collectives (the planner's {@code native} algorithm under {@code staged}):
 * every collective is the inner MPI's, with device buffers staged through pinned host memory. Every
 * rank must make the same inner calls whatever memory its own buffers are in, so the plan depends
 * only on what all ranks know (count, type, size, settings), plus, for large operations, one
 * agreement (a one-integer allReduce) on whether any rank stages:
 *
 * <ul>
 * <li>Small (at most {@code threshold} bytes in the largest buffer): one inner call; device buffers
 *     are staged through one pooled buffer, host buffers go straight.</li>
 * <li>Large, and no rank stages: one inner call, straight (host-only jobs keep the inner backend's
 *     own algorithms).</li>
 * <li>Large, some rank stages: broadcast, reduce, allReduce, scan and exscan run chunk by chunk,
 *     pipelined: the device-to-host copy of chunk k+1 runs while the inner collective works on chunk
 *     k, and the host-to-device copy of chunk k while it works on k+1. Scatter, gather, allGather and
 *     allToAll are made of staged point-to-point messages on a private communicator, which pipeline
 *     themselves and take the IPC path between device buffers of one node; reduce-scatter is one
 *     chunked reduce per block.</li>
 * </ul>
 *
 * <p>The vector collectives run like the block collectives after one more agreement, since a rank
 * sees only its own blocks (see the section below). Other ways of running a collective (CUDA IPC
 * within a node, folds on the GPU, the reduction chain) are the planner's algorithms.
 */
final class Collectives {
    private final StagedTransport comm;
    private final StagedRuntime rt;
    private final HostBuffer flagIn = HostBuffer.allocate(8);
    private final HostBuffer flagOut = HostBuffer.allocate(8);
    private final HostBuffer vectorIn = HostBuffer.allocate(16);
    private final HostBuffer vectorOut = HostBuffer.allocate(16);

    Collectives(StagedTransport comm) {
        this.comm = comm;
        this.rt = comm.runtime();
    }

    /** Frees the agreement buffers. */
    void close() {
        flagIn.close();
        flagOut.close();
        vectorIn.close();
        vectorOut.close();
    }

    private Transport user() {
        rt.progress.poll(); // push transfers in flight before a blocking inner call
        return comm.user();
    }

    /** True on every rank when {@code mine} is true on any rank, e.g. any rank stages a buffer of this operation (collective). */
    boolean anyRank(boolean mine) {
        flagIn.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
        user().allReduce(flagIn, flagOut, 1, DataType.INT, ReduceOp.MAX);
        return flagOut.segment().get(ValueLayout.JAVA_INT, 0) != 0;
    }

    /** Elements per inner call: all at once, or chunks of the chunk size. */
    private long chunkElements(long largestBytes, long count, DataType type, boolean mine) {
        if (largestBytes <= rt.settings.threshold() || !anyRank(mine)) {
            return Math.max(count, 1);
        }
        return Tuning.of(rt.settings).chunkFor(largestBytes) / type.size();
    }

    // ---- chunked: broadcast, reduce, allReduce ---------------------------------------------

    void broadcast(Buffer buffer, long count, DataType type, int root) {
        boolean isRoot = comm.rank() == root;
        long per = chunkElements(type.bytes(count), count, type, comm.staged(buffer));
        chunked(isRoot ? buffer : null, isRoot ? null : buffer, count, type, per,
                (in, out, n) -> user().broadcast(isRoot ? in : out, n, type, root));
    }

    void reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        long per = chunkElements(type.bytes(count), count, type, comm.staged(send) || comm.staged(recv));
        chunked(send, recv, count, type, per, (in, out, n) -> user().reduce(in, out, n, type, op, root));
    }

    void allReduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        long per = chunkElements(type.bytes(count), count, type, comm.staged(send) || comm.staged(recv));
        chunked(send, recv, count, type, per, (in, out, n) -> user().allReduce(in, out, n, type, op));
    }

    /** One inner call on chunk buffers: {@code in} and {@code out} are host memory (staged or the user's), either may be null. */
    @FunctionalInterface
    private interface ChunkCall {
        void run(Buffer in, Buffer out, long elements);
    }

    private static final class Slot {
        HostBuffer in, out;
        CopyEngine.Fence inCopied, outCopied;
    }

    /**
     * Runs {@code call} over {@code count} elements in steps of {@code per}, staging {@code in}
     * (read) and {@code out} (written) where they need it, with up to {@code depth} chunks in
     * flight: inputs copied ahead, outputs copied back behind.
     */
    private void chunked(Buffer in, Buffer out, long count, DataType type, long per, ChunkCall call) {
        CopyEngine ie = rt.engineFor(in), oe = rt.engineFor(out);
        long steps = count == 0 ? 1 : (count + per - 1) / per;
        if (ie == null && oe == null) {
            for (long k = 0; k < steps; k++) {
                long e0 = k * per, n = Math.min(per, count - e0);
                call.run(slice(in, type, e0, n), slice(out, type, e0, n), n);
            }
            return;
        }
        if (ie != null) ie.awaitPriorWork(in);
        if (oe != null) oe.awaitPriorWork(out);
        int window = (int) Math.min(rt.settings.depth(), steps);
        List<Slot> slots = new ArrayList<>();
        RuntimeException failure = null;
        try {
            long most = type.bytes(Math.min(per, count));
            for (int i = 0; i < window; i++) {
                Slot s = new Slot();
                boolean guaranteed = i == 0;
                if (ie != null && (s.in = rt.chunks.acquire(most, guaranteed)) == null) break;
                if (oe != null && (s.out = rt.chunks.acquire(most, guaranteed)) == null) {
                    rt.chunks.release(s.in);
                    break;
                }
                slots.add(s);
            }
            window = slots.size();
            long issued = 0;
            for (long k = 0; k < steps; k++) {
                while (ie != null && issued < steps && issued < k + window) {
                    Slot s = slots.get((int) (issued % window));
                    long e0 = issued * per, n = Math.min(per, count - e0);
                    s.inCopied = ie.toStaging(s.in, 0, in, type.bytes(e0), type.bytes(n));
                    issued++;
                }
                Slot s = slots.get((int) (k % window));
                long e0 = k * per, n = Math.min(per, count - e0), bytes = type.bytes(n);
                if (s.inCopied != null) {
                    s.inCopied.await();
                }
                if (s.outCopied != null) {
                    s.outCopied.await();
                }
                call.run(ie != null ? s.in.slice(0, bytes) : slice(in, type, e0, n), oe != null ? s.out.slice(0, bytes) : slice(out, type, e0, n), n);
                rt.stats.collectiveSteps.increment();
                if (oe != null) {
                    s.outCopied = oe.fromStaging(out, type.bytes(e0), s.out, 0, bytes);
                }
            }
            for (Slot s : slots) {
                if (s.outCopied != null) s.outCopied.await();
            }
        } catch (RuntimeException e) {
            failure = e;
            throw e;
        } finally {
            for (Slot s : slots) {
                boolean quiet = true;
                for (CopyEngine.Fence f : new CopyEngine.Fence[] {s.inCopied, s.outCopied}) {
                    if (f == null) continue;
                    try {
                        f.await();
                    } catch (RuntimeException e) {
                        quiet = false;
                        if (failure != null && failure != e) failure.addSuppressed(e);
                    }
                }
                if (quiet) {
                    rt.chunks.release(s.in);
                    rt.chunks.release(s.out);
                }
            }
        }
    }

    private static Buffer slice(Buffer b, DataType type, long e0, long n) {
        return b == null ? null : b.slice(type.bytes(e0), type.bytes(n));
    }

    // ---- block collectives: scatter, gather, allGather, allToAll ----------------------------

    /** One inner call with staged copies of whole buffers (they fit in a chunk). */
    private void once(Buffer in, long inBytes, Buffer out, long outBytes, java.util.function.BiConsumer<Buffer, Buffer> call) {
        CopyEngine ie = rt.engineFor(in), oe = rt.engineFor(out);
        HostBuffer ti = null, to = null;
        try {
            if (ie != null) {
                ie.awaitPriorWork(in);
                ti = rt.chunks.acquire(inBytes, true);
                ie.toStaging(ti, 0, in, 0, inBytes).await();
            }
            if (oe != null) {
                oe.awaitPriorWork(out);
                to = rt.chunks.acquire(outBytes, true);
            }
            call.accept(ti != null ? ti.slice(0, inBytes) : in == null ? null : in.slice(0, inBytes),
                    to != null ? to.slice(0, outBytes) : out == null ? null : out.slice(0, outBytes));
            if (to != null) {
                oe.fromStaging(out, 0, to, 0, outBytes).await();
            }
        } finally {
            rt.chunks.release(ti);
            rt.chunks.release(to);
        }
    }

    /** True when the block collective runs as one inner call (small, or nobody stages). */
    private boolean single(long largestBytes, Buffer a, Buffer b) {
        return largestBytes <= rt.settings.threshold() || !anyRank(comm.staged(a) || comm.staged(b));
    }

    void scatter(Buffer send, Buffer recv, long count, DataType type, int root) {
        long block = type.bytes(count), all = block * comm.size();
        if (single(all, send, recv)) {
            once(send, all, recv, block, (i, o) -> user().scatter(i, o, count, type, root));
            return;
        }
        rt.stats.collectivesByMessages.increment();
        PointToPointCollectives.scatterV(comm.internal(), send, comm.rank() == root ? PointToPointCollectives.equal(count, comm.size()) : null,
                recv, count, type, root);
    }

    void gather(Buffer send, Buffer recv, long count, DataType type, int root) {
        long block = type.bytes(count), all = block * comm.size();
        if (single(all, send, recv)) {
            once(send, block, recv, all, (i, o) -> user().gather(i, o, count, type, root));
            return;
        }
        rt.stats.collectivesByMessages.increment();
        PointToPointCollectives.gatherV(comm.internal(), send, count, recv, comm.rank() == root ? PointToPointCollectives.equal(count, comm.size()) : null,
                type, root);
    }

    void allGather(Buffer send, Buffer recv, long count, DataType type) {
        long block = type.bytes(count), all = block * comm.size();
        if (single(all, send, recv)) {
            once(send, block, recv, all, (i, o) -> user().allGather(i, o, count, type));
            return;
        }
        byMessages(send, PointToPointCollectives.everyRank(count, comm.size()), recv, PointToPointCollectives.equal(count, comm.size()), type);
    }

    void allToAll(Buffer send, Buffer recv, long count, DataType type) {
        long block = type.bytes(count), all = block * comm.size();
        if (single(all, send, recv)) {
            once(send, all, recv, all, (i, o) -> user().allToAll(i, o, count, type));
            return;
        }
        byMessages(send, PointToPointCollectives.equal(count, comm.size()), recv, PointToPointCollectives.equal(count, comm.size()), type);
    }

    /** Block {@code r} of {@code send} to every rank {@code r}, block {@code r} of {@code recv} from it: staged messages on the private transport. */
    private void byMessages(Buffer send, Blocks sendBlocks, Buffer recv, Blocks recvBlocks, DataType type) {
        rt.stats.collectivesByMessages.increment();
        PointToPointCollectives.allToAllV(comm.internal(), send, sendBlocks, recv, recvBlocks, type);
    }

    // ---- vector collectives, reduce-scatter, prefix reductions ----------------------------------
    // Scan and exscan are element-wise, so they run chunk by chunk like allReduce. Reduce-scatter:
    // one inner call (small, or nobody stages), else one chunked reduce per block to its rank.
    // Vector collectives: each rank sees only its own blocks, so the ranks first agree on whether
    // any stages and on the largest buffer (one allReduce of two longs); then one inner call with
    // whole buffers staged (small, or nobody stages), else staged point-to-point messages on the
    // private communicator. A staged receive buffer gets back only its blocks: the bytes between
    // them are never written.

    void scan(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        long per = chunkElements(type.bytes(count), count, type, comm.staged(send) || comm.staged(recv));
        chunked(send, recv, count, type, per, (in, out, n) -> user().scan(in, out, n, type, op));
    }

    /** {@code recv} is null at rank 0. */
    void exscan(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        long per = chunkElements(type.bytes(count), count, type, comm.staged(send) || comm.staged(recv));
        chunked(send, recv, count, type, per, (in, out, n) -> user().exscan(in, out, n, type, op));
    }

    void reduceScatterBlock(Buffer send, Buffer recv, long recvCount, DataType type, ReduceOp op) {
        long[] counts = new long[comm.size()];
        java.util.Arrays.fill(counts, recvCount);
        reduceScatter(send, recv, Blocks.contiguous(counts), type, op,
                (i, o) -> user().reduceScatterBlock(i, o, recvCount, type, op));
    }

    void reduceScatter(Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op) {
        reduceScatter(send, recv, blocks, type, op, (i, o) -> user().reduceScatter(i, o, blocks, type, op));
    }

    private void reduceScatter(Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op, BiConsumer<Buffer, Buffer> inner) {
        long total = type.bytes(blocks.total());
        if (single(total, send, recv)) {
            onceV(send, total, recv, blocks.bytes(comm.rank(), type), null, type, inner);
            return;
        }
        for (int r = 0; r < comm.size(); r++) {
            reduce(send.slice(blocks.byteOffset(r, type), blocks.bytes(r, type)), r == comm.rank() ? recv : null, blocks.count(r), type, op, r);
        }
    }

    /** True on every rank when the vector collective runs as one inner call: nobody stages, or no rank's buffer is over the threshold (collective). */
    private boolean singleV(long largestBytes, Buffer a, Buffer b) {
        vectorIn.segment().set(ValueLayout.JAVA_LONG, 0, comm.staged(a) || comm.staged(b) ? 1 : 0);
        vectorIn.segment().set(ValueLayout.JAVA_LONG, 8, largestBytes);
        user().allReduce(vectorIn, vectorOut, 2, DataType.LONG, ReduceOp.MAX);
        return vectorOut.segment().get(ValueLayout.JAVA_LONG, 0) == 0 || vectorOut.segment().get(ValueLayout.JAVA_LONG, 8) <= rt.settings.threshold();
    }

    private static long spanBytes(Blocks b, DataType type) {
        return b == null ? 0 : type.bytes(b.span());
    }

    /** {@code send} and {@code sendBlocks} null except at root. */
    void scatterV(Buffer send, Blocks sendBlocks, Buffer recv, long recvCount, DataType type, int root) {
        long in = spanBytes(sendBlocks, type), out = type.bytes(recvCount);
        if (singleV(Math.max(in, out), send, recv)) {
            onceV(send, in, recv, out, null, type, (i, o) -> user().scatterV(i, sendBlocks, o, recvCount, type, root));
            return;
        }
        rt.stats.collectivesByMessages.increment();
        PointToPointCollectives.scatterV(comm.internal(), send, sendBlocks, recv, recvCount, type, root);
    }

    /** {@code recv} and {@code recvBlocks} null except at root. */
    void gatherV(Buffer send, long sendCount, Buffer recv, Blocks recvBlocks, DataType type, int root) {
        long in = type.bytes(sendCount), out = spanBytes(recvBlocks, type);
        if (singleV(Math.max(in, out), send, recv)) {
            onceV(send, in, recv, out, recvBlocks, type, (i, o) -> user().gatherV(i, sendCount, o, recvBlocks, type, root));
            return;
        }
        rt.stats.collectivesByMessages.increment();
        PointToPointCollectives.gatherV(comm.internal(), send, sendCount, recv, recvBlocks, type, root);
    }

    void allGatherV(Buffer send, long sendCount, Buffer recv, Blocks recvBlocks, DataType type) {
        long out = spanBytes(recvBlocks, type);
        if (singleV(out, send, recv)) {
            onceV(send, type.bytes(sendCount), recv, out, recvBlocks, type,
                    (i, o) -> user().allGatherV(i, sendCount, o, recvBlocks, type));
            return;
        }
        byMessages(send, PointToPointCollectives.everyRank(sendCount, comm.size()), recv, recvBlocks, type);
    }

    void allToAllV(Buffer send, Blocks sendBlocks, Buffer recv, Blocks recvBlocks, DataType type) {
        long in = spanBytes(sendBlocks, type), out = spanBytes(recvBlocks, type);
        if (singleV(Math.max(in, out), send, recv)) {
            onceV(send, in, recv, out, recvBlocks, type, (i, o) -> user().allToAllV(i, sendBlocks, o, recvBlocks, type));
            return;
        }
        byMessages(send, sendBlocks, recv, recvBlocks, type);
    }

    /**
     * One inner call with staged copies of whole buffers (they fit in a chunk): {@code in}'s first
     * {@code inBytes} are copied in; after the call, {@code out}'s blocks ({@code outBlocks}; all of
     * its first {@code outBytes} when null) are copied back, and nothing between them.
     */
    private void onceV(Buffer in, long inBytes, Buffer out, long outBytes, Blocks outBlocks, DataType type, BiConsumer<Buffer, Buffer> call) {
        CopyEngine ie = rt.engineFor(in), oe = rt.engineFor(out);
        HostBuffer ti = null, to = null;
        try {
            if (ie != null) {
                ie.awaitPriorWork(in);
                ti = rt.chunks.acquire(inBytes, true);
                ie.toStaging(ti, 0, in, 0, inBytes).await();
            }
            if (oe != null) {
                oe.awaitPriorWork(out);
                to = rt.chunks.acquire(outBytes, true);
            }
            call.accept(ti != null ? ti.slice(0, inBytes) : in == null ? null : in.slice(0, inBytes),
                    to != null ? to.slice(0, outBytes) : out == null ? null : out.slice(0, outBytes));
            if (to != null) {
                if (outBlocks == null) {
                    oe.fromStaging(out, 0, to, 0, outBytes).await();
                } else {
                    List<CopyEngine.Fence> copies = new ArrayList<>();
                    for (int r = 0; r < outBlocks.size(); r++) {
                        long n = outBlocks.bytes(r, type);
                        if (n > 0) {
                            long at = outBlocks.byteOffset(r, type);
                            copies.add(oe.fromStaging(out, at, to, at, n));
                        }
                    }
                    for (CopyEngine.Fence f : copies) {
                        f.await();
                    }
                }
            }
        } finally {
            rt.chunks.release(ti);
            rt.chunks.release(to);
        }
    }
}
