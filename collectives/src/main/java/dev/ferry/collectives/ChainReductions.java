// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.spi.HostReduction;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code chain}: reduce and allReduce of device buffers as a pipelined chain in rank order, reduced
 * where the data is. Chunk k of rank 0's input goes to rank 1, which folds it with its own chunk k
 * on its GPU ({@link DeviceReduction}) and sends the partial result on to rank 2, and so on; rank
 * {@code n-1} holds the result, which reduce sends to the root and allReduce broadcasts (the
 * backend's broadcast). The messages are the backend's point-to-point messages on the
 * communicator's private duplicate (staged: pipelined through pinned host memory between nodes,
 * CUDA IPC within one; a CUDA-aware MPI: its device path); up to {@link #DEPTH} chunks are in flight
 * on every link; the root receives the result's chunks as they come. Nothing is reduced on the host.
 * {@link HierarchicalReductions} runs the same chain among node leaders ({@link #along}).
 *
 * <p>Every element is folded in rank order, {@code ((x_0 op x_1) op x_2) ...}: the bytes of
 * {@link HostReduction}'s fold for every type and operator. Where the backend stages host buffers
 * in its test mode ({@link Transport#stagesHostBuffers()}), the chain folds host buffers with
 * {@link HostReduction}, so that the protocol runs on machines without a GPU.
 */
final class ChainReductions implements Algorithm {
    private static final int CHAIN_TAG = 1, RESULT_TAG = 2;
    /** Chunks in flight on every link of the chain. */
    static final int DEPTH = 4;
    /** Chunk bounds: a call is cut into about 2 x {@link #DEPTH} chunks between these. */
    static final long MIN_CHUNK = 1L << 20, MAX_CHUNK = 4L << 20;

    private final Group group;
    private final NodeIpc ipc;
    /** Chunk buffers kept for the next call: incoming partials and outgoing partials, per slot. */
    private final List<Buffer> scratch = new ArrayList<>();
    private boolean closed;

    /** Holds a reference to the process's {@link NodeIpc} (its streams and counters) until {@link #close()}. */
    ChainReductions(Group group) {
        this.group = group;
        this.ipc = NodeIpc.acquire(dev.ferry.Settings.process());
    }

    /** The process's node IPC this chain holds (its streams and counters). */
    NodeIpc ipc() {
        return ipc;
    }

    @Override
    public String name() {
        return "chain";
    }

    @Override
    public String description() {
        return "a pipelined chain in rank order: each rank folds its chunk on its GPU and passes the partial result on";
    }

    @Override
    public boolean carries(Collective c) {
        return c == Collective.REDUCE || c == Collective.ALL_REDUCE;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        if (t.size() < 2) return "one rank";
        if (!t.cudaEverywhere() && !group.mover().stagesHostBuffers()) return "not every rank has a GPU";
        return null;
    }

    @Override
    public Agreement agreement() {
        return Agreement.VOTE;
    }

    @Override
    public boolean needsDevice() {
        return !group.mover().stagesHostBuffers(); // the staged backend's host test mode runs these protocols on host memory
    }

    @Override
    public boolean takes(CollectiveCall c) {
        return canTake(c.send(), c.recv(), c.type());
    }

    @Override
    public int preference() {
        return 50;
    }

    @Override
    public boolean run(CollectiveCall c) {
        int root = c.collective() == Collective.REDUCE ? c.root() : -1;
        int n = group.size();
        int[] everyone = new int[n];
        for (int r = 0; r < n; r++) everyone[r] = r;
        along(group.internal(), everyone, c.send(), c.recv(), c.count(), c.type(), c.op(), root);
        if (root < 0) {
            group.mover().broadcast(c.recv(), c.count(), c.type(), n - 1);
        }
        return true;
    }

    /**
     * Whether this rank's buffers can take a chain: device memory of one GPU in the primary context,
     * aligned for the kernels (or host memory where the backend stages it for tests).
     */
    boolean canTake(Buffer send, Buffer recv, DataType type) {
        for (Buffer b : new Buffer[] {send, recv}) {
            if (b == null) continue;
            if (b instanceof HostBuffer) {
                if (!group.mover().stagesHostBuffers()) return false;
                continue;
            }
            if (b.kind() != MemoryKind.DEVICE || b.device() != send.device() || b.address() % DeviceReduction.alignment(type) != 0
                    || !Cuda.inPrimaryContext(b)) {
                return false;
            }
        }
        return send instanceof HostBuffer || Cuda.isAvailable();
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            for (Buffer b : scratch) free(b);
            scratch.clear();
        } finally {
            ipc.release();
        }
    }

    /** Elements per chunk for {@code count} elements of {@code type}: about 2 x {@link #DEPTH} chunks, within the bounds, whole 16-byte units. */
    private static long chunkElements(long count, DataType type) {
        long unit = Math.max(1, 16 / type.size());
        long bytes = Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, type.bytes(count) / (2L * DEPTH)));
        return Math.max(unit, bytes / type.size() / unit * unit);
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
    void along(Transport c, int[] members, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
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
        long per = chunkElements(count, type);
        long steps = (count + per - 1) / per;
        int window = (int) Math.min(DEPTH, steps);
        Slot[] slots = new Slot[window];
        if (pos > 0) {
            for (int i = 0; i < window; i++) slots[i] = new Slot(chunk(send, type.bytes(per), 2 * i), chunk(send, type.bytes(per), 2 * i + 1));
        } else {
            for (int i = 0; i < window; i++) slots[i] = new Slot(null, null);
        }
        boolean resultElsewhere = root >= 0 && root != last;
        boolean receivesResult = resultElsewhere && me == root;
        if (pos >= 0) {
            ipc.count("chainReductions");
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
        CudaStream stream = ipc.collectiveStream(mine.device());
        if (out.address() == mine.address()) {
            // DeviceReduction's result may be its first source only: fold into in, then copy
            DeviceReduction.reduce(type, op, in.address(), new long[] {in.address(), mine.address()}, m, stream);
            Cuda.copyAsync(out.address(), in.address(), bytes, stream);
        } else {
            DeviceReduction.reduce(type, op, out.address(), new long[] {in.address(), mine.address()}, m, stream);
        }
        stream.synchronize();
        ipc.count("gpuReductions");
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
