package dev.ferry.mvapich;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.BindingCommunicator;
import dev.ferry.spi.MpiLifecycle;
import java.util.Optional;

/**
 * A communicator over an MPICH-ABI {@code MPI_Comm} handle, every operation one FFM downcall
 * through {@link MpichAbi}. Host and device buffers reach MPI as raw addresses; device buffers
 * only when the library declared CUDA support ({@link GpuSupport}). Every return code is checked;
 * the error handler of every communicator is MPI_ERRORS_RETURN, so MPI errors become exceptions and
 * the communicator stays usable after a truncated receive.
 */
final class MvapichCommunicator extends BindingCommunicator {
    private final MvapichRuntime runtime;
    private final int comm;
    private final boolean owned;

    MvapichCommunicator(MvapichRuntime runtime, int comm, boolean owned) {
        this(runtime, comm, owned, rankOf(comm), sizeOf(comm));
    }

    private MvapichCommunicator(MvapichRuntime runtime, int comm, boolean owned, int rank, int size) {
        super("mvapich", rank, size, runtime.tagUpperBound, Math.min(configuredMaxPieceBytes(), Integer.MAX_VALUE));
        this.runtime = runtime;
        this.comm = comm;
        this.owned = owned;
        MvapichRuntime.check("MPI_Comm_set_errhandler(MPI_ERRORS_RETURN)", MpichAbi.commSetErrhandler(comm, MpichConstants.MPI_ERRORS_RETURN));
    }

    private static int rankOf(int comm) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        MvapichRuntime.check("MPI_Comm_rank", MpichAbi.commRank(comm, s.int0));
        return s.int0();
    }

    private static int sizeOf(int comm) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        MvapichRuntime.check("MPI_Comm_size", MpichAbi.commSize(comm, s.int0));
        return s.int0();
    }

    /** The MPI_Comm handle, for interop. */
    int handle() {
        return comm;
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return runtime.takesDeviceBuffers();
    }

    @Override
    protected String deviceBuffersUnsupportedReason() {
        if (!Cuda.isAvailable()) {
            return "CUDA is unavailable in this process (" + Cuda.unavailabilityCause().getMessage() + ")";
        }
        if (runtime.sharedGpu != null) {
            return runtime.sharedGpu;
        }
        return runtime.version.name() + " is not CUDA-aware (" + runtime.cuda.explanation() + "), so mvapich never hands it device memory; "
                + "use -Dferry.backend=staged (auto picks it), or launch with a CUDA-aware MPICH-family MPI "
                + "(MVAPICH2-GDR with MV2_USE_CUDA=1, MPICH built --with-cuda)";
    }

    private static int source(int s) {
        return s == ANY_SOURCE ? MpichConstants.MPI_ANY_SOURCE : s;
    }

    private static int tag(int t) {
        return t == ANY_TAG ? MpichConstants.MPI_ANY_TAG : t;
    }

    /**
     * Point-to-point messages travel as MPI_BYTE: Ferry itself checks that a receive got whole
     * elements (BindingCommunicator), and MPICH 4.0's GPU unpack asserts (aborting the job)
     * instead of returning an error when a device receive gets a partial element. Regions are
     * at most maxPieceBytes (below 2 GiB), so the byte count fits in an int.
     */
    private static int bytes(Region r) {
        return Math.toIntExact(r.bytes());
    }

    private static long address(Region r) {
        return r == null ? 0L : r.address();
    }

    /** The status in this thread's scratch, with the byte count from MPI_Get_count(MPI_BYTE). */
    private static Status status(MpichAbi.Scratch s, String op) {
        MvapichRuntime.check(op + ": MPI_Get_count", MpichAbi.getCount(s.status, MpichConstants.MPI_BYTE, s.int1));
        return new Status(s.source(), s.tag(), s.int1());
    }

    // ---- point to point ----------------------------------------------------------------------

    @Override
    protected void mpiSend(Region buffer, int count, DataType type, int dest, int tag) {
        int rc = MpichAbi.send(buffer.address(), bytes(buffer), MpichConstants.MPI_BYTE, dest, tag, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Send of " + count + " " + type + " to rank " + dest + " tag " + tag, rc);
        }
    }

    @Override
    protected Status mpiRecv(Region buffer, int count, DataType type, int source, int tag) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        int rc = MpichAbi.recv(buffer.address(), bytes(buffer), MpichConstants.MPI_BYTE, source(source), tag(tag), comm, s.status);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Recv of " + count + " " + type + " from rank " + source + " tag " + tag, rc);
        }
        return status(s, "MPI_Recv");
    }

    @Override
    protected Request mpiIsend(Region buffer, int count, DataType type, int dest, int tag) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        int rc = MpichAbi.isend(buffer.address(), bytes(buffer), MpichConstants.MPI_BYTE, dest, tag, comm, s.request);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Isend of " + count + " " + type + " to rank " + dest + " tag " + tag, rc);
        }
        return new MvapichRequest(s.request(), dest, tag, new Status(dest, tag, buffer.bytes()));
    }

    @Override
    protected Request mpiIrecv(Region buffer, int count, DataType type, int source, int tag) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        int rc = MpichAbi.irecv(buffer.address(), bytes(buffer), MpichConstants.MPI_BYTE, source(source), tag(tag), comm, s.request);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Irecv of " + count + " " + type + " from rank " + source + " tag " + tag, rc);
        }
        return new MvapichRequest(s.request(), source, tag, null);
    }

    @Override
    protected Status mpiSendRecv(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                 Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag) {
        if (runtime.splitSendRecv != null) { // ch3's MPI_Sendrecv may return without sending (SplitSendRecv)
            return status(SplitSendRecv.sendRecv(sendBuffer.address(), bytes(sendBuffer), dest, sendTag, recvBuffer.address(), bytes(recvBuffer),
                    source(source), tag(recvTag), comm, "sendRecv to rank " + dest + " tag " + sendTag + ", from rank " + source + " tag " + recvTag), "sendRecv");
        }
        MpichAbi.Scratch s = MpichAbi.scratch();
        int rc = MpichAbi.sendrecv(sendBuffer.address(), bytes(sendBuffer), MpichConstants.MPI_BYTE, dest, sendTag,
                recvBuffer.address(), bytes(recvBuffer), MpichConstants.MPI_BYTE, source(source), tag(recvTag), comm, s.status);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Sendrecv to rank " + dest + " tag " + sendTag + ", from rank " + source + " tag " + recvTag, rc);
        }
        return status(s, "MPI_Sendrecv");
    }

    // ---- collectives -------------------------------------------------------------------------

    @Override
    protected void mpiBarrier() {
        MvapichRuntime.check("MPI_Barrier", MpichAbi.barrier(comm));
    }

    @Override
    protected void mpiBroadcast(Region buffer, int count, DataType type, int root) {
        int rc = MpichAbi.bcast(buffer.address(), count, MvapichRuntime.type(type), root, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Bcast of " + count + " " + type + " from root " + root, rc);
        }
    }

    @Override
    protected void mpiScatter(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        int t = MvapichRuntime.type(type);
        int rc = MpichAbi.scatter(address(sendBuffer), count, t, recvBuffer.address(), count, t, root, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Scatter of " + count + " " + type + " from root " + root, rc);
        }
    }

    @Override
    protected void mpiGather(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        int t = MvapichRuntime.type(type);
        int rc = MpichAbi.gather(sendBuffer.address(), count, t, address(recvBuffer), count, t, root, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Gather of " + count + " " + type + " to root " + root, rc);
        }
    }

    @Override
    protected void mpiAllGather(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        int t = MvapichRuntime.type(type);
        int rc = MpichAbi.allgather(sendBuffer.address(), count, t, recvBuffer.address(), count, t, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Allgather of " + count + " " + type, rc);
        }
    }

    @Override
    protected void mpiReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op, int root) {
        if (runtime.deviceReductionStaging != null && DeviceReductionStaging.involvesDevice(sendBuffer, recvBuffer)) {
            DeviceReductionStaging.onHost(sendBuffer, recvBuffer, (in, out) -> mpiReduce(in, out, count, type, op, root));
            return;
        }
        int rc = MpichAbi.reduce(sendBuffer.address(), address(recvBuffer), count, MvapichRuntime.type(type), MvapichRuntime.op(op), root, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Reduce (" + op + ") of " + count + " " + type + " to root " + root, rc);
        }
    }

    @Override
    protected void mpiAllReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        if (runtime.deviceReductionStaging != null && DeviceReductionStaging.involvesDevice(sendBuffer, recvBuffer)) {
            DeviceReductionStaging.onHost(sendBuffer, recvBuffer, (in, out) -> mpiAllReduce(in, out, count, type, op));
            return;
        }
        int rc = MpichAbi.allreduce(sendBuffer.address(), recvBuffer.address(), count, MvapichRuntime.type(type), MvapichRuntime.op(op), comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Allreduce (" + op + ") of " + count + " " + type, rc);
        }
    }

    @Override
    protected void mpiAllToAll(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        int t = MvapichRuntime.type(type);
        int rc = MpichAbi.alltoall(sendBuffer.address(), count, t, recvBuffer.address(), count, t, comm);
        if (rc != 0) {
            throw MvapichRuntime.error("MPI_Alltoall of " + count + " " + type, rc);
        }
    }

    // ---- communicators -----------------------------------------------------------------------

    @Override
    protected BindingCommunicator mpiSplit(int color, int key) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        MvapichRuntime.check("MPI_Comm_split(color " + color + ", key " + key + ")",
                MpichAbi.commSplit(comm, color < 0 ? MpichConstants.MPI_UNDEFINED : color, key, s.int0));
        int c = s.int0();
        return c == MpichConstants.MPI_COMM_NULL ? null : new MvapichCommunicator(runtime, c, true);
    }

    @Override
    protected BindingCommunicator mpiDuplicate() {
        MpichAbi.Scratch s = MpichAbi.scratch();
        MvapichRuntime.check("MPI_Comm_dup", MpichAbi.commDup(comm, s.int0));
        return new MvapichCommunicator(runtime, s.int0(), true);
    }

    @Override
    protected void mpiFree() {
        if (owned && !MpiLifecycle.isFinalized()) {
            MpichAbi.Scratch s = MpichAbi.scratch();
            s.int0.set(JAVA_INT, 0, comm);
            MvapichRuntime.check("MPI_Comm_free", MpichAbi.commFree(s.int0));
        }
    }

    /**
     * A request of MPI: the {@code int} handle, completed by MPI_Wait or MPI_Test through this
     * thread's scratch. After an error the request is not retried: the same exception is thrown
     * again, so that a freed handle is never handed to MPI twice.
     */
    private static final class MvapichRequest implements Request {
        private final int peer;
        private final int peerTag;
        private final Status sendStatus; // null for receives
        private int handle;
        private Status result;
        private RuntimeException failure;

        MvapichRequest(int handle, int peer, int peerTag, Status sendStatus) {
            this.handle = handle;
            this.peer = peer;
            this.peerTag = peerTag;
            this.sendStatus = sendStatus;
        }

        /** For messages only: built when something failed, not per request. */
        private String what() {
            return sendStatus != null ? "MPI_Isend to rank " + peer + " tag " + peerTag
                    : "MPI_Irecv from rank " + (peer == ANY_SOURCE ? "ANY_SOURCE" : peer) + " tag " + (peerTag == ANY_TAG ? "ANY_TAG" : peerTag);
        }

        @Override
        public synchronized Status waitFor() {
            if (result == null && failure == null) {
                MpichAbi.Scratch s = MpichAbi.scratch();
                s.request(handle);
                int rc = MpichAbi.await(s.request, s.status);
                complete(s, rc);
            }
            if (failure != null) {
                throw failure;
            }
            return result;
        }

        @Override
        public synchronized Optional<Status> test() {
            if (result == null && failure == null) {
                MpichAbi.Scratch s = MpichAbi.scratch();
                s.request(handle);
                s.int0.set(JAVA_INT, 0, 0);
                int rc = MpichAbi.test(s.request, s.int0, s.status);
                if (rc == MpichConstants.MPI_SUCCESS && s.int0() == 0) {
                    handle = s.request();
                    return Optional.empty();
                }
                complete(s, rc);
            }
            if (failure != null) {
                throw failure;
            }
            return Optional.of(result);
        }

        private void complete(MpichAbi.Scratch s, int rc) {
            handle = s.request();
            if (rc != MpichConstants.MPI_SUCCESS) {
                failure = MvapichRuntime.error(what(), rc);
                return;
            }
            try {
                result = sendStatus != null ? sendStatus : status(s, "MPI_Wait/MPI_Test");
            } catch (RuntimeException e) {
                failure = e instanceof FerryException ? e : new FerryException(what() + ": cannot read the status", e);
            }
        }
    }
}
