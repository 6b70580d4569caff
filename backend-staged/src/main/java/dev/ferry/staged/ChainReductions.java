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
 * are not all on one node: a pipelined chain in rank order, reduced where the data is. Chunk k of
 * rank 0's input goes to rank 1, which folds it with its own chunk k on its GPU
 * ({@link DeviceReduction}) and sends the partial result on to rank 2, and so on; rank {@code n-1}
 * holds the result, which reduce sends to the root and allReduce broadcasts. The messages are
 * staged point-to-point messages on the communicator's private duplicate, so they pipeline through
 * pinned host memory between nodes and take CUDA IPC within one; up to {@code depth} chunks are in
 * flight on every link. Nothing is reduced on the host.
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

    /** reduce ({@code root >= 0}) or allReduce ({@code root < 0}, {@code recv} on every rank) by the chain. */
    void run(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        int n = comm.size(), me = comm.rank(), last = n - 1;
        StagedTransport c = comm.internal();
        long unit = Math.max(1, 16 / type.size());
        long per = Math.max(unit, Tuning.of(rt.settings).chunkFor(type.bytes(count)) / type.size() / unit * unit);
        long steps = (count + per - 1) / per;
        int window = (int) Math.min(Math.max(1, rt.settings.depth()), steps);
        Slot[] slots = new Slot[window];
        if (me > 0) {
            for (int i = 0; i < window; i++) slots[i] = new Slot(chunk(send, type.bytes(per), 2 * i), chunk(send, type.bytes(per), 2 * i + 1));
        } else {
            for (int i = 0; i < window; i++) slots[i] = new Slot(null, null);
        }
        boolean resultElsewhere = root >= 0 && root != last;
        rt.stats.chainReductions.increment();
        List<Request> pending = new ArrayList<>();
        RuntimeException failure = null;
        try {
            long posted = 0;
            for (long k = 0; k < steps; k++) {
                while (me > 0 && posted < steps && posted < k + window) {
                    Slot s = slots[(int) (posted % window)];
                    long m = Math.min(per, count - posted * per);
                    s.received = c.irecv(s.in.slice(0, type.bytes(m)), m, type, me - 1, CHAIN_TAG);
                    posted++;
                }
                long e0 = k * per, m = Math.min(per, count - e0);
                Buffer mine = send.slice(type.bytes(e0), type.bytes(m));
                Slot s = slots[(int) (k % window)];
                if (s.sent != null) {
                    s.sent.waitFor(); // the slot's buffer of chunk k - window is free again
                    s.sent = null;
                }
                if (me == 0) {
                    s.sent = c.isend(mine, m, type, 1, CHAIN_TAG);
                } else {
                    s.received.waitFor();
                    s.received = null;
                    boolean finalHere = me == last && (root < 0 || root == last);
                    Buffer out = finalHere ? recv.slice(type.bytes(e0), type.bytes(m)) : s.acc.slice(0, type.bytes(m));
                    fold(type, op, out, s.in, mine, m);
                    if (me < last) {
                        s.sent = c.isend(out, m, type, me + 1, CHAIN_TAG);
                    } else if (resultElsewhere) {
                        s.sent = c.isend(out, m, type, root, RESULT_TAG);
                    }
                }
                if (resultElsewhere && me == root) {
                    c.recv(recv.slice(type.bytes(e0), type.bytes(m)), m, type, last, RESULT_TAG);
                }
                rt.stats.collectiveSteps.increment();
            }
            for (Slot s : slots) {
                if (s.sent != null) pending.add(s.sent);
                s.sent = null;
            }
            Request.waitAll(pending);
            pending.clear();
        } catch (RuntimeException e) {
            failure = e;
            for (Slot s : slots) {
                for (Request r : new Request[] {s.sent, s.received}) {
                    if (r == null) continue;
                    try {
                        r.waitFor();
                    } catch (RuntimeException e2) {
                        e.addSuppressed(e2);
                    }
                }
            }
            throw e;
        }
        if (root < 0 && failure == null) {
            collectives.broadcast(recv, count, type, last);
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

    /** {@code out = in op mine} over {@code m} elements, complete when it returns. */
    private void fold(DataType type, ReduceOp op, Buffer out, Buffer in, Buffer mine, long m) {
        if (mine instanceof HostBuffer h) {
            MemorySegment o = ((HostBuffer) out).segment();
            MemorySegment.copy(((HostBuffer) in).segment(), 0, o, 0, type.bytes(m));
            HostReduction.apply(type, op, o, h.segment(), m);
            return;
        }
        CudaStream stream = rt.collectiveStream(mine.device());
        DeviceReduction.reduce(type, op, out.address(), new long[] {in.address(), mine.address()}, m, stream);
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
