package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.spi.Transport;
import dev.ferry.spi.HostReduction;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Large reduce and allReduce when every rank's buffers are staged (device memory) and the ranks
 * are not all on one node, nor node-local groups with several nodes ({@link HierarchicalReductions},
 * whose node leaders run this chain over the leaders alone, {@link #along}): a pipelined chain in
 * rank order, reduced where the data is. Chunk k of
 * rank 0's input goes to rank 1, which folds it with its own chunk k on its GPU
 * ({@link DeviceReduction}) and sends the partial result on to rank 2, and so on; rank {@code n-1}
 * holds the result, which reduce sends to the root and allReduce broadcasts. The messages are
 * staged point-to-point messages on the communicator's private duplicate, so they pipeline through
 * pinned host memory between nodes and take CUDA IPC within one; up to {@code depth} chunks are in
 * flight on every link; the root receives the result's chunks as they come. Nothing is reduced on the host.
 *
 * <p>Every element is folded in rank order, {@code ((x_0 op x_1) op x_2) ...}: the bytes of
 * {@link HostReduction}'s fold for every type and operator. In the test mode that stages host
 * buffers ({@code ferry.staged.stageHostBuffers}), the same chain folds with {@link HostReduction}
 * instead of the GPU, so that the protocol runs on machines without one.
 */
final class ChainReductions {
    private static final int CHAIN_TAG = 1, RESULT_TAG = 2;

    private final StagedTransport comm;
    private final Collectives collectives;
    private final StagedRuntime rt;
    /** Chunk buffers kept for the next call: incoming partials and outgoing partials, per slot. */
    private final List<Buffer> scratch = new ArrayList<>();

    ChainReductions(StagedTransport comm, Collectives collectives) {
        this.comm = comm;
        this.collectives = collectives;
        this.rt = comm.runtime();
    }

    /** Whether this rank's buffers can take the chain: staged memory, and for device memory aligned for the GPU kernels. */
    boolean canTake(Buffer send, Buffer recv, DataType type) {
        for (Buffer b : new Buffer[] {send, recv}) {
            if (b == null) continue;
            if (!comm.staged(b)) return false;
            if (b instanceof HostBuffer) continue; // the test mode
            if (!StagedRuntime.ipcExportable(b) || b.device() != send.device() || b.address() % DeviceReduction.alignment(type) != 0
                    || !Cuda.inPrimaryContext(b)) {
                return false;
            }
        }
        return send instanceof HostBuffer || Cuda.isAvailable();
    }

    void close() {
        for (Buffer b : scratch) free(b);
        scratch.clear();
    }

    /** reduce ({@code root >= 0}) or allReduce ({@code root < 0}, {@code recv} on every rank) by the chain over every rank in rank order. */
    void run(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        int n = comm.size();
        int[] everyone = new int[n];
        for (int r = 0; r < n; r++) everyone[r] = r;
        along(comm.internal(), everyone, send, recv, count, type, op, root);
        if (root < 0) {
            collectives.broadcast(recv, count, type, n - 1);
        }
    }

    /**
     * The chain over {@code members} (at least two distinct ranks of {@code c}, in fold order): member i
     * folds its {@code send} into the partial result of members 0..i-1 and passes it on. The last
     * member writes the result into its {@code recv} when {@code root} is negative or itself;
     * otherwise it sends it, chunk by chunk, to {@code root} (a rank of {@code c}, a member or not),
     * which receives it into its {@code recv}. A member's {@code send} may be its {@code recv} (the
     * fold then never writes a chunk before reading it). Ranks of {@code c} that are neither members
     * nor the root return at once. Collective over the members and the root.
     */
    void along(StagedTransport c, int[] members, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        int me = c.rank(), pos = -1, k = members.length;
        for (int i = 0; i < k; i++) {
            if (members[i] == me) pos = i;
        }
        if (k < 2) {
            throw new IllegalArgumentException("a reduction chain of " + k + " member(s)");
        }
        if (pos < 0 && me != root) {
            return;
        }
        int last = members[k - 1], prev = pos > 0 ? members[pos - 1] : -1, next = pos >= 0 && pos < k - 1 ? members[pos + 1] : -1;
        long unit = Math.max(1, 16 / type.size());
        long per = Math.max(unit, Tuning.of(rt.settings).chunkFor(type.bytes(count)) / type.size() / unit * unit);
        long steps = (count + per - 1) / per;
        int window = (int) Math.min(Math.max(1, rt.settings.depth()), steps);
        Slot[] slots = new Slot[window];
        if (pos > 0) {
            for (int i = 0; i < window; i++) slots[i] = new Slot(chunk(send, type.bytes(per), 2 * i), chunk(send, type.bytes(per), 2 * i + 1));
        } else {
            for (int i = 0; i < window; i++) slots[i] = new Slot(null, null);
        }
        boolean resultElsewhere = root >= 0 && root != last;
        boolean receivesResult = resultElsewhere && me == root;
        if (pos >= 0) {
            rt.stats.chainReductions.increment();
        }
        List<Request> pending = new ArrayList<>();
        java.util.ArrayDeque<Request> results = new java.util.ArrayDeque<>();
        try {
            long posted = 0;
            for (long step = 0; step < steps; step++) {
                long e0 = step * per, m = Math.min(per, count - e0);
                if (pos >= 0) {
                    while (pos > 0 && posted < steps && posted < step + window) {
                        Slot s = slots[(int) (posted % window)];
                        long pm = Math.min(per, count - posted * per);
                        s.received = c.irecv(s.in.slice(0, type.bytes(pm)), pm, type, prev, CHAIN_TAG);
                        posted++;
                    }
                    Buffer mine = send.slice(type.bytes(e0), type.bytes(m));
                    Slot s = slots[(int) (step % window)];
                    if (s.sent != null) {
                        s.sent.waitFor(); // the slot's buffer of chunk step - window is free again
                        s.sent = null;
                    }
                    if (pos == 0) {
                        s.sent = c.isend(mine, m, type, next, CHAIN_TAG);
                    } else {
                        s.received.waitFor();
                        s.received = null;
                        boolean finalHere = me == last && (root < 0 || root == last);
                        Buffer out = finalHere ? recv.slice(type.bytes(e0), type.bytes(m)) : s.acc.slice(0, type.bytes(m));
                        fold(type, op, out, s.in, mine, m);
                        if (next >= 0) {
                            s.sent = c.isend(out, m, type, next, CHAIN_TAG);
                        } else if (resultElsewhere) {
                            s.sent = c.isend(out, m, type, root, RESULT_TAG);
                        }
                    }
                    rt.stats.collectiveSteps.increment();
                }
                if (receivesResult) {
                    // chunk step of the result depends on this rank's chunk step, which it has read by now
                    if (results.size() >= window) results.removeFirst().waitFor();
                    results.addLast(c.irecv(recv.slice(type.bytes(e0), type.bytes(m)), m, type, last, RESULT_TAG));
                }
            }
            for (Slot s : slots) {
                if (s.sent != null) pending.add(s.sent);
                s.sent = null;
            }
            pending.addAll(results);
            results.clear();
            Request.waitAll(pending);
            pending.clear();
        } catch (RuntimeException e) {
            List<Request> open = new ArrayList<>(results);
            for (Slot s : slots) {
                open.add(s.sent);
                open.add(s.received);
            }
            for (Request r : open) {
                if (r == null) continue;
                try {
                    r.waitFor();
                } catch (RuntimeException e2) {
                    e.addSuppressed(e2);
                }
            }
            throw e;
        }
    }

    private static final class Slot {
        final Buffer in, acc;
        Request received, sent;

        Slot(Buffer in, Buffer acc) {
            this.in = in;
            this.acc = acc;
        }
    }

    /**
     * {@code out = in op mine} over {@code m} elements, complete when it returns; {@code in} is this
     * chain's scratch and may be overwritten, {@code out} may be {@code mine} (the result folded into
     * {@code in}, then copied).
     */
    private void fold(DataType type, ReduceOp op, Buffer out, Buffer in, Buffer mine, long m) {
        long bytes = type.bytes(m);
        if (mine instanceof HostBuffer h) {
            MemorySegment acc = ((HostBuffer) in).segment();
            HostReduction.apply(type, op, acc, h.segment(), m);
            MemorySegment.copy(acc, 0, ((HostBuffer) out).segment(), 0, bytes);
            return;
        }
        CudaStream stream = rt.collectiveStream(mine.device());
        if (out.address() == mine.address()) {
            // DeviceReduction's result may be its first source only: fold into in, then copy
            DeviceReduction.reduce(type, op, in.address(), new long[] {in.address(), mine.address()}, m, stream);
            Cuda.copyAsync(out.address(), in.address(), bytes, stream);
        } else {
            DeviceReduction.reduce(type, op, out.address(), new long[] {in.address(), mine.address()}, m, stream);
        }
        stream.synchronize();
        rt.stats.gpuReductions.increment();
    }

    /** Scratch chunk {@code i} of at least {@code bytes}, of the memory kind of {@code like} (kept for later calls). */
    private Buffer chunk(Buffer like, long bytes, int i) {
        while (scratch.size() <= i) scratch.add(null);
        Buffer b = scratch.get(i);
        boolean fits = b != null && b.byteSize() >= bytes && (like instanceof HostBuffer) == (b instanceof HostBuffer)
                && (like instanceof HostBuffer || b.device() == like.device());
        if (!fits) {
            if (b != null) free(b);
            b = like instanceof HostBuffer ? HostBuffer.allocate(bytes) : Cuda.allocate(like.device(), bytes);
            scratch.set(i, b);
        }
        return b;
    }

    private static void free(Buffer b) {
        if (b instanceof HostBuffer h) h.close();
        else if (b instanceof DeviceBuffer d) d.close();
    }
}
