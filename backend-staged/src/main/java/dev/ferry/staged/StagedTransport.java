// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.collectives.ipc.IpcOffer;
import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.TruncationException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Blocks;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A transport decorator that carries device buffers over a host-only MPI backend by staging them
 * through pinned host memory, pipelined in chunks, or for peers of the same node by CUDA IPC. It
 * sits under the checked front and calls the inner backend's primitives directly: a chunk is
 * neither checked nor tracked a second time.
 *
 * <p>It wraps two transports of the inner backend with the same ranks: the <em>user</em> one,
 * on which eager messages, first pieces (with the user's tags) and collectives travel, and a
 * private <em>bulk</em> duplicate for chunks and IPC replies, tagged per transfer. Host buffers in
 * collectives go straight to the inner backend; point-to-point messages of any memory use the
 * protocol of {@link Wire}, which costs host messages nothing up to {@code eager} bytes but one
 * copy of at most {@code eager} bytes at the receiver.
 */
final class StagedTransport implements Transport {
    private final Transport user;
    private final Transport bulk;
    private final StagedRuntime rt;
    private final Peers peers;
    private final int[] transfers;
    private final boolean[] noIpc;
    private final Collectives collectives;
    private final StagedProbes probes = new StagedProbes(this);
    private final AtomicBoolean released = new AtomicBoolean();
    private StagedTransport internal; // for collectives done by point-to-point messages
    private volatile boolean offerIpc = true;
    private volatile Tuning tuning;

    /** Wraps {@code user} (taking ownership); collective over its ranks. */
    StagedTransport(Transport user, StagedRuntime rt) {
        this.user = user;
        this.rt = rt;
        Transport b = null;
        try {
            b = user.duplicate();
            this.peers = Peers.exchange(user, rt.settings, rt.ipcEnabled());
        } catch (RuntimeException e) {
            if (b != null) b.close();
            user.close();
            rt.release();
            throw e;
        }
        this.bulk = b;
        this.transfers = new int[user.size()];
        this.noIpc = new boolean[user.size()];
        this.collectives = new Collectives(this);
        this.tuning = Tuning.of(rt.settings);
    }

    /** How this communicator cuts the messages it sends. */
    Tuning tuning() {
        return tuning;
    }

    /** Re-tunes this communicator's sends (the GPU check sweeps chunk sizes with it, through {@link StagedDiagnostics#tune}); checked against the pool. */
    void tune(Tuning t) {
        this.tuning = t.checked(rt.chunks.maxBytes());
    }

    // ---- what the transfers use ------------------------------------------------------------

    /** The inner backend's transport with the user's messages and collectives. */
    Transport user() {
        return user;
    }

    Transport bulk() {
        return bulk;
    }

    StagedRuntime runtime() {
        return rt;
    }

    Peers peers() {
        return peers;
    }

    StagedProbes probes() {
        return probes;
    }

    /** A new transfer tag for messages to {@code dest}. */
    int nextTransfer(int dest) {
        int limit = Math.max(1, (bulk.maxTag() - 1) / 2);
        int t = transfers[dest];
        transfers[dest] = t + 1 >= limit ? 0 : t + 1;
        return t;
    }

    /** Turns IPC offers of this communicator on or off (the GPU check measures the pipeline alone with it off, through {@link StagedDiagnostics#offerIpc}). */
    void offerIpc(boolean on) {
        offerIpc = on;
    }

    /** Whether to offer {@code buffer} to {@code dest} by IPC instead of sending its bytes. */
    boolean mayOfferIpc(Buffer buffer, int dest) {
        if (!offerIpc || dest == rank() || noIpc[dest] || !peers.sameNode(dest)) {
            return false;
        }
        if (rt.settings.offerIpcForHost() && buffer instanceof HostBuffer) {
            return true; // test mode: the receiver refuses, which exercises the fallback
        }
        return rt.ipcEnabled() && StagedRuntime.ipcExportable(buffer) && peers.ipcPeer(dest);
    }

    /**
     * The offer for {@code buffer} (a fake one for host memory in the test mode), or null when CUDA
     * cannot export its memory (e.g. memory of a stream-ordered pool): it is then staged.
     */
    IpcOffer ipcOffer(Buffer buffer) {
        if (buffer instanceof DeviceBuffer d) {
            try {
                return rt.ipc.offer(d);
            } catch (CudaException e) {
                warnOnce(rank(), e);
                return null;
            }
        }
        return new IpcOffer(new byte[64], buffer.address(), buffer.byteSize(), 0, 0, -1);
    }

    /** After a receiver could not map our memory: no more offers to it on this communicator. */
    void noIpcTo(int dest) {
        noIpc[dest] = true;
    }

    /**
     * Answers an IPC offer from {@code from}: starts the copy from the peer's GPU into the receive
     * buffer and returns {@link Wire#REPLY_DONE} (the receive sends DONE when the copy completes), or
     * returns the code of the reply that asks for the data as chunks.
     */
    int ipcReceive(Buffer buffer, int from, IpcOffer offer, StagedReceive op) {
        if (!op.deviceTarget()) {
            return Wire.REPLY_SEND; // this receive is not into device memory; the next one may be
        }
        if (!rt.ipcEnabled() || !peers.ipcPeer(from) || offer.device() < 0) {
            return Wire.REPLY_SEND_NO_IPC;
        }
        DeviceBuffer d = (DeviceBuffer) buffer;
        dev.ferry.collectives.ipc.CudaIpcCache.Mapping m;
        try {
            m = rt.ipc.mappings().acquire(peers.node(from), peers.pid(from), offer.handle(), offer.base(), offer.size(), offer.generation(), d.device());
        } catch (CudaException e) {
            warnOnce(from, e);
            return Wire.REPLY_SEND_NO_IPC;
        }
        try {
            long n = Math.min(op.total(), op.capacity());
            op.peerCopyStarted(m, rt.cuda.fromPeer(d, 0, m.at(offer.offset()), n));
            rt.stats.ipcCopies.increment();
        } catch (RuntimeException e) {
            rt.ipc.mappings().release(m);
            throw e;
        }
        return Wire.REPLY_DONE;
    }

    private final boolean[] warned = new boolean[1];

    private void warnOnce(int from, CudaException e) {
        synchronized (warned) {
            if (warned[0]) return;
            warned[0] = true;
        }
        System.getLogger("dev.ferry.staged").log(System.Logger.Level.WARNING, "rank " + rank() + (from == rank() ? " cannot export its device memory"
                : " cannot map device memory of rank " + from) + " by CUDA IPC (" + e.getMessage() + "); staging through host memory instead");
    }

    /** The exception of a message longer than its receive buffer. */
    TruncationException truncation(String op, long total, long capacity) {
        int errorClass = rt.inner.equals("ompi") ? 15 : 14; // MPI_ERR_TRUNCATE of Open MPI / of the MPICH family
        return new TruncationException(op + " (message of " + total + " bytes is longer than the receive count of " + capacity + " bytes)",
                errorClass, errorClass, "MPI_ERR_TRUNCATE: message truncated", null);
    }

    /** Staged transfers, and through their MPI requests the inner MPI's progress. */
    @Override
    public void progress() {
        rt.progress.poll();
    }

    /** The inner MPI reduces every staged chunk (and host buffers go to it whole): its reductions are these. */
    @Override
    public boolean reduces(dev.ferry.DataType type, dev.ferry.ReduceOp op) {
        return user.reduces(type, op);
    }

    @Override
    public boolean stagesHostBuffers() {
        return rt.settings.stageHostBuffers();
    }

    /** The lazily made communicator the point-to-point collectives run on (collective: every rank makes it at the same call). */
    synchronized StagedTransport internal() {
        if (internal == null) {
            internal = (StagedTransport) duplicate();
        }
        return internal;
    }

    // ---- Transport ---------------------------------------------------------------------------

    @Override
    public String backend() {
        return "staged";
    }

    @Override
    public int rank() {
        return user.rank();
    }

    @Override
    public int size() {
        return user.size();
    }

    @Override
    public int maxTag() {
        return user.maxTag();
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return Cuda.isAvailable() && rt.cuda != null;
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
        return "CUDA is unavailable in this process (" + (Cuda.unavailabilityCause() == null ? "?" : Cuda.unavailabilityCause().getMessage()) + ")";
    }

    private Status run(Progress.Op op) {
        rt.progress.start(op);
        return rt.progress.await(op);
    }

    @Override
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        run(new StagedSend(this, buffer, type.bytes(count), dest, tag));
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type, int source, int tag) {
        return run(new StagedReceive(this, buffer, type.bytes(count), type, source, tag));
    }

    @Override
    public Request isend(Buffer buffer, long count, DataType type, int dest, int tag) {
        StagedSend op = new StagedSend(this, buffer, type.bytes(count), dest, tag);
        rt.progress.start(op);
        return new Progress.OpRequest(rt.progress, op);
    }

    @Override
    public Request irecv(Buffer buffer, long count, DataType type, int source, int tag) {
        StagedReceive op = new StagedReceive(this, buffer, type.bytes(count), type, source, tag);
        rt.progress.start(op);
        return new Progress.OpRequest(rt.progress, op);
    }

    @Override
    public Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                                Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag) {
        Request r = irecv(recvBuffer, recvCount, recvType, source, recvTag);
        Request s;
        try {
            s = isend(sendBuffer, sendCount, sendType, dest, sendTag);
        } catch (RuntimeException e) {
            try {
                r.waitFor();
            } catch (RuntimeException e2) {
                e.addSuppressed(e2);
            }
            throw e;
        }
        return Request.waitAll(r, s).get(0);
    }

    @Override
    public void barrier() {
        rt.progress.poll();
        user.barrier();
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        collectives.broadcast(buffer, count, type, root);
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        collectives.scatter(sendBuffer, recvBuffer, count, type, root);
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        collectives.gather(sendBuffer, recvBuffer, count, type, root);
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        collectives.allGather(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        collectives.reduce(sendBuffer, recvBuffer, count, type, op, root);
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        collectives.allReduce(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        collectives.allToAll(sendBuffer, recvBuffer, count, type);
    }

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        collectives.scatterV(sendBuffer, sendBlocks, recvBuffer, recvCount, type, root);
    }

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        collectives.gatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type, root);
    }

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        collectives.allGatherV(sendBuffer, sendCount, recvBuffer, recvBlocks, type);
    }

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        collectives.allToAllV(sendBuffer, sendBlocks, recvBuffer, recvBlocks, type);
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        collectives.reduceScatterBlock(sendBuffer, recvBuffer, recvCount, type, op);
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        collectives.reduceScatter(sendBuffer, recvBuffer, blocks, type, op);
    }

    @Override
    public void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        collectives.scan(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        collectives.exscan(sendBuffer, recvBuffer, count, type, op);
    }

    @Override
    public Transport split(int color, int key) {
        Transport c = user.split(color, key);
        return c == null ? null : new StagedTransport(c, StagedRuntime.acquire(rt.settings, rt.inner));
    }

    @Override
    public Transport duplicate() {
        return new StagedTransport(user.duplicate(), StagedRuntime.acquire(rt.settings, rt.inner));
    }

    /** The user communicator's duplicate is started here; the bulk duplicate and the exchange of peers run on it when it is finished. */
    @Override
    public dev.ferry.spi.PendingDuplicate startDuplicate() {
        dev.ferry.spi.PendingDuplicate started = user.startDuplicate();
        return () -> new StagedTransport(started.finish(), StagedRuntime.acquire(rt.settings, rt.inner));
    }

    @Override
    public void close() {
        List<RuntimeException> errors = new ArrayList<>();
        StagedTransport in;
        synchronized (this) {
            in = internal;
            internal = null;
        }
        for (AutoCloseable c : new AutoCloseable[] {in, bulk, user}) {
            if (c == null) continue;
            try {
                c.close();
            } catch (Exception e) {
                errors.add(e instanceof RuntimeException r ? r : new RuntimeException(e));
            }
        }
        collectives.close();
        probes.close();
        if (released.compareAndSet(false, true)) {
            try {
                rt.release();
            } catch (RuntimeException e) {
                errors.add(e);
            }
        }
        if (!errors.isEmpty()) {
            RuntimeException first = errors.get(0);
            for (int i = 1; i < errors.size(); i++) first.addSuppressed(errors.get(i));
            throw first;
        }
    }

    // ---- probing (StagedProbes) -------------------------------------------------------------

    @Override
    public Status probe(int source, int tag) {
        return probes.probe(source, tag);
    }

    @Override
    public java.util.Optional<Status> iprobe(int source, int tag) {
        return probes.iprobe(source, tag);
    }

    @Override
    public dev.ferry.MatchedMessage mprobe(int source, int tag) {
        return probes.mprobe(source, tag);
    }

    @Override
    public java.util.Optional<dev.ferry.MatchedMessage> improbe(int source, int tag) {
        return probes.improbe(source, tag);
    }

    /**
     * The buffer as this transfer hands it to the inner transport. The caller's buffer is pinned
     * by the front until the transfer completes, and may be closed meanwhile (its memory stays
     * allocated); the inner transport gets an unowned view of the same host memory, which no
     * closing of the caller's can invalidate. Device memory never reaches the inner communicator (it is copied through staging
     * buffers or mapped by IPC), so it keeps its allocation, which IPC offers need.
     */
    static Buffer innerView(Buffer b) {
        return b instanceof HostBuffer h ? HostBuffer.wrap(h.segment(), h.kind()) : b;
    }

    /** True for memory staged by this communicator (device memory, or host memory in the test mode). */
    boolean staged(Buffer b) {
        return b != null && rt.engineFor(b) != null;
    }

    /** The kind of memory for messages. */
    static String kind(Buffer b) {
        return b == null ? "none" : b.kind() == MemoryKind.DEVICE ? "device" : b.kind().toString().toLowerCase();
    }
}
