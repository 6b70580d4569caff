package dev.ferry.nccl;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaDevice;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import dev.ferry.spi.ForwardingTransport;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.DeviceSupport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A decorator over a communicator of the launched MPI backend (the <em>inner</em> one: {@code ompi},
 * {@code mvapich}, or {@code staged} when the MPI is not CUDA-aware) that runs device collectives
 * on NCCL and delegates everything else to the inner communicator.
 *
 * <p><b>On NCCL</b>, when every buffer that matters on this rank is device memory
 * ({@link MemoryKind#DEVICE}) of this communicator's GPU: broadcast, allGather (any type, as bytes),
 * reduce and allReduce (types and operators of {@link NcclTypes}), gather, scatter and allToAll
 * (grouped ncclSend/ncclRecv; a rank's own block is a device copy), the vector collectives the same
 * way, reduceScatterBlock (ncclReduceScatter) and reduceScatter (grouped ncclReduce per block).
 * <b>On the inner communicator</b>: point-to-point (tags and wildcards), barrier, host and
 * managed buffers, device memory of another GPU, scan and exscan, and reductions NCCL lacks
 * ({@link NcclTypes#lacks}); the provider's probe details list these once.
 *
 * <p>Ranks agree: NCCL's collectives need every rank, so the choice between NCCL and the inner
 * backend must be the same on all ranks although each rank only sees its own buffers. By default
 * each such collective first agrees with one one-integer MIN allReduce over the inner communicator
 * (a few microseconds on host MPI). {@code -Dferry.nccl.uniformBuffers=true} skips it: the program
 * promises that all ranks pass the same kind of memory to each collective (as NCCL programs do).
 *
 * <p>Ordering and completion: before enqueueing, the front's {@link DeviceSupport#enter} makes sure the caller's
 * earlier device work is complete; the collective runs on this communicator's own CUDA stream, and
 * the call returns when a CUDA event recorded after it has completed. While waiting it polls
 * {@code ncclCommGetAsyncError}; an asynchronous error, a CUDA error or a wait longer than
 * {@code ferry.nccl.timeout} seconds (default: {@code ferry.timeout}; 0 = no limit) calls
 * {@code ncclCommAbort} and throws {@link NcclException}. The NCCL communicator is then unusable:
 * later device collectives throw, everything else still works on the inner communicator.
 *
 * <p>One NCCL communicator per Ferry communicator: the world's is made from a unique id made on
 * rank 0 and broadcast over the inner communicator; {@link #split} and {@link #duplicate} use
 * {@code ncclCommSplit} (NCCL 2.18 or newer), else a new unique id over the new inner communicator.
 */
public final class NcclTransport extends ForwardingTransport {
    /** ncclComm_t, 0 when NCCL is not used by this communicator. */
    private final long comm;
    /** Why NCCL is not used (null when it is). */
    private final String inactive;
    private final CudaDevice device;
    private final CudaStream stream;
    private final long streamHandle;
    private final CudaEvent done;
    private final boolean uniform;
    private final long timeoutNanos;
    /** NCCL is off because ranks share a GPU: a split or duplicate checks its own ranks again. */
    private boolean placementRefused;
    /** Why the NCCL communicator was aborted, or null. */
    private volatile String broken;

    private NcclTransport(Transport inner, long comm, String inactive, CudaDevice device) {
        super(inner);
        this.comm = comm;
        this.inactive = comm == 0 ? (inactive == null ? "no NCCL communicator" : inactive) : null;
        this.device = device;
        this.uniform = Settings.process().get(NcclSettings.UNIFORM_BUFFERS);
        this.timeoutNanos = timeoutNanos(Settings.process());
        CudaStream s = null;
        CudaEvent e = null;
        if (comm != 0) {
            try {
                s = Cuda.newStream(device.ordinal());
                e = Cuda.newEvent(device.ordinal(), false);
            } catch (RuntimeException ex) {
                if (s != null) s.close();
                NcclAbi.commAbort(comm);
                inner.close();
                throw ex;
            }
        }
        this.stream = s;
        this.done = e;
        this.streamHandle = s == null ? 0 : nativeHandle(s);
    }

    /** {@code ferry.nccl.timeout}, else {@code ferry.timeout}, in nanoseconds; 0: no limit. */
    static long timeoutNanos(Settings settings) {
        Double sec = settings.get(NcclSettings.TIMEOUT);
        double s = sec != null ? sec : settings.get(FerrySettings.TIMEOUT);
        return s > 0 ? (long) (s * 1e9) : 0;
    }

    // ---- creation (collective over the inner communicator) ------------------------------------

    /**
     * The world communicator over {@code inner} (taking ownership): checks the GPU placement, then
     * makes the NCCL communicator. When NCCL cannot be used (ranks share a GPU, NCCL's init fails on
     * some rank) the communicator delegates everything to {@code inner} and
     * {@link #ncclInactiveReason()} says why; identical on every rank.
     */
    static NcclTransport world(Transport inner) {
        NcclTransport c = placed(inner, Cuda.isAvailable() ? Cuda.defaultDevice() : null);
        NcclRuntime.placement(c.placementRefused ? c.inactive : null);
        return c;
    }

    /**
     * Checks the GPU placement over {@code inner} (one allGather), then makes the NCCL communicator
     * by a new unique id, or an inactive communicator when ranks of {@code inner} share a GPU.
     */
    private static NcclTransport placed(Transport inner, CudaDevice dev) {
        String refusal;
        try {
            refusal = GpuPlacement.refusal(GpuPlacement.exchange(inner, GpuPlacement.mine()));
        } catch (RuntimeException e) {
            inner.close();
            throw e;
        }
        if (refusal != null) {
            NcclTransport c = new NcclTransport(inner, 0, refusal, dev);
            c.placementRefused = true;
            return c;
        }
        return fresh(inner, dev);
    }

    /** A communicator over {@code inner} with an NCCL communicator from a new unique id; inactive when NCCL's init fails. */
    private static NcclTransport fresh(Transport inner, CudaDevice dev) {
        long c;
        try {
            c = initByUniqueId(inner, dev);
        } catch (NcclException e) {
            NcclRuntime.record("communicator creation", e.getMessage());
            return new NcclTransport(inner, 0, e.getMessage(), dev);
        } catch (RuntimeException e) {
            inner.close();
            throw e;
        }
        return new NcclTransport(inner, c, null, dev);
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

    // ---- what the lead may ask ------------------------------------------------------------------

    /** The inner communicator (point-to-point and everything NCCL does not carry). */
    public Transport inner() {
        return inner;
    }

    /** True when this communicator runs device collectives on NCCL. */
    public boolean ncclActive() {
        return comm != 0 && broken == null;
    }

    /** The NCCL transport under {@code c}; {@link dev.ferry.InvalidArgumentException} for another backend's communicator. */
    static NcclTransport of(Communicator c) {
        if (c instanceof dev.ferry.spi.CheckedCommunicator f && f.transport() instanceof NcclTransport n) {
            return n;
        }
        throw new dev.ferry.InvalidArgumentException((c == null ? "null" : c + " of backend " + c.backend()) + " is not a communicator of backend nccl");
    }

    /** Why device collectives do not run on NCCL here (shared GPU, init failure, aborted), or null. */
    public String ncclInactiveReason() {
        return inactive != null ? inactive : broken;
    }

    /** The GPU of this communicator (null without CUDA). */
    public CudaDevice device() {
        return device;
    }

    // ---- Transport: what NCCL does not carry goes to the inner transport (ForwardingTransport) ----

    @Override
    public String backend() {
        return "nccl";
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return comm != 0 || inner.supportsDeviceBuffers();
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
        return "NCCL is not used here (" + inactive + ") and the inner backend " + inner.backend() + " carries no device buffers";
    }

    // ---- collectives ---------------------------------------------------------------------------

    /** Device memory of this communicator's GPU (null, an insignificant buffer, counts as eligible). */
    private boolean mine(Buffer b) {
        return b == null || (b instanceof DeviceBuffer d && d.kind() == MemoryKind.DEVICE && device != null && d.device() == device.ordinal());
    }

    /** Whether this collective runs on NCCL: the same answer on every rank (see the class comment). */
    private boolean onNccl(String op, DataType type, ReduceOp redOp, Buffer a, Buffer b) {
        if (comm == 0) {
            return false;
        }
        boolean local = broken == null && mine(a) && mine(b);
        if (redOp != null) {
            var lack = NcclTypes.lacks(type, redOp);
            if (lack.isPresent()) {
                NcclRuntime.record(op + " " + type + " " + redOp, lack.get() + "; delegated to " + inner.backend());
                local = false;
            }
        }
        boolean all = uniform ? local : agree(inner, local);
        if (!all && local && !uniform) {
            NcclRuntime.record(op + " with mixed memory", "some rank passed host, managed or other-GPU memory; delegated to " + inner.backend());
        }
        return all;
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        if (!onNccl("broadcast", type, null, buffer, null)) {
            inner.broadcast(buffer, count, type, root);
            return;
        }
        long bytes = type.bytes(count);
        run("ncclBroadcast", List.of(buffer), () ->
                Nccl.check("ncclBroadcast(" + bytes + " bytes, root " + root + ")",
                        NcclAbi.broadcast(buffer.address(), buffer.address(), bytes, NcclTypes.UINT8, root, comm, streamHandle), comm));
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        if (!onNccl("allReduce", type, op, sendBuffer, recvBuffer)) {
            inner.allReduce(sendBuffer, recvBuffer, count, type, op);
            return;
        }
        run("ncclAllReduce", List.of(sendBuffer, recvBuffer), () ->
                Nccl.check("ncclAllReduce(" + count + " " + type + ", " + op + ")", NcclAbi.allReduce(sendBuffer.address(), recvBuffer.address(),
                        count, NcclTypes.dataType(type), NcclTypes.redOp(op), comm, streamHandle), comm));
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        if (!onNccl("reduce", type, op, sendBuffer, recvBuffer)) {
            inner.reduce(sendBuffer, recvBuffer, count, type, op, root);
            return;
        }
        run("ncclReduce", recvBuffer == null ? List.of(sendBuffer) : List.of(sendBuffer, recvBuffer), () ->
                Nccl.check("ncclReduce(" + count + " " + type + ", " + op + ", root " + root + ")", NcclAbi.reduce(sendBuffer.address(),
                        recvBuffer == null ? 0 : recvBuffer.address(), count, NcclTypes.dataType(type), NcclTypes.redOp(op), root, comm,
                        streamHandle), comm));
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        if (!onNccl("allGather", type, null, sendBuffer, recvBuffer)) {
            inner.allGather(sendBuffer, recvBuffer, count, type);
            return;
        }
        long bytes = type.bytes(count);
        run("ncclAllGather", List.of(sendBuffer, recvBuffer), () ->
                Nccl.check("ncclAllGather(" + bytes + " bytes per rank)",
                        NcclAbi.allGather(sendBuffer.address(), recvBuffer.address(), bytes, NcclTypes.UINT8, comm, streamHandle), comm));
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        if (!onNccl("gather", type, null, sendBuffer, recvBuffer)) {
            inner.gather(sendBuffer, recvBuffer, count, type, root);
            return;
        }
        long bytes = type.bytes(count);
        int me = rank(), n = size();
        run("gather (ncclSend/ncclRecv)", recvBuffer == null ? List.of(sendBuffer) : List.of(sendBuffer, recvBuffer), () -> {
            if (me == root && bytes > 0) {
                Cuda.copyAsync(recvBuffer.address() + (long) me * bytes, sendBuffer.address(), bytes, stream);
            }
            group("gather", () -> {
                if (me == root) {
                    for (int r = 0; r < n; r++) {
                        if (r != me) p2p(false, recvBuffer.address() + (long) r * bytes, bytes, r);
                    }
                } else {
                    p2p(true, sendBuffer.address(), bytes, root);
                }
            });
        });
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        if (!onNccl("scatter", type, null, sendBuffer, recvBuffer)) {
            inner.scatter(sendBuffer, recvBuffer, count, type, root);
            return;
        }
        long bytes = type.bytes(count);
        int me = rank(), n = size();
        run("scatter (ncclSend/ncclRecv)", sendBuffer == null ? List.of(recvBuffer) : List.of(sendBuffer, recvBuffer), () -> {
            if (me == root && bytes > 0) {
                Cuda.copyAsync(recvBuffer.address(), sendBuffer.address() + (long) me * bytes, bytes, stream);
            }
            group("scatter", () -> {
                if (me == root) {
                    for (int r = 0; r < n; r++) {
                        if (r != me) p2p(true, sendBuffer.address() + (long) r * bytes, bytes, r);
                    }
                } else {
                    p2p(false, recvBuffer.address(), bytes, root);
                }
            });
        });
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        if (!onNccl("allToAll", type, null, sendBuffer, recvBuffer)) {
            inner.allToAll(sendBuffer, recvBuffer, count, type);
            return;
        }
        long bytes = type.bytes(count);
        int me = rank(), n = size();
        run("allToAll (ncclSend/ncclRecv)", List.of(sendBuffer, recvBuffer), () -> {
            if (bytes > 0) {
                Cuda.copyAsync(recvBuffer.address() + (long) me * bytes, sendBuffer.address() + (long) me * bytes, bytes, stream);
            }
            group("allToAll", () -> {
                for (int k = 1; k < n; k++) {
                    int to = (me + k) % n, from = (me - k + n) % n;
                    p2p(true, sendBuffer.address() + (long) to * bytes, bytes, to);
                    p2p(false, recvBuffer.address() + (long) from * bytes, bytes, from);
                }
            });
        });
    }

    // ---- vector collectives, reduce-scatter, prefix reductions -----------------------------------
    // On NCCL where the other device collectives are: the vector collectives as grouped
    // ncclSend/ncclRecv (a rank's own block a device copy), reduceScatterBlock as ncclReduceScatter,
    // reduceScatter as one grouped ncclReduce per block; scan and exscan (NCCL has neither) and
    // everything else on the inner communicator.

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        if (!onNccl("scatterV", type, null, sendBuffer, recvBuffer)) {
            inner.scatterV(sendBuffer, sendBlocks, recvBuffer, recvCount, type, root);
            return;
        }
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

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        if (!onNccl("gatherV", type, null, sendBuffer, recvBuffer)) {
            inner.gatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type, root);
            return;
        }
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

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        if (!onNccl("allGatherV", type, null, sendBuffer, recvBuffer)) {
            inner.allGatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type);
            return;
        }
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

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        if (!onNccl("allToAllV", type, null, sendBuffer, recvBuffer)) {
            inner.allToAllV(sendBuffer, sendBlocks, recvBuffer, recvBlocks, type);
            return;
        }
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

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        if (!onNccl("reduceScatterBlock", type, op, sendBuffer, recvBuffer)) {
            inner.reduceScatterBlock(sendBuffer, recvBuffer, recvCount, type, op);
            return;
        }
        run("ncclReduceScatter", List.of(sendBuffer, recvBuffer), () ->
                Nccl.check("ncclReduceScatter(" + recvCount + " " + type + " per rank, " + op + ")", NcclAbi.reduceScatter(sendBuffer.address(),
                        recvBuffer.address(), recvCount, NcclTypes.dataType(type), NcclTypes.redOp(op), comm, streamHandle), comm));
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        if (!onNccl("reduceScatter", type, op, sendBuffer, recvBuffer)) {
            inner.reduceScatter(sendBuffer, recvBuffer, blocks, type, op);
            return;
        }
        int me = rank();
        run("reduceScatter (grouped ncclReduce)", List.of(sendBuffer, recvBuffer), () -> group("reduceScatter", () -> {
            for (int r = 0; r < size(); r++) {
                Nccl.check("ncclReduce(" + blocks.count(r) + " " + type + ", " + op + ", root " + r + ")", NcclAbi.reduce(
                        sendBuffer.address() + blocks.byteOffset(r, type), r == me ? recvBuffer.address() : 0, blocks.count(r),
                        NcclTypes.dataType(type), NcclTypes.redOp(op), r, comm, streamHandle), comm);
            }
        }));
    }

    private void p2p(boolean send, long address, long bytes, int peer) {
        int rc = send ? NcclAbi.send(address, bytes, NcclTypes.UINT8, peer, comm, streamHandle)
                : NcclAbi.recv(address, bytes, NcclTypes.UINT8, peer, comm, streamHandle);
        Nccl.check((send ? "ncclSend(" : "ncclRecv(") + bytes + " bytes, peer " + peer + ")", rc, comm);
    }

    /** ncclGroupStart, {@code body}, ncclGroupEnd (also after a failure inside, so that NCCL's group state stays balanced). */
    private void group(String what, Runnable body) {
        Nccl.check("ncclGroupStart (" + what + ")", NcclAbi.groupStart(), comm);
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
        Nccl.check("ncclGroupEnd (" + what + ")", NcclAbi.groupEnd(), comm);
    }

    /**
     * Runs {@code enqueue} after the caller's earlier device work on {@code buffers} is complete,
     * on this communicator's GPU, then waits for the stream (polling NCCL's asynchronous error).
     */
    @SuppressWarnings("try") // the scope is held for its close (restoring the caller's context), not used
    private void run(String what, List<Buffer> buffers, Runnable enqueue) {
        // the front (CheckedCommunicator) has already ordered this call after the caller's device work;
        // here only the caller's current context is kept, since the stream's GPU is made current below
        try (DeviceSupport.Scope ignored = DeviceSupport.get().preserveContext()) {
            device.makeCurrent();
            try {
                enqueue.run();
            } catch (NcclException e) {
                throw abort(what + ": " + e.getMessage(), e);
            } catch (CudaException e) {
                throw abort(what + ": a CUDA call failed: " + e.getMessage(), e);
            }
            await(what);
        }
    }

    private void await(String what) {
        long start = System.nanoTime();
        int spins = 0;
        try {
            done.record(stream);
            while (!done.isDone()) {
                int async = NcclAbi.commGetAsyncError(comm);
                if (async != NcclTypes.SUCCESS && async != NcclTypes.IN_PROGRESS) {
                    throw abort(what + ": NCCL reported an asynchronous error: " + asyncText(async), null);
                }
                long waited = System.nanoTime() - start;
                if (timeoutNanos > 0 && waited > timeoutNanos) {
                    throw abort(what + " on " + this + " did not complete within " + (timeoutNanos / 1e9) + " s (ferry.nccl.timeout / ferry.timeout):"
                            + " a rank may not have called it, or called another collective; the NCCL communicator was aborted", null);
                }
                if (++spins > 2000) {
                    LockSupport.parkNanos(spins > 20000 ? 200_000 : 20_000);
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

    // ---- communicators -------------------------------------------------------------------------

    @Override
    public Transport split(int color, int key) {
        Transport c = inner.split(color, key);
        return child(c, color < 0 ? NcclTypes.SPLIT_NOCOLOR : color, key, "split(" + color + ", " + key + ")");
    }

    @Override
    public Transport duplicate() {
        return child(inner.duplicate(), 0, rank(), "duplicate");
    }

    /** The NCCL side of a split/duplicate: every rank of this communicator calls it (c is null where color < 0). */
    private Transport child(Transport c, int color, int key, String what) {
        if (comm == 0 && placementRefused) {
            // NCCL's rule is per communicator: the new one may have one GPU per rank (e.g. split by GPU)
            // (collective over c only: ranks outside every new communicator take no part)
            return c == null ? null : placed(c, device);
        }
        if (comm == 0 || broken != null) {
            return c == null ? null : new NcclTransport(c, 0, "the parent communicator does not use NCCL: " + ncclInactiveReason(), device);
        }
        if (!NcclAbi.hasSplit()) {
            return c == null ? null : fresh(c, device);
        }
        long child = 0;
        String local = null;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            device.makeCurrent();
            int rc = NcclAbi.commSplit(comm, color, key, out);
            if (rc == NcclTypes.SUCCESS) {
                child = out.get(JAVA_LONG, 0);
                if (c != null && child != 0 && (NcclAbi.commUserRank(child) != c.rank() || NcclAbi.commCount(child) != c.size())) {
                    local = "ncclCommSplit gave rank " + NcclAbi.commUserRank(child) + " of " + NcclAbi.commCount(child) + " where "
                            + inner.backend() + " gave rank " + c.rank() + " of " + c.size();
                }
                if (c != null && child == 0 && local == null) {
                    local = "ncclCommSplit gave no communicator for color " + color;
                }
            } else {
                local = Nccl.error("ncclCommSplit (" + what + ")", rc, comm).getMessage();
            }
        } catch (RuntimeException e) {
            local = "ncclCommSplit (" + what + "): " + e.getMessage();
        }
        if (!agree(inner, local == null)) {
            if (child != 0) NcclAbi.commAbort(child);
            String why = local != null ? local : "ncclCommSplit failed on another rank (see its output)";
            NcclRuntime.record(what, why);
            return c == null ? null : new NcclTransport(c, 0, why, device);
        }
        if (c == null) {
            if (child != 0) NcclAbi.commDestroy(child);
            return null;
        }
        return new NcclTransport(c, child, null, device);
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
                    c.close();
                } catch (Exception e) {
                    errors.add(e instanceof RuntimeException r ? r : new RuntimeException(e));
                }
            }
        }
        try {
            inner.close();
        } catch (RuntimeException e) {
            errors.add(e);
        }
        if (!errors.isEmpty()) {
            RuntimeException first = errors.get(0);
            for (int i = 1; i < errors.size(); i++) first.addSuppressed(errors.get(i));
            throw first;
        }
    }

    @Override
    public String toString() {
        return "NcclTransport[rank " + rank() + " of " + size() + ", inner "  + inner.backend() + (comm != 0 ? ", NCCL" : ", NCCL off: " + inactive)
                + (broken != null ? ", aborted" : "") + "}";
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
