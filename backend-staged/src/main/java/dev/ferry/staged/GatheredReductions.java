package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.HostReduction;
import java.lang.foreign.MemorySegment;

/**
 * Reductions of staged buffers (device memory) that the node's CUDA IPC path does not carry and
 * that are too small for the reduction chain to pay: small reduce and allReduce across nodes (or
 * with IPC off), small reduce-scatters, and the prefix reductions scan and exscan. Every rank's
 * input is gathered raw (bytes, through the staged allGather or gather: pinned host memory between
 * nodes, CUDA IPC within one) into a scratch buffer on the rank's GPU, and the GPU folds what the
 * rank needs in rank order ({@link DeviceReduction}): nothing is reduced on the host.
 *
 * <ul>
 * <li>allReduce: every rank folds every rank's input; reduce: the root gathers and folds.</li>
 * <li>reduce-scatter: every rank gathers every rank's whole send buffer and folds its own block.</li>
 * <li>scan: rank {@code r} folds the inputs of ranks {@code 0..r}; exscan: of ranks {@code 0..r-1}
 *     (rank 0's receive buffer is not written).</li>
 * </ul>
 *
 * <p>The fold is {@code ((x_0 op x_1) op x_2) ...}, element by element: the bytes of
 * {@link HostReduction}'s fold, for every type and operator. A call takes this path when the
 * gathered bytes on a rank ({@code ranks x input}) are at most {@code ferry.staged.gatherLimit}; the decision rests on
 * what every rank knows plus the agreement of {@link Collectives} that every rank's buffers are
 * staged. In the test mode that stages host buffers ({@code ferry.staged.stageHostBuffers}) the
 * scratch is host memory and the fold {@link HostReduction}, so that the protocol runs without a GPU.
 */
final class GatheredReductions {
    private final Collectives collectives;
    private final StagedRuntime rt;
    /** The gathered inputs, kept for the next call (grown when a call needs more). */
    private Buffer scratch;

    GatheredReductions(StagedTransport comm, Collectives collectives) {
        this.collectives = collectives;
        this.rt = comm.runtime();
    }

    /**
     * Whether gathering {@code bytesPerRank} from each of {@code ranks} ranks stays within
     * {@code limit} bytes, with every rank's part at an address the GPU kernels can read {@code type}
     * at (a pair type whose size is not a multiple of its alignment cannot be laid end to end).
     */
    static boolean fits(long bytesPerRank, int ranks, DataType type, long limit) {
        return ranks >= 2 && bytesPerRank >= 0 && bytesPerRank <= limit / ranks && type.size() % DeviceReduction.alignment(type) == 0;
    }

    void close() {
        free(scratch);
        scratch = null;
    }

    void allReduce(int ranks, Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        Buffer all = scratch(send, bytes * ranks);
        collectives.allGather(send, all, bytes, DataType.BYTE);
        fold(type, op, recv, all, bytes, 0, 0, ranks, count);
    }

    void reduce(int ranks, int me, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        Buffer all = me == root ? scratch(send, bytes * ranks) : null;
        collectives.gather(send, all, bytes, DataType.BYTE, root);
        if (me == root) {
            fold(type, op, recv, all, bytes, 0, 0, ranks, count);
        }
    }

    /** Rank {@code me}'s block of the fold of every rank's {@code send} (laid out as {@code blocks}). */
    void reduceScatter(int ranks, int me, Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op) {
        rt.stats.gatheredReductions.increment();
        long total = type.bytes(blocks.total());
        Buffer all = scratch(send, total * ranks);
        collectives.allGather(send.slice(0, total), all, total, DataType.BYTE);
        fold(type, op, recv, all, total, blocks.byteOffset(me, type), 0, ranks, blocks.count(me));
    }

    /** scan ({@code inclusive}) or exscan: the fold of ranks {@code 0..me} or {@code 0..me-1}; nothing at exscan's rank 0. */
    void scan(int ranks, int me, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, boolean inclusive) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        Buffer all = scratch(send, bytes * ranks);
        collectives.allGather(send, all, bytes, DataType.BYTE);
        int upTo = inclusive ? me + 1 : me;
        if (upTo > 0) {
            fold(type, op, recv, all, bytes, 0, 0, upTo, count);
        }
    }

    /**
     * {@code out = fold of all[r * stride + offset .. + count elements]} for {@code r} in
     * {@code [from, to)}, in rank order; complete when it returns.
     */
    private void fold(DataType type, ReduceOp op, Buffer out, Buffer all, long stride, long offset, int from, int to, long count) {
        long bytes = type.bytes(count);
        if (count == 0) {
            return;
        }
        if (all instanceof HostBuffer h) { // the test mode
            MemorySegment acc = ((HostBuffer) out).segment();
            MemorySegment.copy(h.segment(), from * stride + offset, acc, 0, bytes);
            for (int r = from + 1; r < to; r++) {
                HostReduction.apply(type, op, acc, h.segment().asSlice(r * stride + offset, bytes), count);
            }
            return;
        }
        long[] sources = new long[to - from];
        for (int r = from; r < to; r++) sources[r - from] = all.address() + r * stride + offset;
        CudaStream stream = rt.collectiveStream(out.device());
        DeviceReduction.reduce(type, op, out.address(), sources, count, stream);
        stream.synchronize();
        rt.stats.gpuReductions.increment();
    }

    /** The scratch, at least {@code bytes}, of the memory kind (and GPU) of {@code like}. */
    private Buffer scratch(Buffer like, long bytes) {
        Buffer b = scratch;
        boolean fits = b != null && b.byteSize() >= bytes && (like instanceof HostBuffer) == (b instanceof HostBuffer)
                && (like instanceof HostBuffer || b.device() == like.device());
        if (!fits) {
            free(b);
            scratch = null;
            long size = Math.max(bytes, 1);
            b = like instanceof HostBuffer ? HostBuffer.allocate(size) : Cuda.allocate(like.device(), size);
            scratch = b;
        }
        return b;
    }

    private static void free(Buffer b) {
        if (b instanceof HostBuffer h) h.close();
        else if (b instanceof DeviceBuffer d) d.close();
    }
}
