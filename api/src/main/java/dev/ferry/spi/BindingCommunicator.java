package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.HostBuffer;
import java.lang.foreign.MemorySegment;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Base for communicators over an MPI binding whose calls take {@code int} counts and at most
 * {@link #maxPieceBytes()} bytes per buffer (mpi.jar's ByteBuffers stop below 2 GiB).
 *
 * <p>A point-to-point message is always ONE MPI message, so that MPI's matching semantics hold
 * (non-overtaking order, wildcard receives, truncation raising {@link dev.ferry.TruncationException}
 * and leaving the next message intact): messages over the limit go through the binding's
 * {@code mpi*Large} calls (MPI-4 large counts or a derived datatype). Broadcasts and reductions
 * are split piece by piece (collectives on one communicator are ordered, so pieces cannot mix);
 * rooted and all-to-all collectives whose buffers exceed the limit run as one point-to-point
 * message per pair on a private duplicate.
 */
public abstract class BindingCommunicator extends AbstractCommunicator {
    /** Default largest piece: 1 GiB, a power of two so that pieces stay element-aligned. */
    public static final long DEFAULT_MAX_PIECE_BYTES = 1L << 30;

    private final long maxPieceBytes;
    private BindingCommunicator internal; // lazily duplicated, for the point-to-point collectives

    /**
     * Native memory handed to the binding: where it starts, how many bytes, and what kind (for
     * bindings that must refuse or treat device memory specially).
     */
    public record Region(long address, long bytes, MemoryKind kind) {
    }

    protected BindingCommunicator(String backend, int rank, int size, int maxTag, long maxPieceBytes) {
        super(backend, rank, size, maxTag);
        if (maxPieceBytes < 8 || maxPieceBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("maxPieceBytes " + maxPieceBytes + " must be within [8, 2^31-1]");
        }
        this.maxPieceBytes = maxPieceBytes & ~7L; // whole elements of every type
    }

    /** The piece limit from {@code ferry.maxPieceBytes} (tests lower it to exercise splitting), else 1 GiB. */
    public static long configuredMaxPieceBytes() {
        String v = System.getProperty("ferry.maxPieceBytes");
        return v == null ? DEFAULT_MAX_PIECE_BYTES : Long.parseLong(v.trim());
    }

    public final long maxPieceBytes() {
        return maxPieceBytes;
    }

    private static Region region(Buffer b, long offset, long bytes) {
        return new Region(b.address() + offset, bytes, b.kind());
    }

    private static Region whole(Buffer b, long bytes) {
        return b == null ? null : region(b, 0, bytes);
    }

    private long piece(DataType t) {
        return maxPieceBytes / t.size();
    }

    private boolean fits(long bytes) {
        return bytes <= maxPieceBytes;
    }

    private static Status checked(Status s, DataType type, String op) {
        if (s.byteCount() % type.size() != 0) {
            throw new DataTypeMismatchException(op + ": received " + s.byteCount() + " bytes from rank " + s.source()
                    + ", not a whole number of " + type + " (" + type.size() + " bytes): sender and receiver disagree on the datatype");
        }
        return s;
    }

    // ---- point to point ------------------------------------------------------------------
    // One MPI message per Ferry message, whatever its length, so that MPI's matching rules
    // (ordering, wildcards, truncation) hold for Ferry's messages: messages over maxPieceBytes go
    // through the binding's large-message calls (mpi*Large), never as several MPI messages.

    @Override
    protected void doSend(Buffer buffer, long count, DataType type, int dest, int tag) {
        long bytes = type.bytes(count);
        if (fits(bytes)) {
            mpiSend(region(buffer, 0, bytes), (int) count, type, dest, tag);
        } else {
            mpiSendLarge(region(buffer, 0, bytes), count, type, dest, tag);
        }
    }

    @Override
    protected Status doRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        long bytes = type.bytes(count);
        Status s = fits(bytes) ? mpiRecv(region(buffer, 0, bytes), (int) count, type, source, tag)
                : mpiRecvLarge(region(buffer, 0, bytes), count, type, source, tag);
        return checked(s, type, "recv");
    }

    @Override
    protected Request doIsend(Buffer buffer, long count, DataType type, int dest, int tag) {
        long bytes = type.bytes(count);
        return fits(bytes) ? mpiIsend(region(buffer, 0, bytes), (int) count, type, dest, tag)
                : mpiIsendLarge(region(buffer, 0, bytes), count, type, dest, tag);
    }

    @Override
    protected Request doIrecv(Buffer buffer, long count, DataType type, int source, int tag) {
        long bytes = type.bytes(count);
        Request r = fits(bytes) ? mpiIrecv(region(buffer, 0, bytes), (int) count, type, source, tag)
                : mpiIrecvLarge(region(buffer, 0, bytes), count, type, source, tag);
        return new CheckedReceive(r, type);
    }

    @Override
    protected Status doSendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        long sb = sendType.bytes(sendCount), rb = recvType.bytes(recvCount);
        if (fits(sb) && fits(rb)) {
            return checked(mpiSendRecv(region(sendBuffer, 0, sb), (int) sendCount, sendType, dest, sendTag,
                    region(recvBuffer, 0, rb), (int) recvCount, recvType, source, recvTag), recvType, "sendRecv");
        }
        // one message each way, as MPI_Sendrecv would send: a non-blocking receive, then the send
        Request r = doIrecv(recvBuffer, recvCount, recvType, source, recvTag);
        Request s = doIsend(sendBuffer, sendCount, sendType, dest, sendTag);
        List<Status> st = Request.waitAll(r, s);
        return st.get(0);
    }

    // ---- collectives ---------------------------------------------------------------------

    @Override
    protected void doBarrier() {
        mpiBarrier();
    }

    @Override
    protected void doBroadcast(Buffer buffer, long count, DataType type, int root) {
        long step = piece(type);
        long done = 0;
        do {
            int n = (int) Math.min(step, count - done);
            mpiBroadcast(region(buffer, type.bytes(done), type.bytes(n)), n, type, root);
            done += n;
        } while (done < count);
    }

    /**
     * True for the types the MPI reduces itself; the others Ferry reduces ({@link #reduceByGathering}):
     * the 16-bit floating-point types (no MPI type), and the value/index pairs, whose MINLOC and MAXLOC
     * not every MPI of the family takes (MVAPICH2 2.3.7 refuses MPI_SHORT_INT: "MPI_Op MPI_MINLOC
     * operation not defined for this datatype"), so that they give the same result everywhere.
     */
    private static boolean mpiReduces(DataType type) {
        return type != DataType.FLOAT16 && type != DataType.BFLOAT16 && type.kind() != DataType.Kind.PAIR;
    }

    /**
     * True when the MPI reduces {@code type} with {@code op} itself ({@link #mpiReduces(DataType)});
     * a binding whose library gets a pairing wrong returns false for it, and Ferry reduces it.
     */
    protected boolean mpiReduces(DataType type, ReduceOp op) {
        return mpiReduces(type);
    }

    /**
     * A reduction of a type that MPI has no operator for (FLOAT16, BFLOAT16): every rank's input is
     * gathered as bytes to the ranks that get the result ({@code root}, or all with -1), which
     * reduce on the host in rank order with {@link HostReduction}; device memory is copied through
     * the host.
     */
    private void reduceByGathering(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        long bytes = type.bytes(count);
        boolean result = root < 0 || rank() == root;
        try (HostBuffer in = HostBuffer.allocate(bytes); HostBuffer all = HostBuffer.allocate(result ? bytes * size() : 0)) {
            DeviceSupport.get().copyToHost(in, sendBuffer, bytes);
            if (root < 0) {
                doAllGather(in, all, bytes, DataType.BYTE);
            } else {
                doGather(in, result ? all : null, bytes, DataType.BYTE, root);
            }
            if (!result) {
                return;
            }
            try (HostBuffer acc = HostBuffer.allocate(bytes)) {
                MemorySegment.copy(all.segment(), 0, acc.segment(), 0, bytes);
                for (int r = 1; r < size(); r++) {
                    HostReduction.apply(type, op, acc.segment(), all.segment().asSlice(r * bytes, bytes), count);
                }
                DeviceSupport.get().copyFromHost(recvBuffer, acc, bytes);
            }
        }
    }

    @Override
    protected void doReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        if (!mpiReduces(type, op)) {
            reduceByGathering(sendBuffer, recvBuffer, count, type, op, root);
            return;
        }
        long step = piece(type);
        long done = 0;
        do {
            int n = (int) Math.min(step, count - done);
            long off = type.bytes(done), len = type.bytes(n);
            mpiReduce(region(sendBuffer, off, len), recvBuffer == null ? null : region(recvBuffer, off, len), n, type, op, root);
            done += n;
        } while (done < count);
    }

    @Override
    protected void doAllReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        if (!mpiReduces(type, op)) {
            reduceByGathering(sendBuffer, recvBuffer, count, type, op, -1);
            return;
        }
        long step = piece(type);
        long done = 0;
        do {
            int n = (int) Math.min(step, count - done);
            long off = type.bytes(done), len = type.bytes(n);
            mpiAllReduce(region(sendBuffer, off, len), region(recvBuffer, off, len), n, type, op);
            done += n;
        } while (done < count);
    }

    @Override
    protected void doScatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiScatter(whole(sendBuffer, block * size()), whole(recvBuffer, block), (int) count, type, root);
            return;
        }
        BindingCommunicator c = internal();
        List<Request> reqs = new ArrayList<>();
        reqs.add(c.irecv(recvBuffer, count, type, root, 0));
        if (rank() == root) {
            for (int r = 0; r < size(); r++) {
                reqs.add(c.isend(sendBuffer.slice(block * r, block), count, type, r, 0));
            }
        }
        Request.waitAll(reqs);
    }

    @Override
    protected void doGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiGather(whole(sendBuffer, block), whole(recvBuffer, block * size()), (int) count, type, root);
            return;
        }
        BindingCommunicator c = internal();
        List<Request> reqs = new ArrayList<>();
        if (rank() == root) {
            for (int r = 0; r < size(); r++) {
                reqs.add(c.irecv(recvBuffer.slice(block * r, block), count, type, r, 0));
            }
        }
        reqs.add(c.isend(sendBuffer, count, type, root, 0));
        Request.waitAll(reqs);
    }

    @Override
    protected void doAllGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiAllGather(whole(sendBuffer, block), whole(recvBuffer, block * size()), (int) count, type);
            return;
        }
        BindingCommunicator c = internal();
        List<Request> reqs = new ArrayList<>();
        for (int r = 0; r < size(); r++) {
            reqs.add(c.irecv(recvBuffer.slice(block * r, block), count, type, r, 0));
        }
        for (int r = 0; r < size(); r++) {
            reqs.add(c.isend(sendBuffer, count, type, r, 0));
        }
        Request.waitAll(reqs);
    }

    @Override
    protected void doAllToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiAllToAll(whole(sendBuffer, block * size()), whole(recvBuffer, block * size()), (int) count, type);
            return;
        }
        BindingCommunicator c = internal();
        List<Request> reqs = new ArrayList<>();
        for (int r = 0; r < size(); r++) {
            reqs.add(c.irecv(recvBuffer.slice(block * r, block), count, type, r, 0));
        }
        for (int r = 0; r < size(); r++) {
            reqs.add(c.isend(sendBuffer.slice(block * r, block), count, type, r, 0));
        }
        Request.waitAll(reqs);
    }

    private synchronized BindingCommunicator internal() {
        if (internal == null) {
            internal = mpiDuplicate();
        }
        return internal;
    }

    @Override
    protected final Communicator doSplit(int color, int key) {
        return mpiSplit(color, key);
    }

    @Override
    protected final Communicator doDuplicate() {
        return mpiDuplicate();
    }

    @Override
    protected final void doClose() {
        BindingCommunicator in;
        synchronized (this) {
            in = internal;
            internal = null;
        }
        try {
            if (in != null) {
                in.close();
            }
        } finally {
            mpiFree();
        }
    }

    /** A receive whose byte count is checked as whole elements of the receive type on completion. */
    private static final class CheckedReceive implements Request {
        private final Request receive;
        private final DataType type;

        CheckedReceive(Request receive, DataType type) {
            this.receive = receive;
            this.type = type;
        }

        @Override
        public Status waitFor() {
            return checked(receive.waitFor(), type, "irecv");
        }

        @Override
        public Optional<Status> test() {
            return receive.test().map(s -> checked(s, type, "irecv"));
        }
    }

    /**
     * {@code sendRecv} as a non-blocking send and this binding's blocking receive
     * ({@link #mpiRecv}), for bindings whose receive matches the message first: a truncated
     * message must not leave its sender waiting, as MPI_Sendrecv over some transports does. The
     * send is completed whatever the receive does.
     */
    protected final Status sendThenReceive(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                           Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag) {
        Request out = mpiIsend(sendBuffer, sendCount, sendType, dest, sendTag);
        Status in;
        try {
            in = mpiRecv(recvBuffer, recvCount, recvType, source, recvTag);
        } catch (RuntimeException e) {
            try {
                out.waitFor();
            } catch (RuntimeException e2) {
                e.addSuppressed(e2);
            }
            throw e;
        }
        out.waitFor();
        return in;
    }

    // ---- the binding: counts fit in an int, regions in maxPieceBytes ---------------------

    protected abstract void mpiSend(Region buffer, int count, DataType type, int dest, int tag);

    /** Status with the received byte count (MPI_Get_count with MPI_BYTE). */
    protected abstract Status mpiRecv(Region buffer, int count, DataType type, int source, int tag);

    protected abstract Request mpiIsend(Region buffer, int count, DataType type, int dest, int tag);

    protected abstract Request mpiIrecv(Region buffer, int count, DataType type, int source, int tag);

    /**
     * One MPI message of {@code buffer.bytes()} bytes (more than {@link #maxPieceBytes()}), sent as
     * a single MPI message: a large-count call or a derived datatype, never as several messages.
     */
    protected abstract void mpiSendLarge(Region buffer, long count, DataType type, int dest, int tag);

    /** One MPI receive of up to {@code buffer.bytes()} bytes; the status carries the received byte count. */
    protected abstract Status mpiRecvLarge(Region buffer, long count, DataType type, int source, int tag);

    protected abstract Request mpiIsendLarge(Region buffer, long count, DataType type, int dest, int tag);

    protected abstract Request mpiIrecvLarge(Region buffer, long count, DataType type, int source, int tag);

    protected abstract Status mpiSendRecv(Region sendBuffer, int sendCount, DataType sendType, int dest, int sendTag,
                                          Region recvBuffer, int recvCount, DataType recvType, int source, int recvTag);

    protected abstract void mpiBarrier();

    protected abstract void mpiBroadcast(Region buffer, int count, DataType type, int root);

    /** {@code sendBuffer} null except at root. */
    protected abstract void mpiScatter(Region sendBuffer, Region recvBuffer, int count, DataType type, int root);

    /** {@code recvBuffer} null except at root. */
    protected abstract void mpiGather(Region sendBuffer, Region recvBuffer, int count, DataType type, int root);

    protected abstract void mpiAllGather(Region sendBuffer, Region recvBuffer, int count, DataType type);

    /** {@code recvBuffer} null except at root. */
    protected abstract void mpiReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op, int root);

    protected abstract void mpiAllReduce(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op);

    protected abstract void mpiAllToAll(Region sendBuffer, Region recvBuffer, int count, DataType type);

    /** {@code color} -1: MPI_UNDEFINED, return null. */
    protected abstract BindingCommunicator mpiSplit(int color, int key);

    protected abstract BindingCommunicator mpiDuplicate();

    protected abstract void mpiFree();
}
