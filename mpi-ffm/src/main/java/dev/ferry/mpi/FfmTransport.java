// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.TruncationException;
import dev.ferry.spi.DeviceSupport;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.MpiLifecycle;
import dev.ferry.spi.PendingDuplicate;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A communicator over an {@code MPI_Comm} handle of either ABI, every operation one downcall
 * through {@link Mpi}; the base of the mvapich communicator and of ompi's FFM path. Host and device
 * buffers reach MPI as raw addresses (the backend decides which it accepts). Every return code is
 * checked; the error handler of every communicator is MPI_ERRORS_RETURN, so MPI errors become
 * exceptions and the communicator stays usable after a truncated receive.
 *
 * <p>Point-to-point messages travel as MPI_BYTE: Ferry itself checks that a receive got whole
 * elements (BindingTransport), and MPICH 4.0's GPU unpack asserts (aborting the job) instead of
 * returning an error when a device receive gets a partial element. Messages over the piece limit
 * are one MPI message each ({@link LargeMessages}).
 */
public abstract class FfmTransport extends BindingTransport {
    protected final long comm;
    private final boolean owned;

    protected FfmTransport(String backend, long comm, boolean owned, int tagUpperBound) {
        super(backend, rankOf(comm), sizeOf(comm), tagUpperBound, Math.min(configuredMaxPieceBytes(), Integer.MAX_VALUE));
        this.comm = comm;
        this.owned = owned;
        Mpi.check("MPI_Comm_set_errhandler(MPI_ERRORS_RETURN)", Mpi.commSetErrhandler(comm, Mpi.ABI.errorsReturn));
    }

    private static int rankOf(long comm) {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_rank", Mpi.commRank(comm, s.int0));
        return s.int0();
    }

    private static int sizeOf(long comm) {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_size", Mpi.commSize(comm, s.int0));
        return s.int0();
    }

    /** The MPI_Comm handle (an int of the MPICH ABI sign-extended, or an Open MPI pointer). */
    public long handle() {
        return comm;
    }

    /** A communicator of the same backend over {@code newComm}, owned (freed on close). */
    protected abstract FfmTransport create(long newComm);

    private static int bytes(Region r) {
        return Math.toIntExact(r.bytes());
    }

    private static long address(Region r) {
        return r == null ? 0L : r.address();
    }

    private static int source(int s) {
        return LargeMessages.source(s);
    }

    private static int tag(int t) {
        return LargeMessages.tag(t);
    }

    /** The status in this thread's scratch, with the byte count from MPI_Get_count(MPI_BYTE). */
    private static Status status(Mpi.Scratch s, String op) {
        Mpi.check(op + ": MPI_Get_count", Mpi.getCount(s.status, Mpi.ABI.byte_, s.int1));
        return new Status(s.source(), s.tag(), s.int1());
    }

    // ---- point to point ----------------------------------------------------------------------

    @Override
    protected void mpiSend(Region buffer, int count, DataType type, int dest, int tag) {
        int rc = Mpi.send(buffer.address(), bytes(buffer), Mpi.ABI.byte_, dest, tag, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Send of " + count + " " + type + " to rank " + dest + " tag " + tag, rc);
        }
    }

    /**
     * A blocking receive: the message is matched first (MPI_Mprobe), then received (MPI_Mrecv).
     * Why: with a rendezvous transport (MPICH over UCX between nodes, Open MPI over TCP or its
     * CUDA path), a message truncated at the receiver leaves its sender waiting in MPI_Send for
     * ever. A message longer than the buffer is therefore received whole into host memory of its
     * own; the buffer gets its first bytes and the receive throws {@link TruncationException}.
     */
    @Override
    protected Status mpiRecv(Region buffer, int count, DataType type, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        int rc = Mpi.mprobe(source(source), tag(tag), comm, s.handle, s.status);
        if (rc != 0) {
            throw Mpi.error(recvWhat(count, type, source, tag), rc);
        }
        Status probed = status(s, "MPI_Mprobe");
        if (probed.byteCount() > buffer.bytes()) {
            long n = probed.byteCount();
            try (HostBuffer whole = HostBuffer.allocate(n)) {
                rc = Mpi.mrecv(whole.address(), Math.toIntExact(n), Mpi.ABI.byte_, s.handle, s.status);
                if (rc != 0) {
                    throw Mpi.error(recvWhat(count, type, source, tag), rc);
                }
                if (buffer.kind().isHostAccessible()) {
                    java.lang.foreign.MemorySegment.copy(whole.segment(), 0, java.lang.foreign.MemorySegment.ofAddress(buffer.address())
                            .reinterpret(buffer.bytes()), 0, buffer.bytes());
                } else {
                    DeviceSupport.get().copyToDevice(buffer.address(), whole, buffer.bytes());
                }
            }
            throw new TruncationException(recvWhat(count, type, source, tag) + " (message of " + n + " bytes from rank " + probed.source() + " tag " + probed.tag()
                    + " is longer than the receive count of " + buffer.bytes() + " bytes)", Mpi.ABI.errTruncate, Mpi.ABI.errTruncate,
                    "MPI_ERR_TRUNCATE: message truncated", null);
        }
        rc = Mpi.mrecv(buffer.address(), bytes(buffer), Mpi.ABI.byte_, s.handle, s.status);
        if (rc != 0) {
            throw Mpi.error(recvWhat(count, type, source, tag), rc);
        }
        return probed; // the whole matched message fits: MPI_Mrecv's status says what MPI_Mprobe's said
    }

    /** The receive named in a failure: built only then, not on every receive. */
    private static String recvWhat(int count, DataType type, int source, int tag) {
        return "MPI_Mprobe/MPI_Mrecv of " + count + " " + type + " from rank " + source + " tag " + tag;
    }

    @Override
    protected Request mpiIsend(Region buffer, int count, DataType type, int dest, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        int rc = Mpi.isend(buffer.address(), bytes(buffer), Mpi.ABI.byte_, dest, tag, comm, s.handle);
        if (rc != 0) {
            throw Mpi.error("MPI_Isend of " + count + " " + type + " to rank " + dest + " tag " + tag, rc);
        }
        return new FfmRequest(s.handle(), dest, tag, new Status(dest, tag, buffer.bytes()), 0);
    }

    @Override
    protected Request mpiIrecv(Region buffer, int count, DataType type, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        int rc = Mpi.irecv(buffer.address(), bytes(buffer), Mpi.ABI.byte_, source(source), tag(tag), comm, s.handle);
        if (rc != 0) {
            throw Mpi.error("MPI_Irecv of " + count + " " + type + " from rank " + source + " tag " + tag, rc);
        }
        return new FfmRequest(s.handle(), source, tag, null, 0);
    }

    @Override
    protected void mpiSendLarge(Region buffer, long count, DataType type, int dest, int tag) {
        LargeMessages.send(comm, buffer, dest, tag, maxPieceBytes());
    }

    @Override
    protected Status mpiRecvLarge(Region buffer, long count, DataType type, int source, int tag) {
        return LargeMessages.recv(comm, buffer, source, tag, maxPieceBytes());
    }

    @Override
    protected Request mpiIsendLarge(Region buffer, long count, DataType type, int dest, int tag) {
        return LargeMessages.isend(comm, buffer, dest, tag, maxPieceBytes());
    }

    @Override
    protected Request mpiIrecvLarge(Region buffer, long count, DataType type, int source, int tag) {
        return LargeMessages.irecv(comm, buffer, source, tag, maxPieceBytes());
    }

    @Override
    protected Status mpiSendRecv(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                 Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag) {
        // the receive is matched first (mpiRecv): a truncated message must not hang its sender
        return sendThenReceive(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag);
    }

    // ---- probing and matched messages --------------------------------------------------------

    @Override
    protected Status mpiProbe(int source, int tag) {
        return Probes.probe(comm, source, tag);
    }

    @Override
    protected java.util.Optional<Status> mpiIprobe(int source, int tag) {
        return Probes.iprobe(comm, source, tag);
    }

    @Override
    protected Probed mpiMprobe(int source, int tag) {
        return Probes.mprobe(comm, source, tag);
    }

    @Override
    protected java.util.Optional<Probed> mpiImprobe(int source, int tag) {
        return Probes.improbe(comm, source, tag);
    }

    @Override
    protected Status mpiMrecv(Probed message, Region into) {
        return Probes.mrecv((Long) message.handle(), message.status(), into, maxPieceBytes());
    }

    @Override
    protected Request mpiImrecv(Probed message, Region into) {
        return Probes.imrecv((Long) message.handle(), message.status(), into, maxPieceBytes());
    }

    @Override
    protected TruncationException mpiTruncation(String what) {
        return new TruncationException(what, Mpi.ABI.errTruncate, Mpi.ABI.errTruncate, "MPI_ERR_TRUNCATE: message truncated", null);
    }

    // ---- collectives -------------------------------------------------------------------------

    @Override
    protected void mpiBarrier() {
        Mpi.check("MPI_Barrier", Mpi.barrier(comm));
    }

    @Override
    protected void mpiBroadcast(Region buffer, int count, DataType type, int root) {
        int rc = Mpi.bcast(buffer.address(), count, Mpi.ABI.type(type), root, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Bcast of " + count + " " + type + " from root " + root, rc);
        }
    }

    @Override
    protected void mpiScatter(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        long t = Mpi.ABI.type(type);
        int rc = Mpi.scatter(address(sendBuffer), count, t, recvBuffer.address(), count, t, root, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Scatter of " + count + " " + type + " from root " + root, rc);
        }
    }

    @Override
    protected void mpiGather(Region sendBuffer, Region recvBuffer, int count, DataType type, int root) {
        long t = Mpi.ABI.type(type);
        int rc = Mpi.gather(sendBuffer.address(), count, t, address(recvBuffer), count, t, root, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Gather of " + count + " " + type + " to root " + root, rc);
        }
    }

    @Override
    protected void mpiAllGather(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        long t = Mpi.ABI.type(type);
        int rc = Mpi.allgather(sendBuffer.address(), count, t, recvBuffer.address(), count, t, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Allgather of " + count + " " + type, rc);
        }
    }

    @Override
    protected void mpiReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op, int root) {
        int rc = Mpi.reduce(sendBuffer.address(), address(recvBuffer), count, Mpi.ABI.type(type), Mpi.ABI.op(op), root, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Reduce (" + op + ") of " + count + " " + type + " to root " + root, rc);
        }
    }

    @Override
    protected void mpiAllReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        int rc = Mpi.allreduce(sendBuffer.address(), recvBuffer.address(), count, Mpi.ABI.type(type), Mpi.ABI.op(op), comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Allreduce (" + op + ") of " + count + " " + type, rc);
        }
    }

    @Override
    protected void mpiAllToAll(Region sendBuffer, Region recvBuffer, int count, DataType type) {
        long t = Mpi.ABI.type(type);
        int rc = Mpi.alltoall(sendBuffer.address(), count, t, recvBuffer.address(), count, t, comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Alltoall of " + count + " " + type, rc);
        }
    }

    // ---- vector collectives, reduce-scatter, prefix reductions -------------------------------

    /** A native {@code int[]} of {@code values} in {@code arena}; MemorySegment.NULL for null (where MPI ignores the array). */
    private static MemorySegment ints(Arena arena, int[] values) {
        return values == null ? MemorySegment.NULL : arena.allocateFrom(ValueLayout.JAVA_INT, values);
    }

    @Override
    protected void mpiScatterV(Region sendBuffer, int[] sendCounts, int[] displacements, Region recvBuffer, int recvCount, DataType type, int root) {
        long t = Mpi.ABI.type(type);
        int rc;
        try (Arena a = Arena.ofConfined()) {
            rc = Mpi.scatterv(address(sendBuffer), ints(a, sendCounts), ints(a, displacements), t, recvBuffer.address(), recvCount, t, root, comm);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Scatterv of " + recvCount + " " + type + " from root " + root, rc);
        }
    }

    @Override
    protected void mpiGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type, int root) {
        long t = Mpi.ABI.type(type);
        int rc;
        try (Arena a = Arena.ofConfined()) {
            rc = Mpi.gatherv(sendBuffer.address(), sendCount, t, address(recvBuffer), ints(a, recvCounts), ints(a, displacements), t, root, comm);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Gatherv of " + sendCount + " " + type + " to root " + root, rc);
        }
    }

    @Override
    protected void mpiAllGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type) {
        long t = Mpi.ABI.type(type);
        int rc;
        try (Arena a = Arena.ofConfined()) {
            rc = Mpi.allgatherv(sendBuffer.address(), sendCount, t, recvBuffer.address(), ints(a, recvCounts), ints(a, displacements), t, comm);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Allgatherv of " + sendCount + " " + type, rc);
        }
    }

    @Override
    protected void mpiAllToAllV(Region sendBuffer, int[] sendCounts, int[] sendDisplacements, Region recvBuffer, int[] recvCounts,
                                int[] recvDisplacements, DataType type) {
        long t = Mpi.ABI.type(type);
        int rc;
        try (Arena a = Arena.ofConfined()) {
            rc = Mpi.alltoallv(sendBuffer.address(), ints(a, sendCounts), ints(a, sendDisplacements), t,
                    recvBuffer.address(), ints(a, recvCounts), ints(a, recvDisplacements), t, comm);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Alltoallv of " + type, rc);
        }
    }

    @Override
    protected void mpiReduceScatterBlock(Region sendBuffer, Region recvBuffer, int recvCount, DataType type, ReduceOp op) {
        int rc = Mpi.reduceScatterBlock(sendBuffer.address(), recvBuffer.address(), recvCount, Mpi.ABI.type(type), Mpi.ABI.op(op), comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Reduce_scatter_block (" + op + ") of " + recvCount + " " + type + " per rank", rc);
        }
    }

    @Override
    protected void mpiReduceScatter(Region sendBuffer, Region recvBuffer, int[] recvCounts, DataType type, ReduceOp op) {
        int rc;
        try (Arena a = Arena.ofConfined()) {
            rc = Mpi.reduceScatter(sendBuffer.address(), recvBuffer.address(), ints(a, recvCounts), Mpi.ABI.type(type), Mpi.ABI.op(op), comm);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Reduce_scatter (" + op + ") of " + type, rc);
        }
    }

    @Override
    protected void mpiScan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        int rc = Mpi.scan(sendBuffer.address(), recvBuffer.address(), count, Mpi.ABI.type(type), Mpi.ABI.op(op), comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Scan (" + op + ") of " + count + " " + type, rc);
        }
    }

    @Override
    protected void mpiExscan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op) {
        int rc = Mpi.exscan(sendBuffer.address(), recvBuffer.address(), count, Mpi.ABI.type(type), Mpi.ABI.op(op), comm);
        if (rc != 0) {
            throw Mpi.error("MPI_Exscan (" + op + ") of " + count + " " + type, rc);
        }
    }

    // ---- communicators -----------------------------------------------------------------------

    @Override
    protected BindingTransport mpiSplit(int color, int key) {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_split(color " + color + ", key " + key + ")",
                Mpi.commSplit(comm, color < 0 ? Mpi.ABI.undefined : color, key, s.handle));
        long c = s.handle();
        return c == Mpi.ABI.commNull ? null : create(c);
    }

    @Override
    protected BindingTransport mpiDuplicate() {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_dup", Mpi.commDup(comm, s.handle));
        return create(s.handle());
    }

    /**
     * MPI_Comm_idup. The library writes the new handle (MPICH: when the request completes) and the
     * request into memory of this pending duplicate, not into a thread's scratch: the call returns
     * at once and the duplicate is finished later, usually on another thread.
     *
     * <p>Finished by MPI_Test, not MPI_Wait: with two duplicates finishing on two threads,
     * MVAPICH2 2.3.7 (MPICH 3.2's ch3) can leave one thread asleep in MPI_Wait after the other
     * thread's progress completed its request, a hang seen when two communicators' first
     * non-blocking collectives start in crossed order. A thread that tests keeps driving progress.
     */
    @Override
    protected PendingDuplicate mpiStartDuplicate() {
        MemorySegment out = Arena.ofAuto().allocate(16, 8);
        MemorySegment newComm = out.asSlice(0, 8), request = out.asSlice(8, 8);
        Mpi.check("MPI_Comm_idup", Mpi.commIdup(comm, newComm, request));
        return () -> {
            Mpi.Scratch s = Mpi.scratch();
            dev.ferry.spi.Backoff idle = new dev.ferry.spi.Backoff();
            while (true) {
                s.int0.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 0);
                Mpi.check("MPI_Test(MPI_Comm_idup)", Mpi.test(request, s.int0, s.status));
                if (s.int0() != 0) {
                    break;
                }
                idle.pause();
            }
            return create(Mpi.handleAt(newComm));
        };
    }

    @Override
    protected void mpiFree() {
        if (owned && !MpiLifecycle.isFinalized()) {
            Mpi.Scratch s = Mpi.scratch();
            s.handle(comm);
            Mpi.check("MPI_Comm_free", Mpi.commFree(s.handle));
        }
    }
}
