// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.FfmTransport;

/**
 * A communicator over an MPICH-ABI {@code MPI_Comm} handle, every operation one FFM downcall
 * through the shared binding ({@link dev.ferry.mpi.Mpi}, see {@link FfmTransport}). Host and
 * device buffers reach MPI as raw addresses; device buffers only when the library declared CUDA
 * support ({@link GpuSupport}); device reductions, gathers and scatters go through host copies
 * where the library needs it ({@link DeviceReductionStaging}).
 */
final class MvapichTransport extends FfmTransport {
    private final MvapichRuntime runtime;

    MvapichTransport(MvapichRuntime runtime, int comm, boolean owned) {
        super("mvapich", comm, owned, runtime.tagUpperBound);
        this.runtime = runtime;
    }

    @Override
    protected FfmTransport create(long newComm) {
        return new MvapichTransport(runtime, (int) newComm, true);
    }

    /** The MPI_Comm handle, for interop. */
    int intHandle() {
        return (int) comm;
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return runtime.takesDeviceBuffers();
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
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

    /**
     * MPICH 4.0.2 compares MPI_UINT8_T as signed in MAX and MIN (MAX of 143 and 7 gives 7): Ferry
     * reduces BYTE MAX and MIN itself on this family, so that BYTE is unsigned as documented.
     */
    @Override
    protected boolean mpiReduces(DataType type, ReduceOp op) {
        if (type == DataType.BYTE && (op == ReduceOp.MAX || op == ReduceOp.MIN)) {
            return false;
        }
        return super.mpiReduces(type, op);
    }

    @Override
    protected void mpiReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op, int root) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiReduce(in, out, count, type, op, root));
    }

    @Override
    protected void mpiAllReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiAllReduce(in, out, count, type, op));
    }

    @Override
    protected void mpiReduceScatterBlock(Region sendBuffer, Region recvBuffer, int recvCount, DataType type, ReduceOp op) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiReduceScatterBlock(in, out, recvCount, type, op));
    }

    @Override
    protected void mpiReduceScatter(Region sendBuffer, Region recvBuffer, int[] recvCounts, DataType type, ReduceOp op) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiReduceScatter(in, out, recvCounts, type, op));
    }

    @Override
    protected void mpiScan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiScan(in, out, count, type, op));
    }

    @Override
    protected void mpiExscan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        onHostWhere(runtime.deviceReductionStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiExscan(in, out, count, type, op));
    }

    @Override
    protected void mpiGather(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        onHostWhere(runtime.deviceTreeStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiGather(in, out, count, type, root));
    }

    @Override
    protected void mpiScatter(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        onHostWhere(runtime.deviceTreeStaging, sendBuffer, recvBuffer, (in, out) -> super.mpiScatter(in, out, count, type, root));
    }

    /**
     * Runs {@code call} on host copies of the buffers where {@code staging} (why this library needs
     * it, or null) applies and a buffer is device memory ({@link DeviceReductionStaging}), else on the
     * buffers themselves.
     */
    private static void onHostWhere(String staging, Region sendBuffer, Region recvBuffer, java.util.function.BiConsumer<Region, Region> call) {
        if (staging != null && DeviceReductionStaging.involvesDevice(sendBuffer, recvBuffer)) {
            DeviceReductionStaging.onHost(sendBuffer, recvBuffer, call);
        } else {
            call.accept(sendBuffer, recvBuffer);
        }
    }

    /**
     * A CUDA-aware MPICH (4.0's ch4 GPU IPC path) aborts the job with an internal assertion when a
     * message sent from device memory is truncated at a receive into host memory, and the receiver
     * cannot know where a message was sent from: under such a library every receive is matched
     * first, so that none is ever shorter than its message.
     */
    @Override
    protected boolean matchesEveryReceive() {
        return super.matchesEveryReceive() || runtime.cuda.cudaAware();
    }

    /**
     * A CUDA-aware MPICH closes the IPC mapping of each device message it received (Ferry turns its
     * handle cache off: {@code NativeEnvironment}), and {@code cuIpcCloseMemHandle} waits for every
     * stream of the context: on a stream-ordered view's thread that includes the stream waiting for
     * the call (a send and receive of 1 MiB between two GPUs hung there).
     */
    @Override
    public boolean waitsForStreamsInDeviceCalls() {
        return runtime.cuda.cudaAware();
    }

    @Override
    protected Status mpiSendRecv(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                 Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag) {
        if (runtime.splitSendRecv == null) {
            return super.mpiSendRecv(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag);
        }
        // ch3's MPI_Sendrecv may return a truncation without sending (SplitSendRecv): receive, and send whatever happens
        Request in;
        try {
            in = mpiIrecv(recvBuffer, recvCount, recvType, source, recvTag);
        } catch (RuntimeException failure) {
            try {
                mpiSend(sendBuffer, sendCount, sendType, dest, sendTag);
            } catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
            throw failure;
        }
        Request out = mpiIsend(sendBuffer, sendCount, sendType, dest, sendTag);
        return Request.waitAll(in, out).get(0);
    }
}
