// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Buffer;
import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.FerrySettings;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Settings;
import dev.ferry.collectives.Algorithm;
import dev.ferry.collectives.Collective;
import dev.ferry.collectives.CollectiveCall;
import dev.ferry.collectives.Group;
import dev.ferry.collectives.Shape;
import dev.ferry.collectives.Topology;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaDevice;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.DeviceSupport;
import dev.ferry.spi.Transport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code nccl}: collectives on device memory run by NVIDIA NCCL, one NCCL communicator per Ferry
 * communicator, made at the first call that takes this algorithm (from a unique id made on rank 0
 * and broadcast over the backend's transport; collective, as the call is).
 *
 * <p>It carries broadcast, allGather (any type, as bytes), reduce and allReduce (types and operators
 * of {@link NcclTypes}), gather, scatter and allToAll (grouped ncclSend/ncclRecv; a rank's own block is
 * a device copy), the vector collectives the same way, and reduceScatter (ncclReduceScatter for equal
 * blocks, else grouped ncclReduce per block); not scan and exscan, nor the reductions NCCL lacks
 * ({@link NcclTypes#lacks}). It needs one GPU per rank (NCCL refuses two ranks on one GPU), and every
 * rank's buffers in device memory of its GPU: the ranks vote on that per call.
 *
 * <p>Ordering and completion: the collective runs on this communicator's own CUDA stream, which
 * first waits on the GPU for the caller's earlier device work ({@link dev.ferry.spi.PendingDeviceWork});
 * the call returns when a CUDA event recorded after it has completed. While waiting it polls {@code ncclCommGetAsyncError}; an
 * asynchronous error, a CUDA error or a wait longer than {@code ferry.nccl.timeout} seconds (default:
 * {@code ferry.timeout}; 0 = no limit) calls {@code ncclCommAbort} and throws {@link NcclException}.
 * The NCCL communicator is then unusable: later calls take another algorithm.
 */
public final class NcclCollectives implements Algorithm {
    private final Group group;
    private final CudaDevice device;
    private final long timeoutNanos;
    /** ncclComm_t, 0 before the first call (or when it could not be made). */
    private long comm;
    private CudaStream stream;
    private long streamHandle;
    private CudaEvent done;
    /** Why NCCL cannot serve this communicator (library, placement, a failed init), or null. */
    private volatile String inactive;
    /** Why the NCCL communicator was aborted, or null. */
    private volatile String broken;

    NcclCollectives(Group group) {
        this.group = group;
        this.device = Cuda.isAvailable() ? Cuda.defaultDevice() : null;
        this.timeoutNanos = timeoutNanos(Settings.process());
        Topology t = group.topology();
        if (!Nccl.isAvailable()) {
            inactive = "the NCCL library is unavailable: " + Nccl.unavailabilityCause().getMessage();
        } else if (!t.cudaEverywhere()) {
            inactive = "not every rank has a GPU";
        } else if (t.placement() != Topology.Placement.ONE_PER_RANK) {
            inactive = "ranks share a GPU (" + t.describe() + "): NCCL needs one GPU per rank";
        }
    }

    /** {@code ferry.nccl.timeout}, else {@code ferry.timeout}, in nanoseconds; 0: no limit. */
    static long timeoutNanos(Settings settings) {
        Double sec = settings.get(NcclSettings.TIMEOUT);
        double s = sec != null ? sec : settings.get(FerrySettings.TIMEOUT);
        return s > 0 ? (long) (s * 1e9) : 0;
    }

    @Override
    public String name() {
        return "nccl";
    }

    @Override
    public String description() {
        return "NVIDIA NCCL on this communicator's GPUs (one GPU per rank)";
    }

    @Override
    public boolean carries(Collective c) {
        return c != Collective.SCAN && c != Collective.EXSCAN;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        if (inactive != null) return inactive;
        if (broken != null) return "its NCCL communicator was aborted: " + broken;
        if (s.collective().reduces()) {
            var lack = NcclTypes.lacks(s.type(), s.op());
            if (lack.isPresent()) return lack.get();
        }
        return null;
    }

    @Override
    public Agreement agreement() {
        return Agreement.VOTE;
    }

    @Override
    public boolean needsDevice() {
        return true;
    }

    /** NCCL completes a rooted collective whose ranks name different roots, with wrong data: the planner compares the calls first. */
    @Override
    public boolean comparesCalls(Collective c) {
        return c.rooted();
    }

    /** Every call's work is enqueued on this communicator's stream, which waits for the caller's work first; peers reach these buffers through NCCL's kernels only. */
    @Override
    public boolean ordersOnGpu() {
        return true;
    }

    /** NCCL moves the data; the backend only carries the unique id at the first call. */
    @Override
    public boolean timedWithBackend() {
        return false;
    }

    /** This rank's buffers are device memory of its GPU (a null buffer, insignificant here, counts as such). */
    @Override
    public boolean takes(CollectiveCall c) {
        return mine(c.send()) && mine(c.recv());
    }

    @Override
    public int preference() {
        return 60;
    }

    /** Why device collectives of this communicator cannot run on NCCL, or null when they can. */
    public String inactiveReason() {
        return inactive != null ? inactive : broken;
    }

    /** True when the NCCL communicator is made and not aborted. */
    public boolean active() {
        return comm != 0 && broken == null;
    }

    /** The GPU of this communicator's NCCL communicator (null without CUDA). */
    public CudaDevice device() {
        return device;
    }

    private int rank() {
        return group.rank();
    }

    private int size() {
        return group.size();
    }

    /** Device memory of this communicator's GPU (null, an insignificant buffer, counts as eligible). */
    private boolean mine(Buffer b) {
        return b == null || (b instanceof DeviceBuffer d && d.kind() == MemoryKind.DEVICE && device != null && d.device() == device.ordinal());
    }

    @Override
    public boolean run(CollectiveCall c) {
        if (comm == 0 && !make()) {
            return false; // every rank alike: the init's outcome is agreed
        }
        switch (c.collective()) {
            case BROADCAST -> broadcast(c.send() != null ? c.send() : c.recv(), c.count(), c.type(), c.root());
            case ALL_REDUCE -> allReduce(c.send(), c.recv(), c.count(), c.type(), c.op());
            case REDUCE -> reduce(c.send(), c.recv(), c.count(), c.type(), c.op(), c.root());
            case ALL_GATHER -> allGather(c.send(), c.recv(), c.count(), c.type());
            case GATHER -> gather(c.send(), c.recv(), c.count(), c.type(), c.root());
            case SCATTER -> scatter(c.send(), c.recv(), c.count(), c.type(), c.root());
            case ALL_TO_ALL -> allToAll(c.send(), c.recv(), c.count(), c.type());
            case REDUCE_SCATTER -> reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
            case SCATTER_V -> scatterV(c.send(), c.sendBlocks(), c.recv(), c.count(), c.type(), c.root());
            case GATHER_V -> gatherV(c.send(), c.count(), c.recv(), c.recvBlocks(), c.type(), c.root());
            case ALL_GATHER_V -> allGatherV(c.send(), c.count(), c.recv(), c.recvBlocks(), c.type());
            case ALL_TO_ALL_V -> allToAllV(c.send(), c.sendBlocks(), c.recv(), c.recvBlocks(), c.type());
            default -> throw new IllegalArgumentException("nccl does not run " + c.collective());
        }
        return true;
    }

    /**
     * Enqueues allReduce, broadcast, reduce, allGather, reduce-scatter, gather, scatter or
     * all-to-all on the caller's {@code stream} (NCCL's own stream semantics: no wait, capturable
     * into a CUDA graph; the last three as a group of sends and receives and a copy of the rank's
     * own block); the vector collectives go to the view's thread (false on every rank alike). None
     * of these may run from the view's thread: it holds the caller's stream while it runs a call,
     * and NCCL's first sends and receives on a communicator set up their connections with calls that
     * wait for every blocking stream of the context, that one too.
     */
    @Override
    public boolean enqueues(Collective c) {
        return switch (c) {
            case ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, GATHER, SCATTER, ALL_TO_ALL -> true;
            default -> false;
        };
    }

    @Override
    @SuppressWarnings("try") // the scope is held for its close (restoring the caller's context), not used
    public boolean enqueue(CollectiveCall c, dev.ferry.DeviceStream userStream) {
        if (!enqueues(c.collective())) {
            return false;
        }
        if (comm == 0 && !make()) {
            return false; // every rank alike: the init's outcome is agreed
        }
        if (!takes(c)) {
            throw new dev.ferry.UnsupportedBufferException(c + " on a stream over NCCL: every buffer must be device memory of this rank's GPU "
                    + device + " (the NCCL communicator's)");
        }
        if (userStream.deviceOrdinal() != device.ordinal()) {
            throw new dev.ferry.UnsupportedBufferException(c + " on a stream of GPU " + userStream.deviceOrdinal() + ": this rank's NCCL communicator runs on "
                    + device + "; make the stream on that GPU");
        }
        long h = userStream.streamHandle();
        try (DeviceSupport.Scope ignored = DeviceSupport.get().preserveContext()) {
            device.makeCurrent();
            Buffer send = c.send(), recv = c.recv();
            DataType type = c.type();
            long count = c.count();
            int rc = switch (c.collective()) {
                case ALL_REDUCE -> NcclAbi.allReduce(send.address(), recv.address(), count, NcclTypes.dataType(type), NcclTypes.redOp(c.op()), comm, h);
                case BROADCAST -> NcclAbi.broadcast(send.address(), send.address(), type.bytes(count), NcclTypes.UINT8, c.root(), comm, h);
                case REDUCE -> NcclAbi.reduce(send.address(), recv == null ? 0 : recv.address(), count, NcclTypes.dataType(type), NcclTypes.redOp(c.op()),
                        c.root(), comm, h);
                case ALL_GATHER -> NcclAbi.allGather(send.address(), recv.address(), type.bytes(count), NcclTypes.UINT8, comm, h);
                case REDUCE_SCATTER -> NcclAbi.reduceScatter(send.address(), recv.address(), count, NcclTypes.dataType(type), NcclTypes.redOp(c.op()),
                        comm, h);
                // the view passes a CudaStream (CudaStreamOrder refuses any other); each of these checks its own calls
                case GATHER -> {
                    enqueueGather(send, recv, count, type, c.root(), (CudaStream) userStream);
                    yield 0;
                }
                case SCATTER -> {
                    enqueueScatter(send, recv, count, type, c.root(), (CudaStream) userStream);
                    yield 0;
                }
                case ALL_TO_ALL -> {
                    enqueueAllToAll(send, recv, count, type, (CudaStream) userStream);
                    yield 0;
                }
                default -> throw new IllegalStateException(c.toString());
            };
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("nccl " + c.collective().label() + " enqueued on a stream (" + c + ")", rc, comm);
        } catch (NcclException e) {
            throw abort(c + " on a stream: " + e.getMessage(), e);
        } catch (CudaException e) {
            throw abort(c + " on a stream: a CUDA call failed: " + e.getMessage(), e);
        }
        return true;
    }

    /**
     * Makes the NCCL communicator, its stream and event (collective); false on every rank when some
     * rank could not, or when two ranks of one host have one GPU. The topology can miss that (ranks
     * counted as separate nodes, {@code ferry.staged.test.nodeGroup}), and NCCL's own check fails
     * only on the two ranks that share: the others would wait inside {@code ncclCommInitRank}.
     */
    private boolean make() {
        String shared = GpuPlacement.refusal(GpuPlacement.exchange(group.mover(), GpuPlacement.mine()));
        if (shared != null) {
            inactive = shared;
            NcclRuntime.record("communicator creation", shared);
            return false;
        }
        try {
            comm = initByUniqueId(group.mover(), device);
        } catch (NcclException e) {
            inactive = e.getMessage();
            NcclRuntime.record("communicator creation", e.getMessage());
            return false;
        }
        try {
            stream = Cuda.newStream(device.ordinal());
            done = Cuda.newEvent(device.ordinal(), false);
            streamHandle = nativeHandle(stream);
        } catch (RuntimeException e) {
            NcclAbi.commAbort(comm);
            comm = 0;
            throw e;
        }
        return true;
    }

    /** Rank 0 makes a unique id and broadcasts it over {@code over}; every rank joins. Collective; consistent on failure. */
    static long initByUniqueId(Transport over, CudaDevice dev) {
        int n = 1 + NcclTypes.UNIQUE_ID_BYTES;
        long c = 0;
        try (HostBuffer id = HostBuffer.allocate(n)) {
            MemorySegment seg = id.segment();
            String why = null;
            if (over.rank() == 0) {
                try {
                    int rc = NcclAbi.getUniqueId(seg.asSlice(1, NcclTypes.UNIQUE_ID_BYTES));
                    if (rc != NcclTypes.SUCCESS) why = Nccl.error("ncclGetUniqueId on rank 0", rc, 0).getMessage();
                } catch (RuntimeException e) {
                    why = "ncclGetUniqueId on rank 0: " + e.getMessage();
                }
                seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) (why == null ? 1 : 0));
            }
            over.broadcast(id, n, DataType.BYTE, 0);
            if (seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) != 1) {
                throw new NcclException(why != null ? why : "rank 0 could not make an NCCL unique id (see rank 0's output)");
            }
            String local = null;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(JAVA_LONG);
                dev.makeCurrent();
                int rc = NcclAbi.commInitRank(out, over.size(), seg.asSlice(1, NcclTypes.UNIQUE_ID_BYTES), over.rank());
                if (rc == NcclTypes.SUCCESS) {
                    c = out.get(JAVA_LONG, 0);
                } else {
                    local = Nccl.error("ncclCommInitRank(" + over.size() + " ranks, rank " + over.rank() + ", GPU " + dev.pciBusId() + ")", rc, 0)
                            .getMessage();
                }
            } catch (RuntimeException e) {
                local = "ncclCommInitRank: " + e.getMessage();
            }
            if (!agree(over, local == null)) {
                if (c != 0) NcclAbi.commAbort(c);
                throw new NcclException(local != null ? local : "ncclCommInitRank failed on another rank (see its output)");
            }
            return c;
        }
    }

    /** One MIN allReduce of {@code ok} over {@code over}: true when it is true on every rank. */
    static boolean agree(Transport over, boolean ok) {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(JAVA_INT, 0, ok ? 1 : 0);
            over.allReduce(in, out, 1, DataType.INT, ReduceOp.MIN);
            return out.segment().get(JAVA_INT, 0) == 1;
        }
    }

    // ---- the collectives -------------------------------------------------------------------------

    private void broadcast(Buffer buffer, long count, DataType type, int root) {
        long bytes = type.bytes(count);
        run("ncclBroadcast", List.of(buffer), () -> {
            int rc = NcclAbi.broadcast(buffer.address(), buffer.address(), bytes, NcclTypes.UINT8, root, comm, streamHandle);
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclBroadcast(" + bytes + " bytes, root " + root + ")", rc, comm);
        });
    }

    private void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        run("ncclAllReduce", List.of(sendBuffer, recvBuffer), () -> {
            int rc = NcclAbi.allReduce(sendBuffer.address(), recvBuffer.address(), count, NcclTypes.dataType(type), NcclTypes.redOp(op), comm,
                    streamHandle);
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclAllReduce(" + count + " " + type + ", " + op + ")", rc, comm);
        });
    }

    private void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        run("ncclReduce", recvBuffer == null ? List.of(sendBuffer) : List.of(sendBuffer, recvBuffer), () -> {
            int rc = NcclAbi.reduce(sendBuffer.address(), recvBuffer == null ? 0 : recvBuffer.address(), count, NcclTypes.dataType(type),
                    NcclTypes.redOp(op), root, comm, streamHandle);
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclReduce(" + count + " " + type + ", " + op + ", root " + root + ")", rc, comm);
        });
    }

    private void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        long bytes = type.bytes(count);
        run("ncclAllGather", List.of(sendBuffer, recvBuffer), () -> {
            int rc = NcclAbi.allGather(sendBuffer.address(), recvBuffer.address(), bytes, NcclTypes.UINT8, comm, streamHandle);
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclAllGather(" + bytes + " bytes per rank)", rc, comm);
        });
    }

    private void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        run("gather (ncclSend/ncclRecv)", recvBuffer == null ? List.of(sendBuffer) : List.of(sendBuffer, recvBuffer),
                () -> enqueueGather(sendBuffer, recvBuffer, count, type, root, stream));
    }

    /** Gather as the root's own block copied and the others' received in one group, all on {@code on}. */
    private void enqueueGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root, CudaStream on) {
        long bytes = type.bytes(count), h = on.streamHandle();
        int me = rank(), n = size();
        if (me == root && bytes > 0 && sendBuffer.address() != recvBuffer.address() + (long) me * bytes) { // else in place
            Cuda.copyAsync(recvBuffer.address() + (long) me * bytes, sendBuffer.address(), bytes, on);
        }
        group("gather", () -> {
            if (me == root) {
                for (int r = 0; r < n; r++) {
                    if (r != me) p2p(false, recvBuffer.address() + (long) r * bytes, bytes, r, h);
                }
            } else {
                p2p(true, sendBuffer.address(), bytes, root, h);
            }
        });
    }

    private void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        run("scatter (ncclSend/ncclRecv)", sendBuffer == null ? List.of(recvBuffer) : List.of(sendBuffer, recvBuffer),
                () -> enqueueScatter(sendBuffer, recvBuffer, count, type, root, stream));
    }

    /** Scatter as the root's own block copied and the others' sent in one group, all on {@code on}. */
    private void enqueueScatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root, CudaStream on) {
        long bytes = type.bytes(count), h = on.streamHandle();
        int me = rank(), n = size();
        if (me == root && bytes > 0 && recvBuffer.address() != sendBuffer.address() + (long) me * bytes) { // else in place
            Cuda.copyAsync(recvBuffer.address(), sendBuffer.address() + (long) me * bytes, bytes, on);
        }
        group("scatter", () -> {
            if (me == root) {
                for (int r = 0; r < n; r++) {
                    if (r != me) p2p(true, sendBuffer.address() + (long) r * bytes, bytes, r, h);
                }
            } else {
                p2p(false, recvBuffer.address(), bytes, root, h);
            }
        });
    }

    private void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        run("allToAll (ncclSend/ncclRecv)", List.of(sendBuffer, recvBuffer), () -> enqueueAllToAll(sendBuffer, recvBuffer, count, type, stream));
    }

    /** All-to-all as the own block copied and one send and one receive per peer in one group, all on {@code on}. */
    private void enqueueAllToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, CudaStream on) {
        long bytes = type.bytes(count), h = on.streamHandle();
        int me = rank(), n = size();
        if (bytes > 0) {
            Cuda.copyAsync(recvBuffer.address() + (long) me * bytes, sendBuffer.address() + (long) me * bytes, bytes, on);
        }
        group("allToAll", () -> {
            for (int k = 1; k < n; k++) {
                int to = (me + k) % n, from = (me - k + n) % n;
                p2p(true, sendBuffer.address() + (long) to * bytes, bytes, to, h);
                p2p(false, recvBuffer.address() + (long) from * bytes, bytes, from, h);
            }
        });
    }

    // ---- vector collectives, reduce-scatter -----------------------------------------------------
    // The vector collectives as grouped ncclSend/ncclRecv (a rank's own block a device copy),
    // reduce-scatter of equal blocks as ncclReduceScatter, others as one grouped ncclReduce per block.

    private void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        int n = size();
        long[] sendAt = new long[n], sendBytes = none(n), recvAt = new long[n], recvBytes = none(n);
        if (rank() == root) {
            for (int r = 0; r < n; r++) {
                sendAt[r] = sendBuffer.address() + sendBlocks.byteOffset(r, type);
                sendBytes[r] = sendBlocks.bytes(r, type);
            }
        }
        recvAt[root] = recvBuffer.address();
        recvBytes[root] = type.bytes(recvCount);
        exchange("scatterV", sendBuffer == null ? List.of(recvBuffer) : List.of(sendBuffer, recvBuffer), sendAt, sendBytes, recvAt, recvBytes);
    }

    private void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        int n = size();
        long[] sendAt = new long[n], sendBytes = none(n), recvAt = new long[n], recvBytes = none(n);
        sendAt[root] = sendBuffer.address();
        sendBytes[root] = type.bytes(sendCount);
        if (rank() == root) {
            for (int r = 0; r < n; r++) {
                recvAt[r] = recvBuffer.address() + recvBlocks.byteOffset(r, type);
                recvBytes[r] = recvBlocks.bytes(r, type);
            }
        }
        exchange("gatherV", recvBuffer == null ? List.of(sendBuffer) : List.of(sendBuffer, recvBuffer), sendAt, sendBytes, recvAt, recvBytes);
    }

    private void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        int n = size();
        long[] sendAt = new long[n], sendBytes = new long[n], recvAt = new long[n], recvBytes = new long[n];
        for (int r = 0; r < n; r++) {
            sendAt[r] = sendBuffer.address();
            sendBytes[r] = type.bytes(sendCount);
            recvAt[r] = recvBuffer.address() + recvBlocks.byteOffset(r, type);
            recvBytes[r] = recvBlocks.bytes(r, type);
        }
        exchange("allGatherV", List.of(sendBuffer, recvBuffer), sendAt, sendBytes, recvAt, recvBytes);
    }

    private void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        int n = size();
        long[] sendAt = new long[n], sendBytes = new long[n], recvAt = new long[n], recvBytes = new long[n];
        for (int r = 0; r < n; r++) {
            sendAt[r] = sendBuffer.address() + sendBlocks.byteOffset(r, type);
            sendBytes[r] = sendBlocks.bytes(r, type);
            recvAt[r] = recvBuffer.address() + recvBlocks.byteOffset(r, type);
            recvBytes[r] = recvBlocks.bytes(r, type);
        }
        exchange("allToAllV", List.of(sendBuffer, recvBuffer), sendAt, sendBytes, recvAt, recvBytes);
    }

    /** {@code n} entries of -1: nothing to send or receive. */
    private static long[] none(int n) {
        long[] a = new long[n];
        java.util.Arrays.fill(a, -1);
        return a;
    }

    /**
     * One group of ncclSend/ncclRecv: {@code sendBytes[r]} bytes at {@code sendAt[r]} to rank
     * {@code r}, {@code recvBytes[r]} bytes into {@code recvAt[r]} from rank {@code r} (-1: none);
     * this rank's own block ({@code r == rank()}, when both sides have one) is a device copy.
     */
    private void exchange(String what, List<Buffer> buffers, long[] sendAt, long[] sendBytes, long[] recvAt, long[] recvBytes) {
        int me = rank(), n = size();
        run(what + " (ncclSend/ncclRecv)", buffers, () -> {
            if (sendBytes[me] > 0 && recvBytes[me] > 0) {
                Cuda.copyAsync(recvAt[me], sendAt[me], Math.min(sendBytes[me], recvBytes[me]), stream);
            }
            group(what, () -> {
                for (int k = 1; k < n; k++) {
                    int to = (me + k) % n, from = (me - k + n) % n;
                    if (sendBytes[to] >= 0) p2p(true, sendAt[to], sendBytes[to], to);
                    if (recvBytes[from] >= 0) p2p(false, recvAt[from], recvBytes[from], from);
                }
            });
        });
    }

    private void reduceScatterEqual(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        run("ncclReduceScatter", List.of(sendBuffer, recvBuffer), () -> {
            int rc = NcclAbi.reduceScatter(sendBuffer.address(), recvBuffer.address(), recvCount, NcclTypes.dataType(type), NcclTypes.redOp(op), comm,
                    streamHandle);
            if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclReduceScatter(" + recvCount + " " + type + " per rank, " + op + ")", rc, comm);
        });
    }

    private void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        if (equalAndContiguous(blocks)) {
            reduceScatterEqual(sendBuffer, recvBuffer, blocks.count(0), type, op);
            return;
        }
        int me = rank();
        run("reduceScatter (grouped ncclReduce)", List.of(sendBuffer, recvBuffer), () -> group("reduceScatter", () -> {
            for (int r = 0; r < size(); r++) {
                int rc = NcclAbi.reduce(sendBuffer.address() + blocks.byteOffset(r, type), r == me ? recvBuffer.address() : 0, blocks.count(r),
                        NcclTypes.dataType(type), NcclTypes.redOp(op), r, comm, streamHandle);
                if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclReduce(" + blocks.count(r) + " " + type + ", " + op + ", root " + r + ")", rc, comm);
            }
        }));
    }

    /** Every block of one count, block r at r times that count. */
    private static boolean equalAndContiguous(Blocks blocks) {
        long c = blocks.count(0);
        for (int r = 0; r < blocks.size(); r++) {
            if (blocks.count(r) != c || blocks.displacement(r) != c * r) return false;
        }
        return true;
    }

    private void p2p(boolean send, long address, long bytes, int peer) {
        p2p(send, address, bytes, peer, streamHandle);
    }

    private void p2p(boolean send, long address, long bytes, int peer, long onStream) {
        int rc = send ? NcclAbi.send(address, bytes, NcclTypes.UINT8, peer, comm, onStream)
                : NcclAbi.recv(address, bytes, NcclTypes.UINT8, peer, comm, onStream);
        if (rc != NcclTypes.SUCCESS) throw Nccl.error((send ? "ncclSend(" : "ncclRecv(") + bytes + " bytes, peer " + peer + ")", rc, comm);
    }

    /** ncclGroupStart, {@code body}, ncclGroupEnd (also after a failure inside, so that NCCL's group state stays balanced). */
    private void group(String what, Runnable body) {
        int rc = NcclAbi.groupStart();
        if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclGroupStart (" + what + ")", rc, comm);
        try {
            body.run();
        } catch (RuntimeException e) {
            try {
                NcclAbi.groupEnd();
            } catch (RuntimeException e2) {
                e.addSuppressed(e2);
            }
            throw e;
        }
        rc = NcclAbi.groupEnd();
        if (rc != NcclTypes.SUCCESS) throw Nccl.error("ncclGroupEnd (" + what + ")", rc, comm);
    }

    /**
     * Runs {@code enqueue} after the caller's earlier device work on {@code buffers} is complete,
     * on this communicator's GPU, then waits for the stream (polling NCCL's asynchronous error).
     */
    @SuppressWarnings("try") // the scope is held for its close (restoring the caller's context), not used
    private void run(String what, List<Buffer> buffers, Runnable enqueue) {
        // the caller's current context is kept, since the stream's GPU is made current below
        try (DeviceSupport.Scope ignored = DeviceSupport.get().preserveContext()) {
            device.makeCurrent();
            try {
                dev.ferry.spi.PendingDeviceWork.before(stream); // the caller's earlier device work, waited for on the GPU
                enqueue.run();
            } catch (NcclException e) {
                throw abort(what + ": " + e.getMessage(), e);
            } catch (CudaException e) {
                throw abort(what + ": a CUDA call failed: " + e.getMessage(), e);
            }
            await(what);
        }
    }

    /**
     * How long a blocking call spins on its event before it parks between queries: as long as
     * {@code cudaStreamSynchronize} spins in C for calls of up to this long. Parking after 2000
     * queries cost a call that outlasted them a sleep past its end (at least the kernel's timer
     * slack, some 50 µs): with it, reduceScatter of 16 MiB between four H200s took 85.7 µs and
     * allReduce of 256 MiB 1293 µs, against 72.9 and 1223 µs with this wait (NCCL from C: 80.0 and
     * 1208 µs; bench/results/2026-11-27-h200x4-planner-tables.md).
     */
    static final long SPIN_NANOS = 20_000_000L;

    private void await(String what) {
        long start = System.nanoTime();
        long pause = 0;
        try {
            done.record(stream);
            for (int spins = 1; !done.isDone(); spins++) {
                // NCCL's error, the clock and the deadline every 64th turn: the event query alone is the cheap part of a short wait
                if ((spins & 63) != 0) {
                    Thread.onSpinWait();
                    continue;
                }
                int async = NcclAbi.commGetAsyncError(comm);
                if (async != NcclTypes.SUCCESS && async != NcclTypes.IN_PROGRESS) {
                    throw abort(what + ": NCCL reported an asynchronous error: " + asyncText(async), null);
                }
                long waited = System.nanoTime() - start;
                if (timeoutNanos > 0 && waited > timeoutNanos) {
                    throw abort(what + " on " + this + " did not complete within " + (timeoutNanos / 1e9) + " s (ferry.nccl.timeout / ferry.timeout):"
                            + " a rank may not have called it, or called another collective; the NCCL communicator was aborted", null);
                }
                if (waited > SPIN_NANOS) {
                    pause = Math.min(Math.max(2 * pause, 20_000), 200_000);
                    LockSupport.parkNanos(pause);
                } else {
                    Thread.onSpinWait();
                }
            }
            int async = NcclAbi.commGetAsyncError(comm);
            if (async != NcclTypes.SUCCESS && async != NcclTypes.IN_PROGRESS) {
                throw abort(what + ": NCCL reported an asynchronous error: " + asyncText(async), null);
            }
        } catch (CudaException e) {
            throw abort(what + ": CUDA failed while waiting for the collective: " + e.getMessage(), e);
        }
    }

    private static String asyncText(int async) {
        if (async < 0) {
            int rc = -async - 1;
            return "ncclCommGetAsyncError itself failed with " + NcclTypes.resultName(rc);
        }
        return NcclTypes.resultName(async) + " \"" + NcclAbi.errorString(async) + "\". " + Nccl.advice(async);
    }

    /** Aborts the NCCL communicator (once) and returns the exception to throw. */
    private NcclException abort(String why, Throwable cause) {
        synchronized (this) {
            if (broken == null) {
                broken = why;
                try {
                    NcclAbi.commAbort(comm);
                } catch (RuntimeException e) {
                    why += " (ncclCommAbort failed too: " + e.getMessage() + ")";
                }
                NcclRuntime.record("aborted communicator", why);
            }
        }
        int rc = cause instanceof NcclException n ? n.result() : -1;
        return new NcclException(why, rc, cause);
    }

    @Override
    public void close() {
        List<RuntimeException> errors = new ArrayList<>();
        if (comm != 0) {
            try {
                if (broken == null) {
                    device.makeCurrent();
                    Nccl.check("ncclCommDestroy", NcclAbi.commDestroy(comm), 0);
                }
            } catch (RuntimeException e) {
                errors.add(e);
            }
            for (AutoCloseable c : new AutoCloseable[] {done, stream}) {
                try {
                    if (c != null) c.close();
                } catch (Exception e) {
                    errors.add(e instanceof RuntimeException r ? r : new RuntimeException(e));
                }
            }
            comm = 0;
        }
        if (!errors.isEmpty()) {
            RuntimeException first = errors.get(0);
            for (int i = 1; i < errors.size(); i++) first.addSuppressed(errors.get(i));
            throw first;
        }
    }

    @Override
    public String toString() {
        return "nccl[rank " + rank() + " of " + size() + (comm != 0 ? ", NCCL communicator made" : inactive != null ? ", off: " + inactive : "")
                + (broken != null ? ", aborted" : "") + "]";
    }

    // ---- the raw cudaStream_t of a JCuda stream ----------------------------------------------------

    private static final Method NATIVE_POINTER;

    static {
        Method m;
        try {
            m = jcuda.NativePointerObject.class.getDeclaredMethod("getNativePointer");
            m.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            m = null;
        }
        NATIVE_POINTER = m;
    }

    /** The CUstream (= cudaStream_t) handle of {@code s}, read from JCuda's object (no public accessor in ferry-cuda yet). */
    static long nativeHandle(CudaStream s) {
        if (NATIVE_POINTER == null) {
            throw new NcclException("cannot read the native handle of a JCuda stream (jcuda.NativePointerObject.getNativePointer)");
        }
        try {
            long h = (long) NATIVE_POINTER.invoke(s.handle());
            if (h == 0) throw new NcclException("the CUDA stream has a null handle");
            return h;
        } catch (ReflectiveOperationException e) {
            throw new NcclException("cannot read the native handle of a JCuda stream: " + e, e);
        }
    }
}
