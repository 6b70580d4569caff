// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.HostBuffer;
import dev.ferry.MatchedMessage;
import dev.ferry.TruncationException;
import java.lang.foreign.MemorySegment;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.DeviceSupport;
import dev.ferry.spi.PendingDuplicate;
import dev.ferry.spi.PointToPointCollectives;
import dev.ferry.spi.Transport;

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
 * message per pair on a private duplicate, and so do vector collectives (see "vector
 * collectives" below); reduce-scatter over the limit is one reduce per block.
 */
public abstract class BindingTransport implements Transport {
    /** Default largest piece: 1 GiB, a power of two so that pieces stay element-aligned. */
    public static final long DEFAULT_MAX_PIECE_BYTES = 1L << 30;

    private final String backend;
    private final int rank;
    private final int size;
    private final int maxTag;
    private final long maxPieceBytes;
    private BindingTransport internal; // lazily duplicated, for the point-to-point collectives
    /** {@code ferry.matchReceives=all}: every irecv is matched by Ferry, not only those on device memory. */
    private static final boolean MATCH_ALL_RECEIVES = "all".equals(Settings.process().get(FerrySettings.MATCH_RECEIVES));
    /** Receives matched by Ferry before the library receives into them (device irecv, and every receive while one waits). */
    private final MatchedReceives matching = new MatchedReceives(this);

    /**
     * Native memory handed to the binding: where it starts, how many bytes, and what kind (for
     * bindings that must refuse or treat device memory specially).
     */
    public record Region(long address, long bytes, MemoryKind kind) {
    }

    protected BindingTransport(String backend, int rank, int size, int maxTag, long maxPieceBytes) {
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.maxTag = maxTag;
        if (maxPieceBytes < 8 || maxPieceBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("maxPieceBytes " + maxPieceBytes + " must be within [8, 2^31-1]");
        }
        this.maxPieceBytes = maxPieceBytes & ~7L; // whole elements of every type
    }

    /** The piece limit from {@code ferry.maxPieceBytes} (tests lower it to exercise splitting), else 1 GiB. */
    public static long configuredMaxPieceBytes() {
        return Settings.process().get(FerrySettings.MAX_PIECE_BYTES);
    }

    @Override
    public final String backend() {
        return backend;
    }

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final int maxTag() {
        return maxTag;
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
        if (!s.cancelled() && s.byteCount() % type.size() != 0) {
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
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        long bytes = type.bytes(count);
        if (fits(bytes)) {
            mpiSend(region(buffer, 0, bytes), (int) count, type, dest, tag);
        } else {
            mpiSendLarge(region(buffer, 0, bytes), count, type, dest, tag);
        }
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        long bytes = type.bytes(count);
        if (matching.active()) {
            return checked(matching.post(region(buffer, 0, bytes), source, tag).waitFor(), type, "recv");
        }
        Status s = fits(bytes) ? mpiRecv(region(buffer, 0, bytes), (int) count, type, source, tag)
                : mpiRecvLarge(region(buffer, 0, bytes), count, type, source, tag);
        return checked(s, type, "recv");
    }

    @Override
    public Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        long bytes = type.bytes(count);
        return fits(bytes) ? mpiIsend(region(buffer, 0, bytes), (int) count, type, dest, tag)
                : mpiIsendLarge(region(buffer, 0, bytes), count, type, dest, tag);
    }

    /**
     * A receive on device memory is matched by Ferry first ({@link MatchedReceives}): the MPI
     * library never gets a device receive shorter than its message. So is a receive over the piece
     * limit (one large-count or derived-datatype receive, which some libraries leave empty when
     * they truncate it), every receive while one of those waits, to keep MPI's matching order, and
     * every receive under {@code ferry.matchReceives=all}.
     */
    @Override
    public Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
        long bytes = type.bytes(count);
        if (matchesEveryReceive() || buffer.kind().needsCuda() || !fits(bytes) || matching.active()) {
            return new CheckedReceive(matching.post(region(buffer, 0, bytes), source, tag), type, "irecv");
        }
        Request r = fits(bytes) ? mpiIrecv(region(buffer, 0, bytes), (int) count, type, source, tag)
                : mpiIrecvLarge(region(buffer, 0, bytes), count, type, source, tag);
        return new CheckedReceive(r, type, "irecv");
    }

    /**
     * {@link #recv} without blocking: matched by Ferry as {@code recv} matches it (MPI_Improbe at
     * each test, then MPI_Imrecv of exactly the message), or while receives wait to be matched by
     * Ferry, one of them, to keep MPI's matching order (see {@link #irecv}).
     */
    @Override
    public Request startRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        Region into = region(buffer, 0, type.bytes(count));
        return new CheckedReceive(matching.active() ? matching.post(into, source, tag) : new ProbedReceive(this, into, source, tag), type, "recv");
    }

    @Override
    public Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        long sb = sendType.bytes(sendCount), rb = recvType.bytes(recvCount);
        if (fits(sb) && fits(rb) && !matching.active()) {
            return checked(mpiSendRecv(region(sendBuffer, 0, sb), (int) sendCount, sendType, dest, sendTag,
                    region(recvBuffer, 0, rb), (int) recvCount, recvType, source, recvTag), recvType, "sendRecv");
        }
        // one message each way, as MPI_Sendrecv would send: a non-blocking receive, then the send
        Request r = irecv(recvBuffer, recvCount, recvType, source, recvTag);
        Request s = isend(sendBuffer, sendCount, sendType, dest, sendTag);
        List<Status> st = Request.waitAll(r, s);
        return st.get(0);
    }

    // ---- collectives ---------------------------------------------------------------------

    @Override
    public void barrier() {
        mpiBarrier();
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        long step = piece(type);
        long done = 0;
        do {
            int n = (int) Math.min(step, count - done);
            mpiBroadcast(region(buffer, type.bytes(done), type.bytes(n)), n, type, root);
            done += n;
        } while (done < count);
    }

    /**
     * True for the types the MPI reduces itself: not the 16-bit floating-point types (no MPI type),
     * nor the value/index pairs, whose MINLOC and MAXLOC not every MPI of the family takes (MVAPICH2
     * 2.3.7 refuses MPI_SHORT_INT: "MPI_Op MPI_MINLOC operation not defined for this datatype"), so
     * that they give the same result everywhere (the planner folds those itself).
     */
    private static boolean mpiReduces(DataType type) {
        return type != DataType.FLOAT16 && type != DataType.BFLOAT16 && type.kind() != DataType.Kind.PAIR;
    }

    /**
     * True when the MPI reduces {@code type} with {@code op} itself ({@link #mpiReduces(DataType)});
     * a binding whose library gets a pairing wrong returns false for it.
     */
    protected boolean mpiReduces(DataType type, ReduceOp op) {
        return mpiReduces(type);
    }

    @Override
    public final boolean reduces(DataType type, ReduceOp op) {
        return mpiReduces(type, op);
    }

    /** Refuses a reduction the MPI does not do: the planner never asks for one ({@link #reduces}). */
    private void checkReduces(String what, DataType type, ReduceOp op) {
        if (!mpiReduces(type, op)) {
            throw new UnsupportedOperationException(what + ": backend " + backend() + " does not reduce " + type + " with " + op
                    + " (the collectives planner folds those itself)");
        }
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        checkReduces("reduce", type, op);
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
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkReduces("allReduce", type, op);
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
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiScatter(whole(sendBuffer, block * size()), whole(recvBuffer, block), (int) count, type, root);
            return;
        }
        PointToPointCollectives.scatterV(internal(), sendBuffer, rank == root ? PointToPointCollectives.equal(count, size) : null, recvBuffer, count, type, root);
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiGather(whole(sendBuffer, block), whole(recvBuffer, block * size()), (int) count, type, root);
            return;
        }
        PointToPointCollectives.gatherV(internal(), sendBuffer, count, recvBuffer, rank == root ? PointToPointCollectives.equal(count, size) : null, type, root);
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiAllGather(whole(sendBuffer, block), whole(recvBuffer, block * size()), (int) count, type);
            return;
        }
        PointToPointCollectives.allToAllV(internal(), sendBuffer, PointToPointCollectives.everyRank(count, size), recvBuffer, PointToPointCollectives.equal(count, size), type);
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        long block = type.bytes(count);
        if (fits(block * size())) {
            mpiAllToAll(whole(sendBuffer, block * size()), whole(recvBuffer, block * size()), (int) count, type);
            return;
        }
        PointToPointCollectives.allToAllV(internal(), sendBuffer, PointToPointCollectives.equal(count, size), recvBuffer, PointToPointCollectives.equal(count, size), type);
    }

    private synchronized BindingTransport internal() {
        if (internal == null) {
            internal = mpiDuplicate();
        }
        return internal;
    }

    @Override
    public final Transport split(int color, int key) {
        return mpiSplit(color, key);
    }

    @Override
    public final Transport duplicate() {
        return mpiDuplicate();
    }

    /**
     * MPI_Comm_idup; on a communicator of one rank, MPI_Comm_dup, which waits for no other rank
     * there. MPICH 4.0.2 hung inside MPI_Comm_idup of a one-rank communicator while a duplicate of a
     * larger one was still pending in the same process: a one-rank context-id round completes at
     * once, so a round that finds the id mask taken retries within the call and never lets the
     * pending duplicate progress. MPI_Comm_dup waits for the mask with the library's lock released.
     */
    @Override
    public final PendingDuplicate startDuplicate() {
        return size() == 1 ? PendingDuplicate.done(mpiDuplicate()) : mpiStartDuplicate();
    }

    @Override
    public final void close() {
        BindingTransport in;
        synchronized (this) {
            in = internal;
            internal = null;
        }
        try {
            matching.close();
            if (in != null) {
                in.close();
            }
        } finally {
            mpiFree();
        }
    }

    // ---- vector collectives, reduce-scatter, prefix reductions ---------------------------
    // One native call when every buffer fits the binding (int counts, maxPieceBytes); otherwise
    // vector collectives run as one point-to-point message per pair on the private duplicate,
    // reduce-scatter as one (piecewise) reduce per block, scan and exscan piece by piece. Where
    // only some ranks can know that a buffer is too large (scatterV, gatherV, allToAllV: the
    // blocks of other ranks are unknown), the ranks agree on the path with one one-integer
    // allreduce first.

    /** True on every rank when {@code mine} is true on any (one MAX allreduce of one int; collective). */
    boolean anyRank(boolean mine) {
        try (HostBuffer flags = HostBuffer.allocate(8)) {
            flags.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
            mpiAllReduce(region(flags, 0, 4), region(flags, 4, 4), 1, DataType.INT, ReduceOp.MAX);
            return flags.segment().get(java.lang.foreign.ValueLayout.JAVA_INT, 4) != 0;
        }
    }

    private boolean fits(Blocks b, DataType type) {
        return b == null || fits(type.bytes(b.span()));
    }

    private static Region whole(Buffer b, Blocks blocks, DataType type) {
        return b == null ? null : region(b, 0, type.bytes(blocks.span()));
    }

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        if (!anyRank(!fits(type.bytes(recvCount)) || !fits(sendBlocks, type))) {
            mpiScatterV(whole(sendBuffer, sendBlocks, type), sendBlocks == null ? null : sendBlocks.intCounts(),
                    sendBlocks == null ? null : sendBlocks.intDisplacements(), region(recvBuffer, 0, type.bytes(recvCount)), (int) recvCount, type, root);
            return;
        }
        PointToPointCollectives.scatterV(internal(), sendBuffer, sendBlocks, recvBuffer, recvCount, type, root);
    }

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        if (!anyRank(!fits(type.bytes(sendCount)) || !fits(recvBlocks, type))) {
            mpiGatherV(region(sendBuffer, 0, type.bytes(sendCount)), (int) sendCount, whole(recvBuffer, recvBlocks, type),
                    recvBlocks == null ? null : recvBlocks.intCounts(), recvBlocks == null ? null : recvBlocks.intDisplacements(), type, root);
            return;
        }
        PointToPointCollectives.gatherV(internal(), sendBuffer, sendCount, recvBuffer, recvBlocks, type, root);
    }

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        // every rank knows every count (recvBlocks is the same everywhere): no agreement needed
        if (fits(type.bytes(recvBlocks.largest())) && fits(recvBlocks, type)) {
            mpiAllGatherV(region(sendBuffer, 0, type.bytes(sendCount)), (int) sendCount, whole(recvBuffer, recvBlocks, type),
                    recvBlocks.intCounts(), recvBlocks.intDisplacements(), type);
            return;
        }
        PointToPointCollectives.allToAllV(internal(), sendBuffer, PointToPointCollectives.everyRank(sendCount, size), recvBuffer, recvBlocks, type);
    }

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        if (!anyRank(!fits(sendBlocks, type) || !fits(recvBlocks, type))) {
            mpiAllToAllV(whole(sendBuffer, sendBlocks, type), sendBlocks.intCounts(), sendBlocks.intDisplacements(),
                    whole(recvBuffer, recvBlocks, type), recvBlocks.intCounts(), recvBlocks.intDisplacements(), type);
            return;
        }
        PointToPointCollectives.allToAllV(internal(), sendBuffer, sendBlocks, recvBuffer, recvBlocks, type);
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        checkReduces("reduceScatterBlock", type, op);
        long bytes = type.bytes(recvCount);
        if (fits(bytes * size())) {
            mpiReduceScatterBlock(region(sendBuffer, 0, bytes * size()), region(recvBuffer, 0, bytes), (int) recvCount, type, op);
            return;
        }
        long[] counts = new long[size()];
        java.util.Arrays.fill(counts, recvCount);
        reduceScatterOtherwise(sendBuffer, recvBuffer, Blocks.contiguous(counts), type, op);
    }

    /**
     * MPI_Reduce_scatter on device memory is left out: Open MPI's CUDA support (coll/cuda) stages
     * reduce, allreduce, reduce_scatter_block, scan and exscan, but not reduce_scatter, whose host
     * algorithms may reduce in device memory with the CPU. So where a rank passes device memory,
     * every rank runs it as one reduce per block (they agree first, where device memory can come).
     */
    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        checkReduces("reduceScatter", type, op);
        boolean device = supportsDeviceBuffers() && anyRank(sendBuffer.kind().needsCuda() || recvBuffer.kind().needsCuda());
        if (fits(type.bytes(blocks.total())) && !device) {
            mpiReduceScatter(region(sendBuffer, 0, type.bytes(blocks.total())), region(recvBuffer, 0, blocks.bytes(rank(), type)),
                    blocks.intCounts(), type, op);
            return;
        }
        reduceScatterOtherwise(sendBuffer, recvBuffer, blocks, type, op);
    }

    /** Reduce-scatter that is not one native call (buffers over the piece limit, device memory): one reduce per block to its rank. */
    private void reduceScatterOtherwise(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        int n = size(), me = rank();
        for (int r = 0; r < n; r++) {
            reduce(blocks.block(sendBuffer, r, type), r == me ? recvBuffer : null, blocks.count(r), type, op, r);
        }
    }

    @Override
    public void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkReduces("scan", type, op);
        long step = piece(type);
        long done = 0;
        do {
            int n = (int) Math.min(step, count - done);
            long off = type.bytes(done), len = type.bytes(n);
            mpiScan(region(sendBuffer, off, len), region(recvBuffer, off, len), n, type, op);
            done += n;
        } while (done < count);
    }

    @Override
    public void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkReduces("exscan", type, op);
        long step = piece(type);
        // rank 0 (recvBuffer null) gives MPI memory of its own: what MPI may do with rank 0's buffer is undefined
        try (HostBuffer scratch = recvBuffer == null ? HostBuffer.allocate(Math.max(1, type.bytes(Math.min(step, count)))) : null) {
            long done = 0;
            do {
                int n = (int) Math.min(step, count - done);
                long off = type.bytes(done), len = type.bytes(n);
                mpiExscan(region(sendBuffer, off, len), recvBuffer == null ? region(scratch, 0, len) : region(recvBuffer, off, len), n, type, op);
                done += n;
            } while (done < count);
        }
    }

    /** A receive whose byte count is checked as whole elements of the receive type on completion. */
    private static final class CheckedReceive implements Request {
        private final Request receive;
        private final DataType type;
        private final String op;

        CheckedReceive(Request receive, DataType type, String op) {
            this.receive = receive;
            this.type = type;
            this.op = op;
        }

        @Override
        public Status waitFor() {
            return checked(receive.waitFor(), type, op);
        }

        @Override
        public Optional<Status> test() {
            return receive.test().map(s -> checked(s, type, op));
        }

        @Override
        public boolean cancel() {
            return receive.cancel();
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

    // ---- probing and matched messages -----------------------------------------------------
    // A Ferry message is one MPI message (see above), so MPI's probe reports its whole size.

    /**
     * A message matched by the binding's {@link #mpiMprobe} or {@link #mpiImprobe}: its status
     * (the whole message's byte count) and the binding's handle of it ({@code MPI_Message}), which
     * only {@link #mpiMrecv} or {@link #mpiImrecv} may use, once.
     */
    public record Probed(Status status, Object handle) {
    }

    // While receives wait to be matched by Ferry (MatchedReceives), probes see what MPI would show
    // after those receives took their messages.

    @Override
    public Status probe(int source, int tag) {
        return matching.active() ? matching.await(() -> matching.iprobe(source, tag)) : mpiProbe(source, tag);
    }

    @Override
    public Optional<Status> iprobe(int source, int tag) {
        return matching.active() ? matching.iprobe(source, tag) : mpiIprobe(source, tag);
    }

    @Override
    public MatchedMessage mprobe(int source, int tag) {
        return matching.active() ? matching.await(() -> matching.improbe(source, tag, BindingMessage::new)) : new BindingMessage(mpiMprobe(source, tag));
    }

    @Override
    public Optional<MatchedMessage> improbe(int source, int tag) {
        return matching.active() ? matching.improbe(source, tag, BindingMessage::new) : mpiImprobe(source, tag).map(BindingMessage::new);
    }

    /** A matched message of the binding; the front calls recv or irecv once, with checked arguments. */
    private final class BindingMessage implements MatchedMessage {
        private final Probed probed;
        private volatile boolean received;

        BindingMessage(Probed probed) {
            this.probed = probed;
        }

        @Override
        public Status status() {
            return probed.status();
        }

        @Override
        public boolean isReceived() {
            return received;
        }

        /**
         * A message longer than the buffer is received whole into host memory of its own, the
         * buffer gets its first bytes and {@link TruncationException} is thrown: a truncated
         * rendezvous receive would leave its sender waiting on some transports (see mpiRecv).
         */
        @Override
        public Status recv(Buffer buffer, long count, DataType type) {
            received = true;
            long room = type.bytes(count), n = probed.status().byteCount();
            if (n <= room) {
                return checked(mpiMrecv(probed, region(buffer, 0, n)), type, "recv");
            }
            try (HostBuffer whole = HostBuffer.allocate(n)) {
                mpiMrecv(probed, region(whole, 0, n));
                if (buffer.kind().isHostAccessible()) {
                    MemorySegment.copy(whole.segment(), 0, MemorySegment.ofAddress(buffer.address()).reinterpret(room), 0, room);
                } else {
                    DeviceSupport.get().copyToDevice(buffer.address(), whole, room);
                }
            }
            throw mpiTruncation("MPI_Mrecv of the message matched from rank " + probed.status().source() + " tag " + probed.status().tag()
                    + " (message of " + n + " bytes is longer than the receive count of " + room + " bytes)");
        }

        @Override
        public Request irecv(Buffer buffer, long count, DataType type) {
            received = true;
            return new CheckedReceive(mpiImrecv(probed, region(buffer, 0, probed.status().byteCount())), type, "irecv");
        }
    }

    /**
     * Whether every {@link #irecv} is matched by Ferry first, not only those on device memory and
     * over the piece limit: under {@code ferry.matchReceives=all}, and for bindings whose library
     * must never see a truncating receive of any memory.
     */
    protected boolean matchesEveryReceive() {
        return MATCH_ALL_RECEIVES;
    }

    /** MPI_Probe: the status of the next matching message, with its whole byte count. */
    protected abstract Status mpiProbe(int source, int tag);

    /** MPI_Iprobe. */
    protected abstract Optional<Status> mpiIprobe(int source, int tag);

    /** MPI_Mprobe. */
    protected abstract Probed mpiMprobe(int source, int tag);

    /** MPI_Improbe. */
    protected abstract Optional<Probed> mpiImprobe(int source, int tag);

    /**
     * MPI_Mrecv of the whole message into {@code into}, which is exactly the message's size (it
     * may exceed {@link #maxPieceBytes()}: then as one large-count or derived-datatype receive).
     */
    protected abstract Status mpiMrecv(Probed message, Region into);

    /** MPI_Imrecv, as {@link #mpiMrecv}. */
    protected abstract Request mpiImrecv(Probed message, Region into);

    /** The binding's {@link TruncationException} (its MPI_ERR_TRUNCATE) for {@code what}. */
    protected abstract TruncationException mpiTruncation(String what);

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

    /** {@code sendBuffer}, {@code sendCounts}, {@code displacements} null except at root; counts and displacements in elements. */
    protected abstract void mpiScatterV(Region sendBuffer, int[] sendCounts, int[] displacements, Region recvBuffer, int recvCount, DataType type, int root);

    /** {@code recvBuffer}, {@code recvCounts}, {@code displacements} null except at root. */
    protected abstract void mpiGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type, int root);

    protected abstract void mpiAllGatherV(Region sendBuffer, int sendCount, Region recvBuffer, int[] recvCounts, int[] displacements, DataType type);

    protected abstract void mpiAllToAllV(Region sendBuffer, int[] sendCounts, int[] sendDisplacements, Region recvBuffer, int[] recvCounts,
                                         int[] recvDisplacements, DataType type);

    protected abstract void mpiReduceScatterBlock(Region sendBuffer, Region recvBuffer, int recvCount, DataType type, ReduceOp op);

    protected abstract void mpiReduceScatter(Region sendBuffer, Region recvBuffer, int[] recvCounts, DataType type, ReduceOp op);

    protected abstract void mpiScan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op);

    /** {@code recvBuffer} is never null (rank 0 gets scratch memory). */
    protected abstract void mpiExscan(Region sendBuffer, Region recvBuffer, int count, DataType type, ReduceOp op);

    /** {@code color} -1: MPI_UNDEFINED, return null. */
    protected abstract BindingTransport mpiSplit(int color, int key);

    protected abstract BindingTransport mpiDuplicate();

    /**
     * MPI_Comm_idup: returns at once (a local call); the pending duplicate's {@code finish} completes
     * the library's request and returns the new communicator.
     */
    protected abstract PendingDuplicate mpiStartDuplicate();

    protected abstract void mpiFree();
}
