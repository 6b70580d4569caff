package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.DataType;
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
 * with IPC off), small reduce-scatters, and the prefix reductions scan and exscan. Each rank copies
 * its input into pinned host memory, the inner MPI gathers every rank's input raw (bytes: an
 * allGather, or for reduce a gather to the root) into pinned host memory, and one reduction kernel
 * on the rank's GPU reads what the rank needs from there and folds it in rank order into the
 * receive buffer ({@link DeviceReduction}): two device round trips, as many as staging the call
 * through the inner MPI's own reduction, and nothing is reduced on the host.
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
 * gathered bytes on a rank ({@code ranks x input}) are at most {@code ferry.staged.gatherLimit}; the
 * decision rests on what every rank knows plus the agreement of {@link Collectives} that every
 * rank's buffers are staged. In the test mode that stages host buffers
 * ({@code ferry.staged.stageHostBuffers}) the buffers are plain host memory and the fold
 * {@link HostReduction}, so that the protocol runs without a GPU.
 */
final class GatheredReductions {
    private static final System.Logger LOG = System.getLogger(GatheredReductions.class.getName());

    private final StagedTransport comm;
    private final StagedRuntime rt;
    /** This rank's input and every rank's gathered, in host memory (pinned for device buffers); kept for the next call. */
    private HostBuffer mine, all;

    GatheredReductions(StagedTransport comm) {
        this.comm = comm;
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

    /**
     * Makes this rank's host buffers for a call of {@code bytes} per rank now, before the ranks agree,
     * so that a rank that cannot get pinned memory declines (every rank then takes the inner MPI's
     * path) instead of failing alone between the agreement and the gather; false when it could not.
     */
    boolean ready(Buffer like, long bytes) {
        try {
            mine = host(mine, like, bytes);
            all = host(all, like, bytes * comm.size());
            return true;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "ferry staged: rank " + comm.rank() + ": no host memory for a gathered reduction of " + bytes + " bytes per rank ("
                    + e.getMessage() + "); this call is reduced by the inner MPI");
            return false;
        }
    }

    void close() {
        if (mine != null) mine.close();
        if (all != null) all.close();
        mine = all = null;
    }

    void allReduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        fold(type, op, recv, gatherEveryInput(send, bytes), bytes, 0, comm.size(), count);
    }

    void reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        int n = comm.size();
        boolean isRoot = comm.rank() == root;
        stageIn(send, bytes);
        inner().gather(mine.slice(0, bytes), isRoot ? all.slice(0, bytes * n) : null, bytes, DataType.BYTE, root);
        if (isRoot) {
            fold(type, op, recv, all, bytes, 0, n, count);
        }
    }

    /** This rank's block of the fold of every rank's {@code send} (laid out as {@code blocks}). */
    void reduceScatter(Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op) {
        rt.stats.gatheredReductions.increment();
        long total = type.bytes(blocks.total());
        int n = comm.size(), me = comm.rank();
        HostBuffer gathered = gatherEveryInput(send, total);
        fold(type, op, recv, gathered.slice(blocks.byteOffset(me, type), total * n - blocks.byteOffset(me, type)), total, 0, n, blocks.count(me));
    }

    /** scan ({@code inclusive}) or exscan: the fold of ranks {@code 0..me} or {@code 0..me-1}; nothing at exscan's rank 0. */
    void scan(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, boolean inclusive) {
        rt.stats.gatheredReductions.increment();
        long bytes = type.bytes(count);
        HostBuffer gathered = gatherEveryInput(send, bytes);
        int upTo = inclusive ? comm.rank() + 1 : comm.rank();
        if (upTo > 0) {
            fold(type, op, recv, gathered, bytes, 0, upTo, count);
        }
    }

    private dev.ferry.spi.Transport inner() {
        rt.progress.poll(); // push transfers in flight before a blocking inner call
        return comm.user();
    }

    /** Every rank's first {@code bytes} of its {@code send}, in rank order, in {@link #all} (an allGather). */
    private HostBuffer gatherEveryInput(Buffer send, long bytes) {
        stageIn(send, bytes);
        inner().allGather(mine.slice(0, bytes), all.slice(0, bytes * comm.size()), bytes, DataType.BYTE);
        return all;
    }

    /**
     * This rank's {@code bytes} of {@code send} in {@link #mine}, complete when it returns ({@link #mine}
     * and {@link #all} were made by {@link #ready}, which every rank passed before the call took this path).
     */
    private void stageIn(Buffer send, long bytes) {
        if (bytes > 0) {
            if (send instanceof HostBuffer h) { // the test mode
                MemorySegment.copy(h.segment(), 0, mine.segment(), 0, bytes);
            } else {
                CudaStream stream = rt.collectiveStream(send.device());
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
        CudaStream stream = rt.collectiveStream(out.device());
        DeviceReduction.reduce(type, op, out.address(), sources, count, stream);
        stream.synchronize();
        rt.stats.gpuReductions.increment();
    }
}
