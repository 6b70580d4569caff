// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

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
import dev.ferry.MatchedMessage;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.ThreadingException;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.spi.CallTracker.Op;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The checked front: the one {@link Communicator} implementation, over a backend's
 * {@link Transport}. Every argument of every operation is checked here, written once per
 * operation, so that a bad argument is always the same specific exception, thrown before any
 * native call, whatever the backend; then the call goes to the transport's primitive.
 *
 * <p>Around each call it also applies the threading contract ({@link Communicator#threadLevel()}),
 * records the call in progress for the watchdog ({@code ferry.timeout}) and for the exit path of
 * {@link MpiLifecycle}, pins the buffers for the call (or, for non-blocking calls, until the
 * request completes), turns {@link Communicator#IN_PLACE} into scratch memory, and runs the
 * non-blocking collectives on a {@link CollectiveLane}; requests of {@code isend}/{@code irecv}
 * are wrapped so that {@link Request#waitFor()} and {@link Request#test()} are covered too.
 *
 * <p>On a virtual thread, whose carrier a long native call would hold, the blocking calls take
 * another path, decided here and nowhere else: messages and probes are started without blocking
 * and waited for as requests are ({@link Polling#onVirtualThread}: short tests, then parked while
 * the {@link ProgressThread} tests them); collectives, split and duplicate run on one of Ferry's
 * {@link PlatformThreads} while the virtual thread parks. Platform threads make the blocking call.
 * A provider returns {@code new CheckedCommunicator(transport)}.
 */
public final class CheckedCommunicator implements Communicator {
    private static final AtomicLong IDS = new AtomicLong();
    private static final AtomicLong OPEN = new AtomicLong();
    private static final VarHandle COLLECTIVE_OWNER;

    static {
        try {
            COLLECTIVE_OWNER = MethodHandles.lookup().findVarHandle(CheckedCommunicator.class, "collectiveOwner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long id = IDS.incrementAndGet();
    final dev.ferry.flight.OperationRing flight = dev.ferry.flight.FlightRecorder.register(this); // named by the call that makes it
    private final Transport transport;
    private final String backend;
    private final int rank;
    private final int size;
    private final int maxTag;
    private final ThreadLevel threadLevel;
    private volatile boolean closed;
    private volatile CollectiveLane lane; // made by the first non-blocking collective (a local call)
    @SuppressWarnings("unused") // through COLLECTIVE_OWNER
    private volatile Thread collectiveOwner;

    /** The front over {@code transport}, which it owns from now on (closed by {@link #close()}). */
    public CheckedCommunicator(Transport transport) {
        this.transport = java.util.Objects.requireNonNull(transport, "transport");
        this.backend = transport.backend();
        this.rank = transport.rank();
        this.size = transport.size();
        this.maxTag = transport.maxTag();
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

    /** The transport under this front (for a backend's own diagnostics and tests). */
    public Transport transport() {
        return transport;
    }

    /**
     * The transport of class {@code type} under this front, looking through the transports that
     * forward to another ({@link ForwardingTransport}, the collectives planner among them); null
     * when there is none (a backend's interop: the MPI handle under a communicator).
     */
    public <T extends Transport> T transport(Class<T> type) {
        Transport t = transport;
        while (t != null) {
            if (type.isInstance(t)) return type.cast(t);
            t = t instanceof ForwardingTransport f ? f.inner() : null;
        }
        return null;
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return transport.supportsDeviceBuffers();
    }

    // ---- point to point ------------------------------------------------------------------

    @Override
    public final void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        ensureOpen("send");
        checkData("send", "buffer", buffer, count, type, 1);
        checkPeer("send", "destination", dest, false);
        checkTag("send", tag, false);
        run(Op.SEND, dest, tag, -2, -2, count, type, () -> {
            if (Thread.currentThread().isVirtual()) {
                parked(Op.SEND, dest, tag, count, type, transport.isend(buffer, count, type, dest, tag), buffer);
            } else {
                transport.send(buffer, count, type, dest, tag);
            }
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
        return run(Op.RECV, source, tag, -2, -2, count, type, () -> Thread.currentThread().isVirtual()
                ? parked(Op.RECV, source, tag, count, type, transport.startRecv(buffer, count, type, source, tag), buffer)
                : transport.recv(buffer, count, type, source, tag), buffer);
    }

    @Override
    public final Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        ensureOpen("isend");
        checkData("isend", "buffer", buffer, count, type, 1);
        checkPeer("isend", "destination", dest, false);
        checkTag("isend", tag, false);
        return start(Op.ISEND, dest, tag, count, type, () -> transport.isend(buffer, count, type, dest, tag), buffer);
    }

    @Override
    public final Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
        ensureOpen("irecv");
        checkData("irecv", "buffer", buffer, count, type, 1);
        checkWritable("irecv", "buffer", buffer);
        checkPeer("irecv", "source", source, true);
        checkTag("irecv", tag, true);
        return start(Op.IRECV, source, tag, count, type, () -> transport.irecv(buffer, count, type, source, tag), buffer);
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
        return run(Op.SEND_RECV, dest, sendTag, source, recvTag, recvCount, recvType, () -> Thread.currentThread().isVirtual()
                ? sendRecvParked(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag)
                : transport.sendRecv(sendBuffer, sendCount, sendType, dest, sendTag, recvBuffer, recvCount, recvType, source, recvTag),
                sendBuffer, recvBuffer);
    }

    /**
     * {@code sendRecv} on a virtual thread: the send and the receive started without blocking (the
     * receive as {@link #recv} would receive it), then waited for as {@link #parked} waits; the send
     * is completed whatever the receive does, as the blocking forms complete it.
     */
    private Status sendRecvParked(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                  Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        Request out = transport.isend(sendBuffer, sendCount, sendType, dest, sendTag);
        Status in;
        try {
            in = parked(Op.RECV, source, recvTag, recvCount, recvType, transport.startRecv(recvBuffer, recvCount, recvType, source, recvTag), recvBuffer);
        } catch (RuntimeException e) {
            try {
                parked(Op.SEND, dest, sendTag, sendCount, sendType, out, sendBuffer);
            } catch (RuntimeException e2) {
                e.addSuppressed(e2);
            }
            throw e;
        }
        parked(Op.SEND, dest, sendTag, sendCount, sendType, out, sendBuffer);
        return in;
    }

    // ---- collectives ---------------------------------------------------------------------
    // each collective's checks are written once (check*) and serve its blocking and non-blocking forms

    @Override
    public final void barrier() {
        ensureOpen("barrier");
        collective(Op.BARRIER, -2, -1, null, Transport::barrier);
    }

    @Override
    public final Request ibarrier() {
        ensureOpen("ibarrier");
        return nonBlocking(Op.IBARRIER, Op.BARRIER, -2, -1, null, Transport::barrier);
    }

    private void checkBroadcast(String op, Buffer buffer, long count, DataType type, int root) {
        ensureOpen(op);
        checkData(op, "buffer", buffer, count, type, 1);
        checkPeer(op, "root", root, false);
        if (rank != root) {
            checkWritable(op, "buffer (at a non-root rank)", buffer);
        }
    }

    @Override
    public final void broadcast(Buffer buffer, long count, DataType type, int root) {
        checkBroadcast("broadcast", buffer, count, type, root);
        collective(Op.BROADCAST, root, count, type, t -> t.broadcast(buffer, count, type, root), buffer);
    }

    @Override
    public final Request ibroadcast(Buffer buffer, long count, DataType type, int root) {
        checkBroadcast("ibroadcast", buffer, count, type, root);
        return nonBlocking(Op.IBROADCAST, Op.BROADCAST, root, count, type, t -> t.broadcast(buffer, count, type, root), buffer);
    }

    private void checkScatter(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        boolean inPlace = inPlace(op, "receive buffer", recvBuffer, root);
        if (!inPlace) {
            checkData(op, "receive buffer", recvBuffer, count, type, 1);
            checkWritable(op, "receive buffer", recvBuffer);
        }
        if (rank == root) {
            checkData(op, "send buffer (at root)", sendBuffer, count, type, size);
            if (!inPlace) {
                checkDisjoint(op, sendBuffer, type.bytes(count) * size, recvBuffer, type.bytes(count));
            }
        }
    }

    @Override
    public final void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        checkScatter("scatter", sendBuffer, recvBuffer, count, type, root);
        Buffer send = rank == root ? sendBuffer : null;
        collective(Op.SCATTER, root, count, type, scatterWork(send, recvBuffer, count, type, root), send, real(recvBuffer));
    }

    private static Work scatterWork(Buffer send, Buffer recvBuffer, long count, DataType type, int root) {
        if (recvBuffer == Communicator.IN_PLACE) {
            // the root's own block stays where it is: the transport writes it to scratch that is dropped
            return t -> {
                try (Scratch dropped = Scratch.like(send, type.bytes(count))) {
                    t.scatter(send, dropped.buffer(), count, type, root);
                }
            };
        }
        return t -> t.scatter(send, recvBuffer, count, type, root);
    }

    @Override
    public final Request iscatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        checkScatter("iscatter", sendBuffer, recvBuffer, count, type, root);
        Buffer send = rank == root ? sendBuffer : null;
        return nonBlocking(Op.ISCATTER, Op.SCATTER, root, count, type, scatterWork(send, recvBuffer, count, type, root), send, real(recvBuffer));
    }

    private void checkGather(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        boolean inPlace = inPlace(op, "send buffer", sendBuffer, root);
        if (!inPlace) {
            checkData(op, "send buffer", sendBuffer, count, type, 1);
        }
        if (rank == root) {
            checkData(op, "receive buffer (at root)", recvBuffer, count, type, size);
            checkWritable(op, "receive buffer (at root)", recvBuffer);
            if (!inPlace) {
                checkDisjoint(op, sendBuffer, type.bytes(count), recvBuffer, type.bytes(count) * size);
            }
        }
    }

    @Override
    public final void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        checkGather("gather", sendBuffer, recvBuffer, count, type, root);
        Buffer recv = rank == root ? recvBuffer : null;
        collective(Op.GATHER, root, count, type, gatherWork(sendBuffer, recv, count, type, root), real(sendBuffer), recv);
    }

    private Work gatherWork(Buffer sendBuffer, Buffer recv, long count, DataType type, int root) {
        return inPlace(sendBuffer, recv, type.bytes(count) * rank, type.bytes(count), (t, in) -> t.gather(in, recv, count, type, root));
    }

    @Override
    public final Request igather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        checkGather("igather", sendBuffer, recvBuffer, count, type, root);
        Buffer recv = rank == root ? recvBuffer : null;
        return nonBlocking(Op.IGATHER, Op.GATHER, root, count, type, gatherWork(sendBuffer, recv, count, type, root), real(sendBuffer), recv);
    }

    private void checkAllGather(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        ensureOpen(op);
        boolean inPlace = inPlace(op, "send buffer", sendBuffer, -1);
        if (!inPlace) {
            checkData(op, "send buffer", sendBuffer, count, type, 1);
        }
        checkData(op, "receive buffer", recvBuffer, count, type, size);
        checkWritable(op, "receive buffer", recvBuffer);
        if (!inPlace) {
            checkDisjoint(op, sendBuffer, type.bytes(count), recvBuffer, type.bytes(count) * size);
        }
    }

    @Override
    public final void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        checkAllGather("allGather", sendBuffer, recvBuffer, count, type);
        collective(Op.ALL_GATHER, -2, count, type, allGatherWork(sendBuffer, recvBuffer, count, type), real(sendBuffer), recvBuffer);
    }

    private Work allGatherWork(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        return inPlace(sendBuffer, recvBuffer, type.bytes(count) * rank, type.bytes(count), (t, in) -> t.allGather(in, recvBuffer, count, type));
    }

    @Override
    public final Request iallGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        checkAllGather("iallGather", sendBuffer, recvBuffer, count, type);
        return nonBlocking(Op.IALL_GATHER, Op.ALL_GATHER, -2, count, type, allGatherWork(sendBuffer, recvBuffer, count, type), real(sendBuffer), recvBuffer);
    }

    private void checkReduce(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp reduceOp, int root) {
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        checkOp(op, reduceOp, type);
        boolean inPlace = inPlace(op, "send buffer", sendBuffer, root);
        if (!inPlace) {
            checkData(op, "send buffer", sendBuffer, count, type, 1);
        }
        if (rank == root) {
            checkData(op, "receive buffer (at root)", recvBuffer, count, type, 1);
            checkWritable(op, "receive buffer (at root)", recvBuffer);
            if (!inPlace) {
                checkDisjoint(op, sendBuffer, type.bytes(count), recvBuffer, type.bytes(count));
            }
        }
    }

    @Override
    public final void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        checkReduce("reduce", sendBuffer, recvBuffer, count, type, op, root);
        Buffer recv = rank == root ? recvBuffer : null;
        collective(Op.REDUCE, root, count, type, reduceWork(sendBuffer, recv, count, type, op, root), real(sendBuffer), recv);
    }

    private static Work reduceWork(Buffer sendBuffer, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        return inPlace(sendBuffer, recv, 0, type.bytes(count), (t, in) -> t.reduce(in, recv, count, type, op, root));
    }

    @Override
    public final Request ireduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        checkReduce("ireduce", sendBuffer, recvBuffer, count, type, op, root);
        Buffer recv = rank == root ? recvBuffer : null;
        return nonBlocking(Op.IREDUCE, Op.REDUCE, root, count, type, reduceWork(sendBuffer, recv, count, type, op, root), real(sendBuffer), recv);
    }

    private void checkAllReduce(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp reduceOp) {
        ensureOpen(op);
        checkOp(op, reduceOp, type);
        boolean inPlace = inPlace(op, "send buffer", sendBuffer, -1);
        if (!inPlace) {
            checkData(op, "send buffer", sendBuffer, count, type, 1);
        }
        checkData(op, "receive buffer", recvBuffer, count, type, 1);
        checkWritable(op, "receive buffer", recvBuffer);
        if (!inPlace) {
            checkDisjoint(op, sendBuffer, type.bytes(count), recvBuffer, type.bytes(count));
        }
    }

    @Override
    public final void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkAllReduce("allReduce", sendBuffer, recvBuffer, count, type, op);
        collective(Op.ALL_REDUCE, -2, count, type, allReduceWork(sendBuffer, recvBuffer, count, type, op), real(sendBuffer), recvBuffer);
    }

    private static Work allReduceWork(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        return inPlace(sendBuffer, recvBuffer, 0, type.bytes(count), (t, in) -> t.allReduce(in, recvBuffer, count, type, op));
    }

    @Override
    public final Request iallReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkAllReduce("iallReduce", sendBuffer, recvBuffer, count, type, op);
        return nonBlocking(Op.IALL_REDUCE, Op.ALL_REDUCE, -2, count, type, allReduceWork(sendBuffer, recvBuffer, count, type, op), real(sendBuffer), recvBuffer);
    }

    private void checkAllToAll(String op, Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        ensureOpen(op);
        boolean inPlace = inPlace(op, "send buffer", sendBuffer, -1);
        if (!inPlace) {
            checkData(op, "send buffer", sendBuffer, count, type, size);
        }
        checkData(op, "receive buffer", recvBuffer, count, type, size);
        checkWritable(op, "receive buffer", recvBuffer);
        if (!inPlace) {
            checkDisjoint(op, sendBuffer, type.bytes(count) * size, recvBuffer, type.bytes(count) * size);
        }
    }

    @Override
    public final void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        checkAllToAll("allToAll", sendBuffer, recvBuffer, count, type);
        collective(Op.ALL_TO_ALL, -2, count, type, allToAllWork(sendBuffer, recvBuffer, count, type), real(sendBuffer), recvBuffer);
    }

    private Work allToAllWork(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        return inPlace(sendBuffer, recvBuffer, 0, type.bytes(count) * size, (t, in) -> t.allToAll(in, recvBuffer, count, type));
    }

    @Override
    public final Request iallToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        checkAllToAll("iallToAll", sendBuffer, recvBuffer, count, type);
        return nonBlocking(Op.IALL_TO_ALL, Op.ALL_TO_ALL, -2, count, type, allToAllWork(sendBuffer, recvBuffer, count, type), real(sendBuffer), recvBuffer);
    }

    @Override
    public final Communicator split(int color, int key) {
        ensureOpen("split");
        CallTracker.Slot s = enter(Op.SPLIT, color, key, -2, -2, -1, null);
        try {
            Transport t = offCarrier(() -> transport.split(color < 0 ? -1 : color, key), false);
            return t == null ? null : new CheckedCommunicator(t);
        } finally {
            CallTracker.exit(s);
        }
    }

    @Override
    public final Communicator duplicate() {
        ensureOpen("duplicate");
        CallTracker.Slot s = enter(Op.DUPLICATE, -2, -2, -2, -2, -1, null);
        try {
            return new CheckedCommunicator(offCarrier(transport::duplicate, false));
        } finally {
            CallTracker.exit(s);
        }
    }

    @Override
    public final dev.ferry.StreamCommunicator onStream(dev.ferry.DeviceStream stream) {
        ensureOpen("onStream");
        return StreamOrderedCommunicator.open(this, stream);
    }

    @Override
    public final void close() {
        if (!closed) {
            closed = true;
            OPEN.decrementAndGet();
            CollectiveLane l = lane;
            try {
                if (l != null) {
                    l.close(); // waits for this communicator's non-blocking collectives, then frees their communicator
                }
            } finally {
                transport.close();
            }
        }
    }

    @Override
    public String toString() {
        return "Communicator#" + id + "[" + backend + ", rank " + rank + " of " + size + (closed ? ", closed" : "") + "]";
    }

    // ---- probing and matched messages ----------------------------------------------------

    @Override
    public final Status probe(int source, int tag) {
        checkProbe("probe", source, tag);
        return run(Op.PROBE, source, tag, -2, -2, -1, null, () -> Thread.currentThread().isVirtual()
                ? Polling.onVirtualThread(() -> transport.iprobe(source, tag), threadLevel)
                : transport.probe(source, tag));
    }

    @Override
    public final Optional<Status> iprobe(int source, int tag) {
        checkProbe("iprobe", source, tag);
        return run(Op.IPROBE, source, tag, -2, -2, -1, null, () -> transport.iprobe(source, tag));
    }

    @Override
    public final MatchedMessage mprobe(int source, int tag) {
        checkProbe("mprobe", source, tag);
        return run(Op.MPROBE, source, tag, -2, -2, -1, null, () -> new CheckedMessage(this, Thread.currentThread().isVirtual()
                ? Polling.onVirtualThread(() -> transport.improbe(source, tag), threadLevel)
                : transport.mprobe(source, tag)));
    }

    @Override
    public final Optional<MatchedMessage> improbe(int source, int tag) {
        checkProbe("improbe", source, tag);
        return run(Op.IMPROBE, source, tag, -2, -2, -1, null, () -> transport.improbe(source, tag).map(m -> new CheckedMessage(this, m)));
    }

    private void checkProbe(String op, int source, int tag) {
        ensureOpen(op);
        checkPeer(op, "source", source, true);
        checkTag(op, tag, true);
    }

    // ---- vector collectives, reduce-scatter, prefix reductions ---------------------------

    private Blocks checkScatterV(String op, Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount,
                                 DataType type, int root) {
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        checkData(op, "receive buffer", recvBuffer, recvCount, type, 1);
        checkWritable(op, "receive buffer", recvBuffer);
        if (rank != root) {
            return null;
        }
        Blocks blocks = checkBlocks(op, "send buffer (at root)", sendBuffer, "sendCounts", sendCounts, "displacements", displacements, type, false);
        checkOwnBlock(op, "sendCounts[" + root + "] at root", blocks.count(rank), "recvCount", recvCount);
        checkDisjoint(op, sendBuffer, type.bytes(blocks.span()), recvBuffer, type.bytes(recvCount));
        return blocks;
    }

    @Override
    public final void scatterV(Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount, DataType type, int root) {
        Blocks sendBlocks = checkScatterV("scatterV", sendBuffer, sendCounts, displacements, recvBuffer, recvCount, type, root);
        Buffer send = rank == root ? sendBuffer : null;
        collective(Op.SCATTER_V, root, recvCount, type, t -> t.scatterV(send, sendBlocks, recvBuffer, recvCount, type, root), send, recvBuffer);
    }

    @Override
    public final Request iscatterV(Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount, DataType type, int root) {
        Blocks sendBlocks = checkScatterV("iscatterV", sendBuffer, sendCounts, displacements, recvBuffer, recvCount, type, root);
        Buffer send = rank == root ? sendBuffer : null;
        return nonBlocking(Op.ISCATTER_V, Op.SCATTER_V, root, recvCount, type, t -> t.scatterV(send, sendBlocks, recvBuffer, recvCount, type, root),
                send, recvBuffer);
    }

    private Blocks checkGatherV(String op, Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type,
                                int root) {
        ensureOpen(op);
        checkPeer(op, "root", root, false);
        checkData(op, "send buffer", sendBuffer, sendCount, type, 1);
        if (rank != root) {
            return null;
        }
        Blocks blocks = checkBlocks(op, "receive buffer (at root)", recvBuffer, "recvCounts", recvCounts, "displacements", displacements, type, true);
        checkOwnBlock(op, "recvCounts[" + root + "] at root", blocks.count(rank), "sendCount", sendCount);
        checkDisjoint(op, sendBuffer, type.bytes(sendCount), recvBuffer, type.bytes(blocks.span()));
        return blocks;
    }

    @Override
    public final void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type, int root) {
        Blocks recvBlocks = checkGatherV("gatherV", sendBuffer, sendCount, recvBuffer, recvCounts, displacements, type, root);
        Buffer recv = rank == root ? recvBuffer : null;
        collective(Op.GATHER_V, root, sendCount, type, t -> t.gatherV(sendBuffer, sendCount, recv, recvBlocks, type, root), sendBuffer, recv);
    }

    @Override
    public final Request igatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type, int root) {
        Blocks recvBlocks = checkGatherV("igatherV", sendBuffer, sendCount, recvBuffer, recvCounts, displacements, type, root);
        Buffer recv = rank == root ? recvBuffer : null;
        return nonBlocking(Op.IGATHER_V, Op.GATHER_V, root, sendCount, type, t -> t.gatherV(sendBuffer, sendCount, recv, recvBlocks, type, root),
                sendBuffer, recv);
    }

    private Blocks checkAllGatherV(String op, Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type) {
        ensureOpen(op);
        checkData(op, "send buffer", sendBuffer, sendCount, type, 1);
        Blocks blocks = checkBlocks(op, "receive buffer", recvBuffer, "recvCounts", recvCounts, "displacements", displacements, type, true);
        checkOwnBlock(op, "recvCounts[" + rank + "]", blocks.count(rank), "sendCount", sendCount);
        checkDisjoint(op, sendBuffer, type.bytes(sendCount), recvBuffer, type.bytes(blocks.span()));
        return blocks;
    }

    @Override
    public final void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type) {
        Blocks blocks = checkAllGatherV("allGatherV", sendBuffer, sendCount, recvBuffer, recvCounts, displacements, type);
        collective(Op.ALL_GATHER_V, -2, sendCount, type, t -> t.allGatherV(sendBuffer, sendCount, recvBuffer, blocks, type), sendBuffer, recvBuffer);
    }

    @Override
    public final Request iallGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type) {
        Blocks blocks = checkAllGatherV("iallGatherV", sendBuffer, sendCount, recvBuffer, recvCounts, displacements, type);
        return nonBlocking(Op.IALL_GATHER_V, Op.ALL_GATHER_V, -2, sendCount, type, t -> t.allGatherV(sendBuffer, sendCount, recvBuffer, blocks, type),
                sendBuffer, recvBuffer);
    }

    private Blocks[] checkAllToAllV(String op, Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                                    long[] recvDisplacements, DataType type) {
        ensureOpen(op);
        Blocks send = checkBlocks(op, "send buffer", sendBuffer, "sendCounts", sendCounts, "sendDisplacements", sendDisplacements, type, false);
        Blocks recv = checkBlocks(op, "receive buffer", recvBuffer, "recvCounts", recvCounts, "recvDisplacements", recvDisplacements, type, true);
        checkOwnBlock(op, "sendCounts[" + rank + "]", send.count(rank), "recvCounts[" + rank + "]", recv.count(rank));
        checkDisjoint(op, sendBuffer, type.bytes(send.span()), recvBuffer, type.bytes(recv.span()));
        return new Blocks[] {send, recv};
    }

    @Override
    public final void allToAllV(Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                                long[] recvDisplacements, DataType type) {
        Blocks[] b = checkAllToAllV("allToAllV", sendBuffer, sendCounts, sendDisplacements, recvBuffer, recvCounts, recvDisplacements, type);
        collective(Op.ALL_TO_ALL_V, -2, b[1].total(), type, t -> t.allToAllV(sendBuffer, b[0], recvBuffer, b[1], type), sendBuffer, recvBuffer);
    }

    @Override
    public final Request iallToAllV(Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                                    long[] recvDisplacements, DataType type) {
        Blocks[] b = checkAllToAllV("iallToAllV", sendBuffer, sendCounts, sendDisplacements, recvBuffer, recvCounts, recvDisplacements, type);
        return nonBlocking(Op.IALL_TO_ALL_V, Op.ALL_TO_ALL_V, -2, b[1].total(), type, t -> t.allToAllV(sendBuffer, b[0], recvBuffer, b[1], type),
                sendBuffer, recvBuffer);
    }

    private void checkReduceScatterBlock(String name, Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        ensureOpen(name);
        checkOp(name, op, type);
        if (inPlace(name, "send buffer", sendBuffer, -1)) {
            checkData(name, "receive buffer (in place: every rank's blocks)", recvBuffer, recvCount, type, size);
            checkWritable(name, "receive buffer", recvBuffer);
            return;
        }
        checkData(name, "send buffer", sendBuffer, recvCount, type, size);
        checkData(name, "receive buffer", recvBuffer, recvCount, type, 1);
        checkWritable(name, "receive buffer", recvBuffer);
        checkDisjoint(name, sendBuffer, type.bytes(recvCount) * size, recvBuffer, type.bytes(recvCount));
    }

    @Override
    public final void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatterBlock("reduceScatterBlock", sendBuffer, recvBuffer, recvCount, type, op);
        collective(Op.REDUCE_SCATTER_BLOCK, -2, recvCount, type, reduceScatterBlockWork(sendBuffer, recvBuffer, recvCount, type, op),
                real(sendBuffer), recvBuffer);
    }

    private Work reduceScatterBlockWork(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        return inPlace(sendBuffer, recvBuffer, 0, type.bytes(recvCount) * size, (t, in) -> t.reduceScatterBlock(in, recvBuffer, recvCount, type, op));
    }

    @Override
    public final Request ireduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatterBlock("ireduceScatterBlock", sendBuffer, recvBuffer, recvCount, type, op);
        return nonBlocking(Op.IREDUCE_SCATTER_BLOCK, Op.REDUCE_SCATTER_BLOCK, -2, recvCount, type,
                reduceScatterBlockWork(sendBuffer, recvBuffer, recvCount, type, op), real(sendBuffer), recvBuffer);
    }

    private Blocks checkReduceScatter(String name, Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op) {
        ensureOpen(name);
        checkOp(name, op, type);
        checkCounts(name, "recvCounts", recvCounts);
        Blocks blocks;
        try {
            blocks = Blocks.contiguous(recvCounts);
        } catch (ArithmeticException e) {
            throw new InvalidCountException(name + ": the sum of recvCounts overflows a long");
        }
        if (inPlace(name, "send buffer", sendBuffer, -1)) {
            checkData(name, "receive buffer (in place: every rank's blocks)", recvBuffer, blocks.total(), type, 1);
            checkWritable(name, "receive buffer", recvBuffer);
            return blocks;
        }
        checkData(name, "send buffer", sendBuffer, blocks.total(), type, 1);
        checkData(name, "receive buffer", recvBuffer, blocks.count(rank), type, 1);
        checkWritable(name, "receive buffer", recvBuffer);
        checkDisjoint(name, sendBuffer, type.bytes(blocks.total()), recvBuffer, type.bytes(blocks.count(rank)));
        return blocks;
    }

    @Override
    public final void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op) {
        Blocks blocks = checkReduceScatter("reduceScatter", sendBuffer, recvBuffer, recvCounts, type, op);
        collective(Op.REDUCE_SCATTER, -2, blocks.count(rank), type, reduceScatterWork(sendBuffer, recvBuffer, blocks, type, op), real(sendBuffer), recvBuffer);
    }

    private static Work reduceScatterWork(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        return inPlace(sendBuffer, recvBuffer, 0, type.bytes(blocks.total()), (t, in) -> t.reduceScatter(in, recvBuffer, blocks, type, op));
    }

    @Override
    public final Request ireduceScatter(Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op) {
        Blocks blocks = checkReduceScatter("ireduceScatter", sendBuffer, recvBuffer, recvCounts, type, op);
        return nonBlocking(Op.IREDUCE_SCATTER, Op.REDUCE_SCATTER, -2, blocks.count(rank), type, reduceScatterWork(sendBuffer, recvBuffer, blocks, type, op),
                real(sendBuffer), recvBuffer);
    }

    @Override
    public final void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("scan", sendBuffer, recvBuffer, count, type, op, true);
        collective(Op.SCAN, -2, count, type, t -> t.scan(sendBuffer, recvBuffer, count, type, op), sendBuffer, recvBuffer);
    }

    @Override
    public final void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("exscan", sendBuffer, recvBuffer, count, type, op, rank != 0 || recvBuffer != null);
        Buffer recv = rank == 0 ? null : recvBuffer; // rank 0's is never written, whatever the library would do with it
        collective(Op.EXSCAN, -2, count, type, t -> t.exscan(sendBuffer, recv, count, type, op), sendBuffer, recv);
    }

    @Override
    public final Request iscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("iscan", sendBuffer, recvBuffer, count, type, op, true);
        return nonBlocking(Op.ISCAN, Op.SCAN, -2, count, type, t -> t.scan(sendBuffer, recvBuffer, count, type, op), sendBuffer, recvBuffer);
    }

    @Override
    public final Request iexscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        checkPrefix("iexscan", sendBuffer, recvBuffer, count, type, op, rank != 0 || recvBuffer != null);
        Buffer recv = rank == 0 ? null : recvBuffer;
        return nonBlocking(Op.IEXSCAN, Op.EXSCAN, -2, count, type, t -> t.exscan(sendBuffer, recv, count, type, op), sendBuffer, recv);
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

    // ---- in place -------------------------------------------------------------------------

    /**
     * Whether {@code buffer} is {@link Communicator#IN_PLACE}, where the operation takes it; at a
     * non-root rank of a rooted collective ({@code root >= 0}) it is refused.
     */
    private boolean inPlace(String op, String what, Buffer buffer, int root) {
        if (buffer != Communicator.IN_PLACE) {
            return false;
        }
        if (root >= 0 && rank != root) {
            throw new InvalidArgumentException(op + ": the " + what + " is IN_PLACE at rank " + rank + ", but only the root (" + root
                    + ") may pass IN_PLACE there");
        }
        return true;
    }

    /** The buffer to pin for a non-blocking call: none for the IN_PLACE marker. */
    private static Buffer real(Buffer b) {
        return b == Communicator.IN_PLACE ? null : b;
    }

    /**
     * The work of a collective whose send buffer may be {@link Communicator#IN_PLACE}: with a real
     * send buffer, {@code body} runs on it; in place, inside the call (after the caller's device
     * work on {@code recv}), {@code bytes} at {@code offset} of {@code recv} are first copied into
     * scratch of the same memory kind, which {@code body} gets as its send buffer, so that every
     * transport sees two buffers.
     */
    private static Work inPlace(Buffer send, Buffer recv, long offset, long bytes, InPlaceBody body) {
        if (send != Communicator.IN_PLACE) {
            return t -> body.run(t, send);
        }
        return t -> {
            PendingDeviceWork.complete(); // the copy below reads the caller's buffer
            try (Scratch in = Scratch.like(recv, bytes)) {
                in.copyFrom(recv, offset, bytes);
                body.run(t, in.buffer());
            }
        };
    }

    /** A collective after its checks: what its blocking form runs at once and its non-blocking form runs on the lane. */
    @FunctionalInterface
    interface Work {
        void on(Transport transport);
    }

    /** A collective's work given its send buffer (the caller's, or scratch holding the in-place data). */
    @FunctionalInterface
    private interface InPlaceBody {
        void run(Transport transport, Buffer send);
    }

    // ---- one call: tracking, buffer pins, device ordering -----------------------------------

    /**
     * Runs a blocking operation: tracked for the threading rules and the watchdog, its buffers
     * pinned (so that closing them from another thread cannot free them under the call), and
     * ordered after the caller's device work when any buffer is device memory.
     */
    <T> T run(Op op, int peer, int tag, int peer2, int tag2, long count, DataType type, java.util.function.Supplier<T> body, Buffer... buffers) {
        CallTracker.Slot s = enter(op, peer, tag, peer2, tag2, count, type);
        try (BufferUse use = BufferUse.of(buffers)) {
            return body.get();
        } finally {
            CallTracker.exit(s);
        }
    }

    /**
     * Runs a blocking collective's checked work on this communicator's transport, as {@link #run}
     * runs a call; on a virtual thread, on a platform thread of Ferry's ({@link #offCarrier}).
     * {@code run}'s steps written out, so that on a platform thread the work is called directly:
     * not through the suppliers of {@code run} and {@code offCarrier}, two allocations and two call
     * sites that every kind of call shares (megamorphic: the JIT cannot inline through them).
     */
    private void collective(Op op, int root, long count, DataType type, Work work, Buffer... buffers) {
        CallTracker.Slot s = enter(op, root, -2, -2, -2, count, type);
        boolean virtual = Thread.currentThread().isVirtual();
        // on a platform thread, the transport's collective waits for the caller's device work where it touches the buffers
        try (BufferUse use = BufferUse.of(!virtual && transport.waitsForPendingDeviceWork(), buffers)) {
            if (virtual) {
                offCarrier(() -> {
                    work.on(transport);
                    return null;
                }, anyDevice(buffers));
            } else {
                work.on(transport);
            }
        } finally {
            CallTracker.exit(s);
        }
    }

    /**
     * {@code call} (a blocking call that cannot be polled: a collective, split, duplicate) on the
     * calling thread; on a virtual thread, on one of Ferry's {@link PlatformThreads} while the
     * virtual thread parks, so that its carrier runs other virtual threads while the other ranks
     * are waited for. Work on device memory keeps the helper thread's current context as it was.
     */
    private static <T> T offCarrier(java.util.function.Supplier<T> call, boolean device) {
        if (!Thread.currentThread().isVirtual()) {
            return call.get();
        }
        return PlatformThreads.call(() -> {
            try (DeviceSupport.Scope ctx = device ? DeviceSupport.get().preserveContext() : DeviceSupport.Scope.NONE) {
                return call.get();
            }
        });
    }

    private static boolean anyDevice(Buffer... buffers) {
        for (Buffer b : buffers) {
            if (b != null && b.kind().needsCuda()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Waits for {@code inner}, the transport's request of a blocking call made on a virtual thread
     * (the call's buffers are pinned by the call), as {@link Request#waitFor()} waits on a virtual
     * thread: short tests, then parked while Ferry's progress thread tests it.
     */
    Status parked(Op op, int peer, int tag, long count, DataType type, Request inner, Buffer... buffers) {
        return new TrackedRequest(this, inner, op, peer, tag, count, type, null, anyDevice(buffers)).waitFor();
    }

    /** Starts a non-blocking operation; its buffers stay pinned until the request completes. */
    Request start(Op op, int peer, int tag, long count, DataType type, java.util.function.Supplier<Request> body, Buffer... buffers) {
        CallTracker.Slot s = enter(op, peer, tag, -2, -2, count, type);
        try (BufferUse use = BufferUse.of(buffers)) {
            Request r = body.get();
            return new TrackedRequest(this, r, op, peer, tag, count, type, use.handOff(), use.device());
        } finally {
            CallTracker.exit(s);
        }
    }

    /**
     * Starts a non-blocking collective, already checked: its buffers are pinned and the call is
     * ordered after the caller's device work here, on the caller's thread; then {@code work} runs
     * on this communicator's {@link CollectiveLane} (a duplicate communicator and a thread of its
     * own, started at the first one without waiting for the other ranks) as the blocking collective
     * {@code blocking} would run it, so that
     * it progresses whatever the caller does meanwhile. Nothing is checked again on the lane: a
     * buffer closed after the start stays pinned, and its memory is freed when the request
     * completes. The pins go with the request.
     */
    private Request nonBlocking(Op op, Op blocking, int root, long count, DataType type, Work work, Buffer... buffers) {
        if (threadLevel != ThreadLevel.MULTIPLE) {
            throw new ThreadingException(op.label + ": non-blocking collectives run on a thread of Ferry's, which needs MPI_THREAD_MULTIPLE; "
                    + this + " has " + threadLevel.mpiName() + ": use the blocking " + blocking.label + " or request MULTIPLE (-Dferry.threads=multiple)");
        }
        CallTracker.Slot s = enter(op, root, -2, -2, -2, count, type);
        try (BufferUse use = BufferUse.of(buffers)) {
            CollectiveLane l = lane;
            if (l == null) {
                // a local call: the lane's duplicate is only started here (its place among this communicator's
                // collectives, the same on every rank); the lane's thread finishes it
                l = lane = new CollectiveLane(this, transport.startDuplicate());
            }
            boolean device = use.device();
            Request r = l.submit(op.label, shadow -> shadow.runOnLane(blocking, root, count, type, work, device));
            return new TrackedRequest(this, r, op, root, -2, count, type, use.handOff(), device);
        } finally {
            CallTracker.exit(s);
        }
    }

    /**
     * Runs a started non-blocking collective's work on this communicator (the lane's duplicate),
     * on the lane's thread: tracked for the watchdog as {@code op}, with neither checks nor pins
     * (the request holds them); device buffers were ordered after the caller's work when it started.
     */
    private void runOnLane(Op op, int root, long count, DataType type, Work work, boolean device) {
        CallTracker.Slot s = enter(op, root, -2, -2, -2, count, type);
        try (DeviceSupport.Scope ctx = device ? DeviceSupport.get().preserveContext() : DeviceSupport.Scope.NONE) {
            work.on(transport);
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

    /**
     * A backend request with the threading rules, the watchdog and the liveness check around
     * waitFor and test; the pins of its buffers, released once when it completes; and its outcome,
     * kept from then on. One thread at a time calls into the backend's request ({@link #lock}:
     * MPI's requests are not for two threads at once); a test never waits for that lock. On a
     * virtual thread, waitFor polls briefly and then parks while Ferry's progress thread tests
     * the request ({@link Polling#onVirtualThread}); {@link #future()} hands it to that thread too.
     */
    private static final class TrackedRequest implements Request {
        private final CheckedCommunicator comm;
        private final Request inner;
        private final Op op;
        private final int peer;
        private final int tag;
        private final long count;
        private final DataType type;
        private final boolean device;
        private final ReentrantLock lock = new ReentrantLock();
        private BufferUse.Pins pins; // under lock; released when the request completes (null: the blocking call that made it holds them)
        private Status result; // the outcome, written under lock before complete
        private RuntimeException failure;
        private volatile boolean complete;
        private volatile RequestFuture view;

        TrackedRequest(CheckedCommunicator comm, Request inner, Op op, int peer, int tag, long count, DataType type, BufferUse.Pins pins, boolean device) {
            this.comm = comm;
            this.inner = inner;
            this.op = op;
            this.peer = peer;
            this.tag = tag;
            this.count = count;
            this.type = type;
            this.pins = pins;
            this.device = device;
        }

        private void ensureMpi(String what) {
            if (MpiLifecycle.isFinalized()) {
                throw new CommunicatorClosedException(what + " of " + this + ": MPI was finalized (Ferry.shutdown or exit)");
            }
        }

        private DeviceSupport.Scope context() {
            return device ? DeviceSupport.get().preserveContext() : DeviceSupport.Scope.NONE;
        }

        private Status outcome() {
            if (failure != null) {
                throw failure;
            }
            return result;
        }

        /** Keeps the outcome and releases the pins (the operation ended: its memory is not in use any more); under the lock, once. */
        private void settle(Status st, RuntimeException e) {
            result = st;
            failure = e;
            BufferUse.Pins p = pins;
            pins = null;
            complete = true;
            if (p != null) {
                p.release();
            }
        }

        /** Completes the future view, when there is one, with the outcome; after the lock is released. */
        private void announce() {
            RequestFuture v = view;
            if (v != null) {
                ProgressThread.completeForProgram(() -> v.settle(result, failure));
            }
        }

        /** One test of the backend's request: its status once complete (its failure thrown), empty while in flight or while another thread holds it. */
        private Optional<Status> tryTest() {
            if (complete) {
                return Optional.of(outcome());
            }
            if (!lock.tryLock()) {
                return Optional.empty(); // another thread is completing it, and announces it
            }
            boolean settled = false;
            try {
                if (!complete) {
                    try (DeviceSupport.Scope ctx = context()) {
                        Optional<Status> st;
                        try {
                            st = inner.test();
                        } catch (RuntimeException e) {
                            settle(null, e);
                            settled = true;
                            throw e;
                        }
                        if (st.isEmpty()) {
                            return st;
                        }
                        settle(st.get(), null);
                        settled = true;
                    }
                }
            } finally {
                lock.unlock();
                if (settled) {
                    announce();
                }
            }
            return Optional.of(outcome());
        }

        @Override
        public Status waitFor() {
            ensureMpi("waitFor");
            CallTracker.Slot s = CallTracker.enter(null, comm.threadLevel, Op.WAIT, this, -2, -2, -2, -2, -1, null);
            try {
                if (complete) {
                    return outcome();
                }
                if (Thread.currentThread().isVirtual()) {
                    return Polling.onVirtualThread(this::tryTest, comm.threadLevel); // never a long native call on a carrier
                }
                boolean settled = false;
                lock.lock();
                try {
                    if (!complete) {
                        try (DeviceSupport.Scope ctx = context()) {
                            try {
                                settle(inner.waitFor(), null);
                            } catch (RuntimeException e) {
                                settle(null, e);
                            }
                        }
                        settled = true;
                    }
                } finally {
                    lock.unlock();
                }
                if (settled) {
                    announce();
                }
                return outcome();
            } finally {
                CallTracker.exit(s);
            }
        }

        @Override
        public Optional<Status> test() {
            ensureMpi("test");
            if (complete) {
                return Optional.of(outcome());
            }
            CallTracker.Slot s = CallTracker.enter(null, comm.threadLevel, Op.TEST, this, -2, -2, -2, -2, -1, null);
            try {
                return tryTest();
            } finally {
                CallTracker.exit(s);
            }
        }

        /**
         * Sends: nothing (false, still in flight). Receives: the backend's cancel, then the
         * completion, whatever it gave, so that the request is complete on return on every backend.
         * The receive of a matched message has its message: completed, false.
         */
        @Override
        public boolean cancel() {
            if ((op != Op.IRECV && op != Op.MESSAGE_IRECV) || complete) {
                return false;
            }
            ensureMpi("cancel");
            CallTracker.Slot s = CallTracker.enter(null, comm.threadLevel, Op.CANCEL, this, -2, -2, -2, -2, -1, null);
            boolean cancelled = false;
            boolean settled = false;
            lock.lock();
            try {
                if (!complete) {
                    try (DeviceSupport.Scope ctx = context()) {
                        cancelled = op == Op.IRECV && inner.cancel();
                        try {
                            settle(inner.waitFor(), null); // at once when the backend's cancel completed it
                        } catch (RuntimeException e) {
                            settle(null, e); // the receive failed (e.g. truncated): its waitFor throws the failure again
                        }
                    }
                    settled = true;
                }
            } finally {
                lock.unlock();
                CallTracker.exit(s);
            }
            if (settled) {
                announce();
            }
            return cancelled;
        }

        /**
         * The view, made once. While the request is in flight Ferry's progress thread tests it until
         * it completes (a test that finds another thread completing it leaves it to that thread,
         * which announces the outcome); one that completed already gives a completed view at once.
         */
        @Override
        public CompletableFuture<Status> future() {
            RequestFuture v = view;
            if (v != null) {
                return v;
            }
            if (!complete && comm.threadLevel != ThreadLevel.MULTIPLE) {
                throw new ThreadingException("future() of " + this + ": Ferry's progress thread completes the future, which needs MPI_THREAD_MULTIPLE; "
                        + comm + " has " + comm.threadLevel.mpiName() + ": complete the request with waitFor() or test(), or run with -Dferry.threads=multiple");
            }
            boolean made;
            synchronized (this) {
                made = view == null;
                if (made) {
                    view = new RequestFuture(this);
                }
                v = view;
            }
            if (made) {
                // complete is read after view was published: either this thread sees it, or the thread that settles sees the view
                if (complete) {
                    v.settle(result, failure);
                } else {
                    RequestFuture view = v;
                    // the request's own failure reaches the view through settle; one of the progress thread's
                    // (MPI finalized before the request completed) only here
                    ProgressThread.poll(this::tryTest).whenComplete((st, e) -> {
                        if (e != null) {
                            ProgressThread.completeForProgram(() -> view.completeExceptionally(e));
                        }
                    });
                }
            }
            return v;
        }

        @Override
        public String toString() {
            return "request " + CallTracker.format(op, comm, peer, tag, -2, -2, count, type);
        }
    }

    /**
     * The {@link Request#future()} of a request: completed with its outcome (a cancelled receive:
     * cancelled); {@link #cancel} is the request's cancel. Stages made from it are plain futures.
     */
    private static final class RequestFuture extends CompletableFuture<Status> {
        private final TrackedRequest request;

        RequestFuture(TrackedRequest request) {
            this.request = request;
        }

        void settle(Status st, RuntimeException failure) {
            if (failure != null) {
                completeExceptionally(failure);
            } else if (st.cancelled()) {
                super.cancel(false);
            } else {
                complete(st);
            }
        }

        /**
         * The request's {@link Request#cancel()}: a pending receive is cancelled, and so is this
         * future (true); a receive that has matched a message completes by receiving it, and a send
         * or a collective goes on: false, and this future completes with the operation.
         */
        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (!isDone()) {
                request.cancel();
            }
            return isCancelled();
        }
    }

    // ---- checks --------------------------------------------------------------------------

    void ensureOpen(String op) {
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
    void checkData(String op, String what, Buffer buffer, long count, DataType type, int blocks) {
        if (type == null) {
            throw new InvalidArgumentException(op + ": datatype is null");
        }
        if (count < 0) {
            throw new InvalidCountException(op + ": count " + count + " is negative");
        }
        if (buffer == null) {
            throw new InvalidArgumentException(op + ": " + what + " is null");
        }
        if (buffer == Communicator.IN_PLACE) {
            throw new InvalidArgumentException(op + ": " + what + " is IN_PLACE, which only the send buffer of allReduce, allGather, allToAll, "
                    + "reduceScatterBlock and reduceScatter, of reduce and gather at the root, and the receive buffer of scatter at the root take");
        }
        if (StreamOrderedCommunicator.onViewThread()) {
            // a view checked it when it took the call and holds its memory until the stream passes: the program may close it meanwhile
            buffer.checkMemory();
        } else {
            buffer.checkAlive();
        }
        if (buffer.kind().needsCuda() && !supportsDeviceBuffers()) {
            throw new UnsupportedBufferException(op + ": " + what + " is " + buffer.kind() + " memory; " + transport.deviceBuffersUnsupportedReason());
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
    static void checkWritable(String op, String what, Buffer buffer) {
        if (buffer != null && buffer.isReadOnly()) {
            throw new BufferReadOnlyException(op + ": " + what + " " + buffer + " is read-only memory and cannot receive data");
        }
    }

    private void checkPeer(String op, String what, int peer, boolean wildcard) {
        if (wildcard && peer == ANY_SOURCE) {
            return;
        }
        if (peer < 0 || peer >= size) {
            throw new InvalidRankException(op + ": " + what + " rank " + peer + " is outside [0, " + size + ")"
                    + (wildcard ? " and is not ANY_SOURCE" : ""));
        }
    }

    private void checkTag(String op, int tag, boolean wildcard) {
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

    // ---- the checks of the stream-ordered view's calls, on the caller's thread (StreamOrderedCommunicator) ----

    void checkStreamSend(Buffer buffer, long count, DataType type, int dest, int tag) {
        ensureOpen("send");
        checkData("send", "buffer", buffer, count, type, 1);
        checkPeer("send", "destination", dest, false);
        checkTag("send", tag, false);
    }

    void checkStreamRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        ensureOpen("recv");
        checkData("recv", "buffer", buffer, count, type, 1);
        checkWritable("recv", "buffer", buffer);
        checkPeer("recv", "source", source, true);
        checkTag("recv", tag, true);
    }

    void checkStreamCollective(StreamCollective c) {
        String op = c.kind().label;
        switch (c.kind()) {
            case BARRIER -> ensureOpen(op);
            case BROADCAST -> checkBroadcast(op, c.send(), c.count(), c.type(), c.root());
            case SCATTER -> checkScatter(op, c.send(), c.recv(), c.count(), c.type(), c.root());
            case GATHER -> checkGather(op, c.send(), c.recv(), c.count(), c.type(), c.root());
            case ALL_GATHER -> checkAllGather(op, c.send(), c.recv(), c.count(), c.type());
            case ALL_TO_ALL -> checkAllToAll(op, c.send(), c.recv(), c.count(), c.type());
            case REDUCE -> checkReduce(op, c.send(), c.recv(), c.count(), c.type(), c.op(), c.root());
            case ALL_REDUCE -> checkAllReduce(op, c.send(), c.recv(), c.count(), c.type(), c.op());
            case REDUCE_SCATTER_BLOCK -> checkReduceScatterBlock(op, c.send(), c.recv(), c.count(), c.type(), c.op());
        }
    }
}
