package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.ForwardingTransport;
import dev.ferry.spi.Transport;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The transport of a backend that hands device buffers straight to a CUDA-aware MPI ({@code ompi},
 * {@code mvapich}), with its collectives on device buffers among ranks all on one node run over CUDA
 * IPC by {@link IpcCollectives}, as the staged backend runs them: broadcast, reduce, allReduce,
 * reduce-scatter, allGather, allToAll, gather and scatter. Whatever that path declines (host memory
 * on some rank, ranks of several nodes, buffers CUDA cannot export) and every other primitive go to
 * the MPI backend unchanged, device buffers included. Made by {@link StagedDeviceCollectives} under
 * {@code ferry.deviceCollectives}; it shares the process's {@link StagedRuntime} (IPC exports and
 * mapping cache, collective streams) with staged communicators.
 *
 * <p>Cost where the path does not apply: on one node, each of these collectives first exchanges
 * one record per rank on the node's shared-memory board (to learn every rank's memory, as MPI
 * allows host memory on one rank and device memory on another); across nodes, nothing.
 */
final class MpiWithIpcCollectives extends ForwardingTransport implements IpcMembers {
    private static final System.Logger LOG = System.getLogger(MpiWithIpcCollectives.class.getName());

    private final StagedRuntime rt;
    private final StagedSettings.DeviceCollectives mode;
    private final Peers peers;
    private final IpcCollectives ipc;
    private final AtomicBoolean released = new AtomicBoolean();
    private final AtomicBoolean warned = new AtomicBoolean();

    /** Wraps {@code mpi} (taking ownership) with a reference to {@code rt}; collective over its ranks. */
    MpiWithIpcCollectives(Transport mpi, StagedRuntime rt, StagedSettings.DeviceCollectives mode) {
        super(mpi);
        this.rt = rt;
        this.mode = mode;
        try {
            this.peers = Peers.exchange(mpi, rt.settings, rt.ipcEnabled());
        } catch (RuntimeException e) {
            mpi.close();
            rt.release();
            throw e;
        }
        this.ipc = new IpcCollectives(this);
    }

    /**
     * The program's pending sends and receives are the MPI's own here: a probe makes the MPI progress
     * them (a peer may be waiting for one of them before it reaches this collective).
     */
    @Override
    public void progressWhileWaiting() {
        rt.progress.poll();
        inner.iprobe(dev.ferry.Communicator.ANY_SOURCE, dev.ferry.Communicator.ANY_TAG);
    }

    @Override
    public IpcCollectives ipcCollectives() {
        return ipc;
    }

    // ---- IpcMembers --------------------------------------------------------------------------

    @Override
    public Transport user() {
        return inner;
    }

    @Override
    public Peers peers() {
        return peers;
    }

    @Override
    public StagedRuntime runtime() {
        return rt;
    }

    @Override
    public Wire.IpcOffer ipcOffer(Buffer buffer) {
        try {
            return rt.exports.offer((DeviceBuffer) buffer);
        } catch (CudaException e) {
            if (warned.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "ferry: rank " + rank() + " cannot export its device memory by CUDA IPC (" + e.getMessage()
                        + "); such collectives go to " + inner.backend() + " instead");
            }
            return null;
        }
    }

    @Override
    public StagedSettings.DeviceCollectives deviceCollectives() {
        return mode;
    }

    @Override
    public String deviceCollectivesSetting() {
        return dev.ferry.FerrySettings.DEVICE_COLLECTIVES.key();
    }

    // ---- the collectives the IPC path carries ----------------------------------------------

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        if (!ipc.broadcast(buffer, count, type, root)) inner.broadcast(buffer, count, type, root);
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        if (!ipc.reduce(sendBuffer, recvBuffer, count, type, op, root)) inner.reduce(sendBuffer, recvBuffer, count, type, op, root);
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        if (!ipc.allReduce(sendBuffer, recvBuffer, count, type, op)) inner.allReduce(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        long[] counts = new long[size()];
        java.util.Arrays.fill(counts, recvCount);
        if (!ipc.reduceScatter(sendBuffer, recvBuffer, Blocks.contiguous(counts), type, op)) {
            inner.reduceScatterBlock(sendBuffer, recvBuffer, recvCount, type, op);
        }
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        if (!ipc.reduceScatter(sendBuffer, recvBuffer, blocks, type, op)) inner.reduceScatter(sendBuffer, recvBuffer, blocks, type, op);
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        if (!ipc.allGather(sendBuffer, recvBuffer, count, type)) inner.allGather(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        if (!ipc.allToAll(sendBuffer, recvBuffer, count, type)) inner.allToAll(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        if (!ipc.gather(sendBuffer, recvBuffer, count, type, root)) inner.gather(sendBuffer, recvBuffer, count, type, root);
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        if (!ipc.scatter(sendBuffer, recvBuffer, count, type, root)) inner.scatter(sendBuffer, recvBuffer, count, type, root);
    }

    // ---- communicators -----------------------------------------------------------------------

    @Override
    public Transport split(int color, int key) {
        Transport c = inner.split(color, key);
        return c == null ? null : new MpiWithIpcCollectives(c, StagedRuntime.acquire(rt.settings, rt.inner), mode);
    }

    @Override
    public Transport duplicate() {
        return new MpiWithIpcCollectives(inner.duplicate(), StagedRuntime.acquire(rt.settings, rt.inner), mode);
    }

    @Override
    public void close() {
        RuntimeException first = null;
        try {
            ipc.close();
        } catch (RuntimeException e) {
            first = e;
        }
        try {
            inner.close();
        } catch (RuntimeException e) {
            if (first == null) first = e; else first.addSuppressed(e);
        }
        if (released.compareAndSet(false, true)) {
            try {
                rt.release();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }
}
