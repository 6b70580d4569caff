package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.BufferOverlapException;
import dev.ferry.BufferReadOnlyException;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidTagException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.spi.CallTracker.Op;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Checks every argument of every {@link Communicator} operation, then hands the call to the
 * backend's {@code do*} method. Backends extend this (directly, or through
 * {@link BindingCommunicator}) so that a bad argument is always the same specific exception,
 * thrown before any native call, whatever the backend.
 *
 * <p>It also applies the threading contract ({@link Communicator#threadLevel()}) and records each
 * call in progress for the watchdog ({@code ferry.timeout}) and for the exit path of
 * {@link MpiLifecycle}; requests returned by {@code doIsend}/{@code doIrecv} are wrapped so that
 * {@link Request#waitFor()} and {@link Request#test()} are covered too.
 */
public abstract class AbstractCommunicator implements Communicator {
    private static final AtomicLong IDS = new AtomicLong();
    private static final AtomicLong OPEN = new AtomicLong();
    private static final VarHandle COLLECTIVE_OWNER;

    static {
        try {
            COLLECTIVE_OWNER = MethodHandles.lookup().findVarHandle(AbstractCommunicator.class, "collectiveOwner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long id = IDS.incrementAndGet();
    private final String backend;
    private final int rank;
    private final int size;
    private final int maxTag;
    private final ThreadLevel threadLevel;
    private volatile boolean closed;
    @SuppressWarnings("unused") // through COLLECTIVE_OWNER
    private volatile Thread collectiveOwner;

    protected AbstractCommunicator(String backend, int rank, int size, int maxTag) {
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.maxTag = maxTag;
        this.threadLevel = MpiLifecycle.threadLevel();
        OPEN.incrementAndGet();
    }

    /** Communicators of this process created and not yet closed (all backends; for leak checks and reports). */
    public static long openCount() {
        return OPEN.get();
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
    public final String backend() {
        return backend;
    }

    @Override
    public final int maxTag() {
        return maxTag;
    }

    @Override
    public final boolean isClosed() {
        return closed;
    }

    @Override
    public final ThreadLevel threadLevel() {
        return threadLevel;
    }

    /** Process-unique number of this communicator, for messages. */
    public final long id() {
        return id;
    }

    /** Why device buffers are refused, for the exception message; only asked when {@link #supportsDeviceBuffers()} is false. */
    protected String deviceBuffersUnsupportedReason() {
        return "backend " + backend + " cannot carry device buffers; use -Dferry.backend=staged";
    }

    // ---- point to point ------------------------------------------------------------------

    @Override
    public final void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        ensureOpen("send");
        checkData("send", "buffer", buffer, count, type, 1);
        checkPeer("send", "destination", dest, false);
        checkTag("send", tag, false);
        run(Op.SEND, dest, tag, -2, -2, count, type, () -> {
            doSend(buffer, count, type, dest, tag);
            return null;
        }, buffer);
    }

    @Override
    public final Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        ensureOpen("recv");
        checkData("recv", "buffer", buffer, count, type, 1);
        checkWritable("recv", "buffer", buffer);
        checkPeer("recv", "source", source, true);
        checkTag("recv", tag, true);
        return run(Op.RECV, source, tag, -2, -2, count, type, () -> doRecv(buffer, count, type, source, tag), buffer);
    }

    @Override
    public final Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        ensureOpen("isend");
        checkData("isend", "buffer", buffer, count, type, 1);
        checkPeer("isend", "destination", dest, false);
        checkTag("isend", tag, false);
        return start(Op.ISEND, dest, tag, count, type, () -> doIsend(buffer, count, type, dest, tag), buffer);
    }

    @Override
    public final Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
        ensureOpen("irecv");
        checkData("irecv", "buffer", buffer, count, type, 1);
        checkWritable("irecv", "buffer", buffer);
        checkPeer("irecv", "source", source, true);
        checkTag("irecv", tag, true);
        return start(Op.IRECV, source, tag, count, type, () -> doIrecv(buffer, count, type, source, tag), buffer);
    }

    @Override
    public final Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                 Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        ensureOpen("sendRecv");
        checkData("sendRecv", "send buffer", sendBuffer, sendCount, sendType, 1);
        checkData("sendRecv", "receive buffer", recvBuffer, recvCount, recvType, 1);
        checkWritable("sendRecv", "receive buffer", recvBuffer);
        checkPeer("sendRecv", "destination", dest, false);
        checkPeer("sendRecv", "source", source, true);
        checkTag("sendRecv", sendTag, false);
        checkTag("sendRecv", recvTag, true);
        checkDisjoint("sendRecv", sendBuffer, sendType.bytes(sendCount), recvBuffer, recvType.bytes(recvCount));
        return run(Op.SEND_RECV, dest, sendTag, source, recvTag, recvCount, recvType,
                () -> doSendRecv(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag),
                sendBuffer, recvBuffer);
    }

    // ---- collectives ---------------------------------------------------------------------

    @Override
    public final void barrier() {
        ensureOpen("barrier");
        run(Op.BARRIER, -2, -2, -2, -2, -1, null, () -> {
            doBarrier();
            return null;
        });
    }

    @Override
    public final void broadcast(Buffer buffer, long count, DataType type, int root) {
        ensureOpen("broadcast");
        checkData("broadcast", "buffer", buffer, count, type, 1);
        checkPeer("broadcast", "root", root, false);
        if (rank != root) {
            checkWritable("broadcast", "buffer (at a non-root rank)", buffer);
        }
        run(Op.BROADCAST, root, -2, -2, -2, count, type, () -> {
            doBroadcast(buffer, count, type, root);
            return null;
        }, buffer);
    }

    @Override
    public final void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        ensureOpen("scatter");
        checkPeer("scatter", "root", root, false);
        checkData("scatter", "receive buffer", recvBuffer, count, type, 1);
        checkWritable("scatter", "receive buffer", recvBuffer);
        if (rank == root) {
            checkData("scatter", "send buffer (at root)", sendBuffer, count, type, size);
            checkDisjoint("scatter", sendBuffer, type.bytes(count) * size, recvBuffer, type.bytes(count));
        }
        Buffer send = rank == root ? sendBuffer : null;
        run(Op.SCATTER, root, -2, -2, -2, count, type, () -> {
            doScatter(send, recvBuffer, count, type, root);
            return null;
        }, send, recvBuffer);
    }

    @Override
    public final void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        ensureOpen("gather");
        checkPeer("gather", "root", root, false);
        checkData("gather", "send buffer", sendBuffer, count, type, 1);
        if (rank == root) {
            checkData("gather", "receive buffer (at root)", recvBuffer, count, type, size);
            checkWritable("gather", "receive buffer (at root)", recvBuffer);
            checkDisjoint("gather", sendBuffer, type.bytes(count), recvBuffer, type.bytes(count) * size);
        }
        Buffer recv = rank == root ? recvBuffer : null;
        run(Op.GATHER, root, -2, -2, -2, count, type, () -> {
            doGather(sendBuffer, recv, count, type, root);
            return null;
        }, sendBuffer, recv);
    }

    @Override
    public final void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        ensureOpen("allGather");
        checkData("allGather", "send buffer", sendBuffer, count, type, 1);
        checkData("allGather", "receive buffer", recvBuffer, count, type, size);
        checkWritable("allGather", "receive buffer", recvBuffer);
        checkDisjoint("allGather", sendBuffer, type.bytes(count), recvBuffer, type.bytes(count) * size);
        run(Op.ALL_GATHER, -2, -2, -2, -2, count, type, () -> {
            doAllGather(sendBuffer, recvBuffer, count, type);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        ensureOpen("reduce");
        checkPeer("reduce", "root", root, false);
        checkOp("reduce", op, type);
        checkData("reduce", "send buffer", sendBuffer, count, type, 1);
        if (rank == root) {
            checkData("reduce", "receive buffer (at root)", recvBuffer, count, type, 1);
            checkWritable("reduce", "receive buffer (at root)", recvBuffer);
            checkDisjoint("reduce", sendBuffer, type.bytes(count), recvBuffer, type.bytes(count));
        }
        Buffer recv = rank == root ? recvBuffer : null;
        run(Op.REDUCE, root, -2, -2, -2, count, type, () -> {
            doReduce(sendBuffer, recv, count, type, op, root);
            return null;
        }, sendBuffer, recv);
    }

    @Override
    public final void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        ensureOpen("allReduce");
        checkOp("allReduce", op, type);
        checkData("allReduce", "send buffer", sendBuffer, count, type, 1);
        checkData("allReduce", "receive buffer", recvBuffer, count, type, 1);
        checkWritable("allReduce", "receive buffer", recvBuffer);
        checkDisjoint("allReduce", sendBuffer, type.bytes(count), recvBuffer, type.bytes(count));
        run(Op.ALL_REDUCE, -2, -2, -2, -2, count, type, () -> {
            doAllReduce(sendBuffer, recvBuffer, count, type, op);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        ensureOpen("allToAll");
        checkData("allToAll", "send buffer", sendBuffer, count, type, size);
        checkData("allToAll", "receive buffer", recvBuffer, count, type, size);
        checkWritable("allToAll", "receive buffer", recvBuffer);
        checkDisjoint("allToAll", sendBuffer, type.bytes(count) * size, recvBuffer, type.bytes(count) * size);
        run(Op.ALL_TO_ALL, -2, -2, -2, -2, count, type, () -> {
            doAllToAll(sendBuffer, recvBuffer, count, type);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final Communicator split(int color, int key) {
        ensureOpen("split");
        CallTracker.Slot s = enter(Op.SPLIT, color, key, -2, -2, -1, null);
        try {
            return doSplit(color < 0 ? -1 : color, key);
        } finally {
            CallTracker.exit(s);
        }
    }

    @Override
    public final Communicator duplicate() {
        ensureOpen("duplicate");
        CallTracker.Slot s = enter(Op.DUPLICATE, -2, -2, -2, -2, -1, null);
        try {
            return doDuplicate();
        } finally {
            CallTracker.exit(s);
        }
    }

    @Override
    public final void close() {
        if (!closed) {
            closed = true;
            OPEN.decrementAndGet();
            doClose();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "#" + id + "[" + backend + ", rank " + rank + " of " + size + (closed ? ", closed" : "") + "]";
    }

    // ---- vector collectives, reduce-scatter, prefix reductions ---------------------------

    @Override
    public final void scatterV(Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount, DataType type, int root) {
        String op = "scatterV";
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        checkData(op, "receive buffer", recvBuffer, recvCount, type, 1);
        checkWritable(op, "receive buffer", recvBuffer);
        Blocks blocks = null;
        if (rank == root) {
            blocks = checkBlocks(op, "send buffer (at root)", sendBuffer, "sendCounts", sendCounts, "displacements", displacements, type, false);
            checkOwnBlock(op, "sendCounts[" + root + "] at root", blocks.count(rank), "recvCount", recvCount);
            checkDisjoint(op, sendBuffer, type.bytes(blocks.span()), recvBuffer, type.bytes(recvCount));
        }
        Buffer send = rank == root ? sendBuffer : null;
        Blocks sendBlocks = blocks;
        run(Op.SCATTER_V, root, -2, -2, -2, recvCount, type, () -> {
            doScatterV(send, sendBlocks, recvBuffer, recvCount, type, root);
            return null;
        }, send, recvBuffer);
    }

    @Override
    public final void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type, int root) {
        String op = "gatherV";
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        checkData(op, "send buffer", sendBuffer, sendCount, type, 1);
        Blocks blocks = null;
        if (rank == root) {
            blocks = checkBlocks(op, "receive buffer (at root)", recvBuffer, "recvCounts", recvCounts, "displacements", displacements, type, true);
            checkOwnBlock(op, "recvCounts[" + root + "] at root", blocks.count(rank), "sendCount", sendCount);
            checkDisjoint(op, sendBuffer, type.bytes(sendCount), recvBuffer, type.bytes(blocks.span()));
        }
        Buffer recv = rank == root ? recvBuffer : null;
        Blocks recvBlocks = blocks;
        run(Op.GATHER_V, root, -2, -2, -2, sendCount, type, () -> {
            doGatherV(sendBuffer, sendCount, recv, recvBlocks, type, root);
            return null;
        }, sendBuffer, recv);
    }

    @Override
    public final void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type) {
        String op = "allGatherV";
        ensureOpen(op);
        checkData(op, "send buffer", sendBuffer, sendCount, type, 1);
        Blocks blocks = checkBlocks(op, "receive buffer", recvBuffer, "recvCounts", recvCounts, "displacements", displacements, type, true);
        checkOwnBlock(op, "recvCounts[" + rank + "]", blocks.count(rank), "sendCount", sendCount);
        checkDisjoint(op, sendBuffer, type.bytes(sendCount), recvBuffer, type.bytes(blocks.span()));
        run(Op.ALL_GATHER_V, -2, -2, -2, -2, sendCount, type, () -> {
            doAllGatherV(sendBuffer, sendCount, recvBuffer, blocks, type);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void allToAllV(Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                                long[] recvDisplacements, DataType type) {
        String op = "allToAllV";
        ensureOpen(op);
        Blocks send = checkBlocks(op, "send buffer", sendBuffer, "sendCounts", sendCounts, "sendDisplacements", sendDisplacements, type, false);
        Blocks recv = checkBlocks(op, "receive buffer", recvBuffer, "recvCounts", recvCounts, "recvDisplacements", recvDisplacements, type, true);
        checkOwnBlock(op, "sendCounts[" + rank + "]", send.count(rank), "recvCounts[" + rank + "]", recv.count(rank));
        checkDisjoint(op, sendBuffer, type.bytes(send.span()), recvBuffer, type.bytes(recv.span()));
        run(Op.ALL_TO_ALL_V, -2, -2, -2, -2, recv.total(), type, () -> {
            doAllToAllV(sendBuffer, send, recvBuffer, recv, type);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        String name = "reduceScatterBlock";
        ensureOpen(name);
        checkOp(name, op, type);
        checkData(name, "send buffer", sendBuffer, recvCount, type, size);
        checkData(name, "receive buffer", recvBuffer, recvCount, type, 1);
        checkWritable(name, "receive buffer", recvBuffer);
        checkDisjoint(name, sendBuffer, type.bytes(recvCount) * size, recvBuffer, type.bytes(recvCount));
        run(Op.REDUCE_SCATTER_BLOCK, -2, -2, -2, -2, recvCount, type, () -> {
            doReduceScatterBlock(sendBuffer, recvBuffer, recvCount, type, op);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op) {
        String name = "reduceScatter";
        ensureOpen(name);
        checkOp(name, op, type);
        checkCounts(name, "recvCounts", recvCounts);
        Blocks blocks;
        try {
            blocks = Blocks.contiguous(recvCounts);
        } catch (ArithmeticException e) {
            throw new InvalidCountException(name + ": the sum of recvCounts overflows a long");
        }
        checkData(name, "send buffer", sendBuffer, blocks.total(), type, 1);
        checkData(name, "receive buffer", recvBuffer, blocks.count(rank), type, 1);
        checkWritable(name, "receive buffer", recvBuffer);
        checkDisjoint(name, sendBuffer, type.bytes(blocks.total()), recvBuffer, type.bytes(blocks.count(rank)));
        run(Op.REDUCE_SCATTER, -2, -2, -2, -2, blocks.count(rank), type, () -> {
            doReduceScatter(sendBuffer, recvBuffer, blocks, type, op);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("scan", sendBuffer, recvBuffer, count, type, op, true);
        run(Op.SCAN, -2, -2, -2, -2, count, type, () -> {
            doScan(sendBuffer, recvBuffer, count, type, op);
            return null;
        }, sendBuffer, recvBuffer);
    }

    @Override
    public final void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("exscan", sendBuffer, recvBuffer, count, type, op, rank != 0 || recvBuffer != null);
        Buffer recv = rank == 0 ? null : recvBuffer; // rank 0's is never written, whatever the library would do with it
        run(Op.EXSCAN, -2, -2, -2, -2, count, type, () -> {
            doExscan(sendBuffer, recv, count, type, op);
            return null;
        }, sendBuffer, recv);
    }

    /** The checks of scan and exscan: those of allReduce ({@code withRecv} false: rank 0 of an exscan without a receive buffer). */
    private void checkPrefix(String name, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, boolean withRecv) {
        ensureOpen(name);
        checkOp(name, op, type);
        checkData(name, "send buffer", sendBuffer, count, type, 1);
        if (withRecv) {
            checkData(name, "receive buffer", recvBuffer, count, type, 1);
            checkWritable(name, "receive buffer", recvBuffer);
            checkDisjoint(name, sendBuffer, type.bytes(count), recvBuffer, type.bytes(count));
        }
    }

    // ---- one call: tracking, buffer pins, device ordering -----------------------------------

    /**
     * Runs a blocking operation: tracked for the threading rules and the watchdog, its buffers
     * pinned (so that closing them from another thread cannot free them under the call), and
     * ordered after the caller's device work when any buffer is device memory.
     */
    private <T> T run(Op op, int peer, int tag, int peer2, int tag2, long count, DataType type, java.util.function.Supplier<T> body, Buffer... buffers) {
        CallTracker.Slot s = enter(op, peer, tag, peer2, tag2, count, type);
        try (BufferUse use = BufferUse.of(buffers)) {
            return body.get();
        } finally {
            CallTracker.exit(s);
        }
    }

    /** Starts a non-blocking operation; its buffers stay pinned until the request completes. */
    private Request start(Op op, int peer, int tag, long count, DataType type, java.util.function.Supplier<Request> body, Buffer... buffers) {
        CallTracker.Slot s = enter(op, peer, tag, -2, -2, count, type);
        try (BufferUse use = BufferUse.of(buffers)) {
            Request r = body.get();
            return new TrackedRequest(this, r, op, peer, tag, count, type, use.handOff());
        } finally {
            CallTracker.exit(s);
        }
    }

    // ---- threads and the watchdog --------------------------------------------------------

    private CallTracker.Slot enter(Op op, int peer, int tag, int peer2, int tag2, long count, DataType type) {
        return CallTracker.enter(this, threadLevel, op, this, peer, tag, peer2, tag2, count, type);
    }

    /** Claims this communicator's collectives for {@code me}; null when claimed, else the thread that holds them. */
    final Thread claimCollective(Thread me) {
        Thread other = (Thread) COLLECTIVE_OWNER.compareAndExchange(this, (Thread) null, me);
        return other == null || other == me ? null : other;
    }

    final Thread collectiveOwner() {
        return collectiveOwner;
    }

    final void releaseCollective() {
        COLLECTIVE_OWNER.setRelease(this, (Thread) null); // a release store, as a lock's unlock
    }

    /** A backend request with the threading rules, the watchdog and the liveness check around waitFor and test. */
    private static final class TrackedRequest implements Request {
        private final AbstractCommunicator comm;
        private final Request inner;
        private final Op op;
        private final int peer;
        private final int tag;
        private final long count;
        private final DataType type;
        private BufferUse.Pins pins; // released once, when the request completes

        TrackedRequest(AbstractCommunicator comm, Request inner, Op op, int peer, int tag, long count, DataType type, BufferUse.Pins pins) {
            this.comm = comm;
            this.inner = inner;
            this.op = op;
            this.peer = peer;
            this.tag = tag;
            this.count = count;
            this.type = type;
            this.pins = pins;
        }

        private synchronized void completed() {
            BufferUse.Pins p = pins;
            pins = null;
            if (p != null) {
                p.release();
            }
        }

        private void ensureMpi(String what) {
            if (MpiLifecycle.isFinalized()) {
                throw new CommunicatorClosedException(what + " of " + this + ": MPI was finalized (Ferry.shutdown or exit)");
            }
        }

        @Override
        public Status waitFor() {
            ensureMpi("waitFor");
            CallTracker.Slot s = CallTracker.enter(null, comm.threadLevel, Op.WAIT, this, -2, -2, -2, -2, -1, null);
            try (DeviceSupport.Scope ctx = pins != null && pins.device() ? DeviceSupport.get().preserveContext() : DeviceSupport.Scope.NONE) {
                Status st = inner.waitFor();
                completed();
                return st;
            } catch (RuntimeException e) {
                completed(); // the operation ended (failed): its memory is not in use any more
                throw e;
            } finally {
                CallTracker.exit(s);
            }
        }

        @Override
        public Optional<Status> test() {
            ensureMpi("test");
            CallTracker.Slot s = CallTracker.enter(null, comm.threadLevel, Op.TEST, this, -2, -2, -2, -2, -1, null);
            try (DeviceSupport.Scope ctx = pins != null && pins.device() ? DeviceSupport.get().preserveContext() : DeviceSupport.Scope.NONE) {
                Optional<Status> st = inner.test();
                if (st.isPresent()) {
                    completed();
                }
                return st;
            } catch (RuntimeException e) {
                completed();
                throw e;
            } finally {
                CallTracker.exit(s);
            }
        }

        @Override
        public String toString() {
            return "request " + CallTracker.format(op, comm, peer, tag, -2, -2, count, type);
        }
    }

    // ---- checks --------------------------------------------------------------------------

    protected final void ensureOpen(String op) {
        if (closed) {
            throw new CommunicatorClosedException(op + ": the communicator was closed");
        }
        if (MpiLifecycle.isFinalized()) {
            throw new CommunicatorClosedException(op + ": MPI was finalized (Ferry.shutdown() or JVM exit); no communicator can be used afterwards");
        }
    }

    /**
     * Checks that {@code buffer} is usable for {@code blocks * count} elements of {@code type}:
     * non-null, alive, of a kind this backend carries, and large enough.
     */
    protected final void checkData(String op, String what, Buffer buffer, long count, DataType type, int blocks) {
        if (type == null) {
            throw new InvalidArgumentException(op + ": datatype is null");
        }
        if (count < 0) {
            throw new InvalidCountException(op + ": count " + count + " is negative");
        }
        if (buffer == null) {
            throw new InvalidArgumentException(op + ": " + what + " is null");
        }
        buffer.checkAlive();
        if (buffer.kind().needsCuda() && !supportsDeviceBuffers()) {
            throw new UnsupportedBufferException(op + ": " + what + " is " + buffer.kind() + " memory; " + deviceBuffersUnsupportedReason());
        }
        long bytes = type.bytes(count);
        long needed;
        try {
            needed = Math.multiplyExact(bytes, (long) blocks);
        } catch (ArithmeticException e) {
            throw new InvalidCountException(op + ": " + blocks + " blocks of " + count + " " + type + " overflow a byte size");
        }
        if (needed > buffer.byteSize()) {
            throw new BufferTooSmallException(op + ": " + what + " holds " + buffer.byteSize() + " bytes but "
                    + (blocks == 1 ? "" : blocks + " ranks x ") + count + " " + type + " need " + needed + " bytes");
        }
    }

    /** A receive buffer must be writable memory. */
    protected static void checkWritable(String op, String what, Buffer buffer) {
        if (buffer != null && buffer.isReadOnly()) {
            throw new BufferReadOnlyException(op + ": " + what + " " + buffer + " is read-only memory and cannot receive data");
        }
    }

    protected final void checkPeer(String op, String what, int peer, boolean wildcard) {
        if (wildcard && peer == ANY_SOURCE) {
            return;
        }
        if (peer < 0 || peer >= size) {
            throw new InvalidRankException(op + ": " + what + " rank " + peer + " is outside [0, " + size + ")"
                    + (wildcard ? " and is not ANY_SOURCE" : ""));
        }
    }

    protected final void checkTag(String op, int tag, boolean wildcard) {
        if (wildcard && tag == ANY_TAG) {
            return;
        }
        if (tag < 0 || tag > maxTag) {
            throw new InvalidTagException(op + ": tag " + tag + " is outside [0, " + maxTag + "]" + (wildcard ? " and is not ANY_TAG" : ""));
        }
    }

    private static void checkOp(String op, ReduceOp reduceOp, DataType type) {
        if (reduceOp == null) {
            throw new InvalidArgumentException(op + ": reduce operator is null");
        }
        if (type != null) {
            reduceOp.check(op, type);
        }
    }

    private static void checkDisjoint(String op, Buffer a, long aBytes, Buffer b, long bBytes) {
        if (aBytes == 0 || bBytes == 0 || a.kind().isHostAccessible() != b.kind().isHostAccessible() || a.device() != b.device()) {
            return;
        }
        long a0 = a.address(), b0 = b.address();
        if (a0 < b0 + bBytes && b0 < a0 + aBytes) {
            throw new BufferOverlapException(op + ": send and receive buffers overlap ([0x" + Long.toHexString(a0) + ", +" + aBytes
                    + ") and [0x" + Long.toHexString(b0) + ", +" + bBytes + ")); MPI forbids aliased buffers: use two buffers");
        }
    }

    /** An array of one entry per rank: not null, {@code size} long. */
    private void checkArray(String op, String name, long[] array) {
        if (array == null) {
            throw new InvalidArgumentException(op + ": " + name + " is null");
        }
        if (array.length != size) {
            throw new InvalidArgumentException(op + ": " + name + " has " + array.length + " entries, but the communicator has " + size + " ranks");
        }
    }

    /** Counts of one entry per rank, none negative. */
    private void checkCounts(String op, String name, long[] counts) {
        checkArray(op, name, counts);
        for (int i = 0; i < size; i++) {
            if (counts[i] < 0) {
                throw new InvalidCountException(op + ": " + name + "[" + i + "] = " + counts[i] + " is negative");
            }
        }
    }

    /**
     * Checks the blocks of a vector collective's buffer (see {@link Communicator}): the buffer as
     * {@link #checkData} does, the arrays (one entry per rank, nothing negative), every non-empty
     * block within the buffer and, for a receive buffer, writable memory and no two blocks overlapping.
     */
    private Blocks checkBlocks(String op, String what, Buffer buffer, String countsName, long[] counts, String displacementsName,
                               long[] displacements, DataType type, boolean receive) {
        checkData(op, what, buffer, 0, type, 1);
        checkCounts(op, countsName, counts);
        checkArray(op, displacementsName, displacements);
        for (int i = 0; i < size; i++) {
            if (displacements[i] < 0) {
                throw new InvalidCountException(op + ": " + displacementsName + "[" + i + "] = " + displacements[i] + " is negative");
            }
        }
        Blocks blocks = Blocks.of(counts, displacements);
        for (int i = 0; i < size; i++) {
            long n = blocks.count(i), at = blocks.displacement(i);
            if (n == 0) {
                continue;
            }
            long endBytes;
            try {
                endBytes = type.bytes(Math.addExact(at, n));
            } catch (ArithmeticException | InvalidCountException e) {
                throw new InvalidCountException(op + ": block " + i + " of the " + what + " (" + n + " " + type + " at element " + at + ") overflows a byte size");
            }
            if (endBytes > buffer.byteSize()) {
                throw new BufferTooSmallException(op + ": block " + i + " of the " + what + " (" + countsName + "[" + i + "] = " + n + " " + type
                        + " at " + displacementsName + "[" + i + "] = " + at + ") ends at byte " + endBytes + ", past the buffer's " + buffer.byteSize() + " bytes");
            }
        }
        if (receive) {
            checkWritable(op, what, buffer);
            Integer[] order = new Integer[size];
            for (int i = 0; i < size; i++) {
                order[i] = i;
            }
            java.util.Arrays.sort(order, java.util.Comparator.comparingLong(blocks::displacement));
            int last = -1;
            for (int i : order) {
                if (blocks.count(i) == 0) {
                    continue;
                }
                if (last >= 0 && blocks.displacement(i) < blocks.displacement(last) + blocks.count(last)) {
                    throw new BufferOverlapException(op + ": blocks " + last + " and " + i + " of the " + what + " overlap (elements ["
                            + blocks.displacement(last) + ", +" + blocks.count(last) + ") and [" + blocks.displacement(i) + ", +" + blocks.count(i)
                            + ")); a receive buffer's blocks must be disjoint");
                }
                if (last < 0 || blocks.displacement(i) + blocks.count(i) > blocks.displacement(last) + blocks.count(last)) {
                    last = i;
                }
            }
        }
        return blocks;
    }

    /** A rank's own block: what it sends to itself must be what it receives. */
    private static void checkOwnBlock(String op, String sentName, long sent, String receivedName, long received) {
        if (sent != received) {
            throw new InvalidCountException(op + ": " + sentName + " is " + sent + " but " + receivedName + " is " + received
                    + "; what a rank sends to itself must be what it receives");
        }
    }

    // ---- backend operations: arguments already checked -----------------------------------

    protected abstract void doSend(Buffer buffer, long count, DataType type, int dest, int tag);

    protected abstract Status doRecv(Buffer buffer, long count, DataType type, int source, int tag);

    protected abstract Request doIsend(Buffer buffer, long count, DataType type, int dest, int tag);

    protected abstract Request doIrecv(Buffer buffer, long count, DataType type, int source, int tag);

    protected abstract Status doSendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                         Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag);

    protected abstract void doBarrier();

    protected abstract void doBroadcast(Buffer buffer, long count, DataType type, int root);

    /** {@code sendBuffer} is null except at root. */
    protected abstract void doScatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** {@code recvBuffer} is null except at root. */
    protected abstract void doGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    protected abstract void doAllGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** {@code recvBuffer} is null except at root. */
    protected abstract void doReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root);

    protected abstract void doAllReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    protected abstract void doAllToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** {@code sendBuffer} and {@code sendBlocks} are null except at root. */
    protected abstract void doScatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root);

    /** {@code recvBuffer} and {@code recvBlocks} are null except at root. */
    protected abstract void doGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root);

    protected abstract void doAllGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type);

    protected abstract void doAllToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type);

    protected abstract void doReduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op);

    /** {@code blocks}: the receive counts, laid out one after the other in the send buffer ({@link Blocks#contiguous}). */
    protected abstract void doReduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op);

    protected abstract void doScan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** {@code recvBuffer} is null at rank 0 (whose receive buffer is never written). */
    protected abstract void doExscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** {@code color} is -1 for "in no communicator"; return null then. */
    protected abstract Communicator doSplit(int color, int key);

    protected abstract Communicator doDuplicate();

    /** Frees the native communicator; called once. */
    protected abstract void doClose();
}
