// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import static dev.ferry.Communicator.ANY_SOURCE;
import static dev.ferry.Communicator.ANY_TAG;

import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.DeviceBuffer;
import dev.ferry.TruncationException;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.LargeMessages;
import dev.ferry.mpi.BindingTransport;
import dev.ferry.spi.PendingDuplicate;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Optional;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * A communicator over an {@link Intracomm} of Open MPI's Java bindings. Every buffer, host or
 * device, reaches MPI as a direct ByteBuffer over its address; device buffers only when the
 * library declared CUDA support.
 */
final class OmpiJavaTransport extends BindingTransport {
    // passed where MPI ignores a buffer (non-root sides of rooted collectives): mpi.jar needs a direct buffer
    private static final ByteBuffer INSIGNIFICANT = ByteBuffer.allocateDirect(8);

    private final OmpiRuntime runtime;
    private final Intracomm comm;
    private final boolean owned;

    OmpiJavaTransport(OmpiRuntime runtime, Intracomm comm, boolean owned) throws MPIException {
        super("ompi", comm.getRank(), comm.getSize(), runtime.tagUpperBound, Math.min(configuredMaxPieceBytes(), Integer.MAX_VALUE));
        this.runtime = runtime;
        this.comm = comm;
        this.owned = owned;
        comm.setErrhandler(MPI.ERRORS_RETURN);
    }

    /** A duplicate of MPI_COMM_WORLD. */
    static OmpiJavaTransport world(OmpiRuntime runtime) {
        try {
            return new OmpiJavaTransport(runtime, MPI.COMM_WORLD.dup(), true);
        } catch (MPIException e) {
            throw OmpiRuntime.error("MPI_Comm_dup(MPI_COMM_WORLD)", e);
        }
    }

    /** The wrapped communicator, for interop. */
    Intracomm intracomm() {
        return comm;
    }

    /** Open MPI's own reductions, but for those it may get wrong ({@link KnownBugWorkarounds#libraryReduces}). */
    @Override
    protected boolean mpiReduces(DataType type, ReduceOp op) {
        return KnownBugWorkarounds.libraryReduces(type, op) && super.mpiReduces(type, op);
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return runtime.cuda.cudaAware() && Cuda.isAvailable();
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
        if (!Cuda.isAvailable()) {
            return "CUDA is unavailable in this process (" + Cuda.unavailabilityCause().getMessage() + ")";
        }
        return runtime.version + " is not CUDA-aware (" + runtime.cuda.explanation() + "), so ompi never hands it device memory; "
                + "use -Dferry.backend=staged (auto picks it), or launch with a CUDA-aware Open MPI";
    }

    private static ByteBuffer bb(Region r) {
        if (r == null) {
            return INSIGNIFICANT;
        }
        // a view over native (possibly device) memory: MPI reads the address, Java never dereferences it
        return MemorySegment.ofAddress(r.address()).reinterpret(r.bytes()).asByteBuffer();
    }

    @FunctionalInterface
    private interface Call<T> {
        T run() throws MPIException;
    }

    private static <T> T call(String op, Call<T> c) {
        try {
            return c.run();
        } catch (MPIException e) {
            throw OmpiRuntime.error(op, e);
        }
    }

    private static Status status(mpi.Status s) throws MPIException {
        return new Status(s.getSource(), s.getTag(), s.getCount(MPI.BYTE));
    }

    @Override
    protected void mpiSend(Region buffer, int count, DataType type, int dest, int tag) {
        call("MPI_Send to rank " + dest + " tag " + tag, () -> {
            comm.send(bb(buffer), count, OmpiRuntime.type(type), dest, tag);
            return null;
        });
    }

    @Override
    protected Status mpiRecv(Region buffer, int count, DataType type, int source, int tag) {
        if (buffer != null) {
            return recvMatched(buffer, count, type, source, tag);
        }
        return call("MPI_Recv from rank " + source + " tag " + tag,
                () -> status(comm.recv(bb(buffer), count, OmpiRuntime.type(type), source == ANY_SOURCE ? MPI.ANY_SOURCE : source,
                        tag == ANY_TAG ? MPI.ANY_TAG : tag)));
    }

    @Override
    protected Request mpiIsend(Region buffer, int count, DataType type, int dest, int tag) {
        ByteBuffer b = bb(buffer);
        mpi.Request r = call("MPI_Isend to rank " + dest + " tag " + tag, () -> comm.iSend(b, count, OmpiRuntime.type(type), dest, tag));
        return new OmpiRequest(r, b, "MPI_Isend to rank " + dest, new Status(dest, tag, buffer.bytes()));
    }

    @Override
    protected Request mpiIrecv(Region buffer, int count, DataType type, int source, int tag) {
        ByteBuffer b = bb(buffer);
        mpi.Request r = call("MPI_Irecv from rank " + source + " tag " + tag, () -> comm.iRecv(b, count, OmpiRuntime.type(type),
                source == ANY_SOURCE ? MPI.ANY_SOURCE : source, tag == ANY_TAG ? MPI.ANY_TAG : tag));
        return new OmpiRequest(r, b, "MPI_Irecv from rank " + source, null, Status.cancelledReceive(source, tag));
    }

    /**
     * A blocking receive: the message is matched first (MPI_Mprobe) and then received (MPI_Mrecv).
     * Why: Open MPI's CUDA path (smcuda, 5.0.7 here) and its TCP transport never complete the
     * sender's side of a rendezvous message that was truncated at the receiver: the receiver gets
     * MPI_ERR_TRUNCATE and the sender waits in MPI_Send forever. A message longer than the buffer is
     * therefore received whole into memory of its own (of the buffer's kind); the buffer gets its
     * first bytes and the receive throws {@link TruncationException}.
     */
    private Status recvMatched(Region buffer, int count, DataType type, int source, int tag) {
        int src = source == ANY_SOURCE ? MPI.ANY_SOURCE : source, tg = tag == ANY_TAG ? MPI.ANY_TAG : tag;
        String what = "MPI_Mprobe/MPI_Mrecv from rank " + source + " tag " + tag;
        mpi.Message message = new mpi.Message();
        mpi.Status probed = call(what, () -> message.mProbe(src, tg, comm));
        int bytes = call(what, () -> probed.getCount(MPI.BYTE));
        if (bytes <= buffer.bytes()) {
            return call(what, () -> status(message.mRecv(bb(buffer), count, OmpiRuntime.type(type))));
        }
        int from = call(what, probed::getSource), withTag = call(what, probed::getTag);
        if (buffer.kind().needsCuda()) {
            try (DeviceBuffer whole = Cuda.allocate(Cuda.deviceOf(buffer.address()), bytes)) {
                call(what, () -> message.mRecv(bb(new Region(whole.address(), bytes, whole.kind())), bytes, MPI.BYTE));
                Cuda.copy(DeviceBuffer.wrap(whole.device(), buffer.address(), buffer.bytes()), whole, buffer.bytes());
            }
        } else {
            try (dev.ferry.HostBuffer whole = dev.ferry.HostBuffer.allocate(bytes)) {
                call(what, () -> message.mRecv(bb(new Region(whole.address(), bytes, whole.kind())), bytes, MPI.BYTE));
                MemorySegment.copy(whole.segment(), 0, MemorySegment.ofAddress(buffer.address()).reinterpret(buffer.bytes()), 0, buffer.bytes());
            }
        }
        throw new TruncationException(what + " (message of " + bytes + " bytes from rank " + from + " tag " + withTag
                + " is longer than the receive count of " + buffer.bytes() + " bytes)", MPI.ERR_TRUNCATE, MPI.ERR_TRUNCATE,
                "MPI_ERR_TRUNCATE: message truncated", null);
    }

    // ---- probing and matched messages: through the FFM binding -----------------------------------
    // On this libmpi with this communicator's C handle, as messages over the piece limit: a probe
    // must report byte counts over 2^31 (MPI_Get_elements_x), and mpi.jar's Status.getElementsX
    // crashes the JVM (Open MPI 4.1.4: a JNI NewObject of mpi.Count that does not match), while its
    // getCount is an int. The matched receive then uses the same MPI_Message handle.

    @Override
    protected Status mpiProbe(int source, int tag) {
        return dev.ferry.mpi.Probes.probe(cHandle(), source, tag);
    }

    @Override
    protected Optional<Status> mpiIprobe(int source, int tag) {
        return dev.ferry.mpi.Probes.iprobe(cHandle(), source, tag);
    }

    @Override
    protected Probed mpiMprobe(int source, int tag) {
        return dev.ferry.mpi.Probes.mprobe(cHandle(), source, tag);
    }

    @Override
    protected Optional<Probed> mpiImprobe(int source, int tag) {
        return dev.ferry.mpi.Probes.improbe(cHandle(), source, tag);
    }

    @Override
    protected Status mpiMrecv(Probed message, Region into) {
        return dev.ferry.mpi.Probes.mrecv((Long) message.handle(), message.status(), into, maxPieceBytes());
    }

    @Override
    protected Request mpiImrecv(Probed message, Region into) {
        return dev.ferry.mpi.Probes.imrecv((Long) message.handle(), message.status(), into, maxPieceBytes());
    }

    @Override
    protected TruncationException mpiTruncation(String what) {
        return new TruncationException(what, MPI.ERR_TRUNCATE, MPI.ERR_TRUNCATE, "MPI_ERR_TRUNCATE: message truncated", null);
    }

    // ---- messages over the piece limit: one MPI message each, through the FFM binding ----------
    // mpi.jar cannot carry them (its ByteBuffers stop below 2 GiB, its derived-type constructors
    // take int displacements), so they go through dev.ferry.mpi on the same loaded libmpi with
    // this communicator's C handle: same communicator, same matching order, one MPI message.

    private long cHandle() {
        Throwable missing = dev.ferry.mpi.Mpi.unavailabilityCause();
        if (missing != null) {
            throw new FerryException("probes and messages over ferry.maxPieceBytes (" + maxPieceBytes() + " bytes) need the FFM binding on this libmpi, "
                    + "which could not be made: " + missing.getMessage(), missing);
        }
        return CommHandle.of(comm);
    }

    @Override
    protected void mpiSendLarge(Region buffer, long count, DataType type, int dest, int tag) {
        LargeMessages.send(cHandle(), buffer, dest, tag, maxPieceBytes());
    }

    @Override
    protected Status mpiRecvLarge(Region buffer, long count, DataType type, int source, int tag) {
        return LargeMessages.recv(cHandle(), buffer, source, tag, maxPieceBytes());
    }

    @Override
    protected Request mpiIsendLarge(Region buffer, long count, DataType type, int dest, int tag) {
        return LargeMessages.isend(cHandle(), buffer, dest, tag, maxPieceBytes());
    }

    @Override
    protected Request mpiIrecvLarge(Region buffer, long count, DataType type, int source, int tag) {
        return LargeMessages.irecv(cHandle(), buffer, source, tag, maxPieceBytes());
    }

    @Override
    protected Status mpiSendRecv(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                 Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag) {
        // the receive is matched first (mpiRecv, recvMatched): a truncated message must not hang its sender
        return sendThenReceive(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag);
    }

    @Override
    protected void mpiBarrier() {
        call("MPI_Barrier", () -> {
            comm.barrier();
            return null;
        });
    }

    @Override
    protected void mpiBroadcast(Region buffer, int count, DataType type, int root) {
        call("MPI_Bcast from root " + root, () -> {
            comm.bcast(bb(buffer), count, OmpiRuntime.type(type), root);
            return null;
        });
    }

    @Override
    protected void mpiScatter(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        call("MPI_Scatter from root " + root, () -> {
            comm.scatter(bb(sendBuffer), count, OmpiRuntime.type(type), bb(recvBuffer), count, OmpiRuntime.type(type), root);
            return null;
        });
    }

    @Override
    protected void mpiGather(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        call("MPI_Gather to root " + root, () -> {
            comm.gather(bb(sendBuffer), count, OmpiRuntime.type(type), bb(recvBuffer), count, OmpiRuntime.type(type), root);
            return null;
        });
    }

    @Override
    protected void mpiAllGather(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        call("MPI_Allgather", () -> {
            comm.allGather(bb(sendBuffer), count, OmpiRuntime.type(type), bb(recvBuffer), count, OmpiRuntime.type(type));
            return null;
        });
    }

    @Override
    protected void mpiReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op, int root) {
        call("MPI_Reduce to root " + root, () -> {
            comm.reduce(bb(sendBuffer), bb(recvBuffer), count, OmpiRuntime.type(type), OmpiRuntime.op(op), root);
            return null;
        });
    }

    @Override
    protected void mpiAllReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        call("MPI_Allreduce", () -> {
            comm.allReduce(bb(sendBuffer), bb(recvBuffer), count, OmpiRuntime.type(type), OmpiRuntime.op(op));
            return null;
        });
    }

    @Override
    protected void mpiAllToAll(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        call("MPI_Alltoall", () -> {
            comm.allToAll(bb(sendBuffer), count, OmpiRuntime.type(type), bb(recvBuffer), count, OmpiRuntime.type(type));
            return null;
        });
    }

    // ---- vector collectives, reduce-scatter, prefix reductions -------------------------------

    /** mpi.jar reads the count arrays on every rank: zeros where MPI ignores them. */
    private int[] orZeros(int[] a) {
        return a != null ? a : new int[size()];
    }

    @Override
    protected void mpiScatterV(Region sendBuffer, int[] sendCounts, int[] displacements, Region recvBuffer, int recvCount, DataType type, int root) {
        call("MPI_Scatterv from root " + root, () -> {
            comm.scatterv(bb(sendBuffer), orZeros(sendCounts), orZeros(displacements), OmpiRuntime.type(type), bb(recvBuffer), recvCount,
                    OmpiRuntime.type(type), root);
            return null;
        });
    }

    @Override
    protected void mpiGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type, int root) {
        call("MPI_Gatherv to root " + root, () -> {
            comm.gatherv(bb(sendBuffer), sendCount, OmpiRuntime.type(type), bb(recvBuffer), orZeros(recvCounts), orZeros(displacements),
                    OmpiRuntime.type(type), root);
            return null;
        });
    }

    @Override
    protected void mpiAllGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type) {
        call("MPI_Allgatherv", () -> {
            comm.allGatherv(bb(sendBuffer), sendCount, OmpiRuntime.type(type), bb(recvBuffer), recvCounts, displacements, OmpiRuntime.type(type));
            return null;
        });
    }

    @Override
    protected void mpiAllToAllV(Region sendBuffer, int[] sendCounts, int[] sendDisplacements, Region recvBuffer, int[] recvCounts,
                                int[] recvDisplacements, DataType type) {
        call("MPI_Alltoallv", () -> {
            comm.allToAllv(bb(sendBuffer), sendCounts, sendDisplacements, OmpiRuntime.type(type), bb(recvBuffer), recvCounts, recvDisplacements,
                    OmpiRuntime.type(type));
            return null;
        });
    }

    @Override
    protected void mpiReduceScatterBlock(Region sendBuffer, Region recvBuffer, int recvCount, DataType type, ReduceOp op) {
        call("MPI_Reduce_scatter_block", () -> {
            comm.reduceScatterBlock(bb(sendBuffer), bb(recvBuffer), recvCount, OmpiRuntime.type(type), OmpiRuntime.op(op));
            return null;
        });
    }

    @Override
    protected void mpiReduceScatter(Region sendBuffer, Region recvBuffer, int[] recvCounts, DataType type, ReduceOp op) {
        call("MPI_Reduce_scatter", () -> {
            comm.reduceScatter(bb(sendBuffer), bb(recvBuffer), recvCounts, OmpiRuntime.type(type), OmpiRuntime.op(op));
            return null;
        });
    }

    @Override
    protected void mpiScan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        call("MPI_Scan", () -> {
            comm.scan(bb(sendBuffer), bb(recvBuffer), count, OmpiRuntime.type(type), OmpiRuntime.op(op));
            return null;
        });
    }

    @Override
    protected void mpiExscan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        call("MPI_Exscan", () -> {
            comm.exScan(bb(sendBuffer), bb(recvBuffer), count, OmpiRuntime.type(type), OmpiRuntime.op(op));
            return null;
        });
    }

    @Override
    protected BindingTransport mpiSplit(int color, int key) {
        return call("MPI_Comm_split", () -> {
            Intracomm c = comm.split(color < 0 ? MPI.UNDEFINED : color, key);
            return c.isNull() ? null : new OmpiJavaTransport(runtime, c, true);
        });
    }

    @Override
    protected BindingTransport mpiDuplicate() {
        return call("MPI_Comm_dup", () -> new OmpiJavaTransport(runtime, comm.dup(), true));
    }

    /** MPI_Comm_idup through mpi.jar (Open MPI returns the new communicator's handle at once; it is usable once the request completes). */
    @Override
    protected PendingDuplicate mpiStartDuplicate() {
        Intracomm c = call("MPI_Comm_idup", comm::iDup);
        return () -> call("MPI_Comm_idup", () -> {
            c.getRequest().waitFor();
            return new OmpiJavaTransport(runtime, c, true);
        });
    }

    @Override
    protected void mpiFree() {
        if (owned && !dev.ferry.spi.MpiLifecycle.isFinalized()) {
            call("MPI_Comm_free", () -> {
                comm.free();
                return null;
            });
        }
    }

    /** A request of mpi.jar; keeps its ByteBuffer reachable until completion. */
    private static final class OmpiRequest implements Request {
        private final mpi.Request request;
        private final String what;
        private final Status sendStatus; // null for receives
        private ByteBuffer keep;
        private Status result;

        private final Status ifCancelled; // a receive's status if cancelled; null for sends and matched receives

        OmpiRequest(mpi.Request request, ByteBuffer keep, String what, Status sendStatus) {
            this(request, keep, what, sendStatus, null);
        }

        OmpiRequest(mpi.Request request, ByteBuffer keep, String what, Status sendStatus, Status ifCancelled) {
            this.request = request;
            this.keep = keep;
            this.what = what;
            this.sendStatus = sendStatus;
            this.ifCancelled = ifCancelled;
        }

        /** MPI_Cancel, then MPI_Wait: true when the receive was cancelled (MPI_Test_cancelled). */
        @Override
        public synchronized boolean cancel() {
            if (result != null || ifCancelled == null) {
                return false;
            }
            call(what, () -> {
                request.cancel();
                return null;
            });
            mpi.Status s = call(what, request::waitStatus);
            if (call(what, s::isCancelled)) {
                keep = null;
                result = ifCancelled;
                return true;
            }
            result = complete(s);
            return false;
        }

        @Override
        public synchronized Status waitFor() {
            if (result == null) {
                mpi.Status s = call(what, request::waitStatus);
                result = complete(s);
            }
            return result;
        }

        @Override
        public synchronized Optional<Status> test() {
            if (result == null) {
                mpi.Status s = call(what, request::testStatus);
                if (s == null) {
                    return Optional.empty();
                }
                result = complete(s);
            }
            return Optional.of(result);
        }

        private Status complete(mpi.Status s) {
            keep = null;
            if (sendStatus != null) {
                return sendStatus;
            }
            try {
                return status(s);
            } catch (MPIException e) {
                throw new FerryException(what + ": cannot read the status", e);
            }
        }
    }
}
