// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.collectives.ipc.IpcOffer;
import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * One staged send (see {@link Wire} for the protocol). Eager messages: one MPI message, from the
 * user's host buffer or through one staging slot. Longer ones: the first piece with the first
 * {@code eager} bytes, then chunks; a device buffer's chunks are copied device-to-host on a
 * stream into pooled staging buffers, up to {@code depth} ahead, and each is sent as soon as its
 * copy is done, so that the copy of chunk k+1 overlaps the transfer of chunk k. Host buffers'
 * chunks are sent straight from the buffer. To a peer of the node, a device buffer is offered by
 * IPC first.
 */
final class StagedSend extends Progress.Op {
    private final StagedTransport comm;
    private final StagedRuntime rt;
    private final Buffer buffer;
    private final long bytes;
    private final int dest;
    private final int tag;
    private final CopyEngine engine; // null: host memory sent straight

    private HostBuffer slot;
    private Request first;      // the eager message or the first piece
    private Request reply;      // IPC: the receiver's answer
    private int transfer = -1;
    private long chunk;
    private boolean awaitingReply;

    // chunk pipeline
    private long base, chunks, nextCopy, nextSend;
    private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
    private boolean chunking;
    private Tuning tuning;

    private static final class InFlight {
        final long k;
        final HostBuffer staging;
        final CopyEngine.Fence copied;
        Request sent;

        InFlight(long k, HostBuffer staging, CopyEngine.Fence copied) {
            this.k = k;
            this.staging = staging;
            this.copied = copied;
        }
    }

    StagedSend(StagedTransport comm, Buffer buffer, long bytes, int dest, int tag) {
        this.comm = comm;
        this.rt = comm.runtime();
        this.buffer = StagedTransport.innerView(buffer);
        this.bytes = bytes;
        this.dest = dest;
        this.tag = tag;
        this.engine = rt.engineFor(buffer);
    }

    @Override
    String describe() {
        return "staged send of " + bytes + " bytes to rank " + dest + " tag " + tag;
    }

    @Override
    void post() {
        StagedSettings s = rt.settings;
        tuning = comm.tuning();
        if (engine != null) {
            engine.awaitPriorWork(buffer);
        }
        if (bytes <= s.eager()) {
            rt.stats.eagerSends.increment();
            if (engine == null) {
                first = isend(comm.user(), buffer, bytes, tag);
            } else {
                // one synchronous small copy (cuMemcpy) into a cached slot: cheaper than copy + event + wait
                slot = acquireSlot();
                engine.toStagingNow(slot, 0, buffer, 0, bytes);
                first = isend(comm.user(), slot, bytes, tag);
            }
            return;
        }
        rt.stats.framedSends.increment();
        transfer = comm.nextTransfer(dest);
        slot = acquireSlot();
        MemorySegment seg = slot.segment();
        IpcOffer o = comm.mayOfferIpc(buffer, dest) ? comm.ipcOffer(buffer) : null; // null also when exporting failed
        if (o != null) {
            rt.stats.ipcOffers.increment();
            chunk = bytes <= tuning.threshold() ? bytes : tuning.chunkFor(bytes);
            new Wire.Header(Wire.FLAG_IPC_OFFER, bytes, 0, chunk, transfer).write(seg);
            o.write(seg, Wire.HEADER);
            HostBuffer answer = slot.slice(Wire.scratch(s.eager()), Wire.REPLY);
            long t = rt.calls.start();
            reply = comm.bulk().irecv(answer, Wire.REPLY, DataType.BYTE, dest, Wire.replyTag(transfer));
            rt.calls.end(Calls.Kind.MPI_POST, t);
            awaitingReply = true;
        } else {
            // Staged memory sends no data in the first piece (inline 0): the header goes out at once,
            // with no small copy before it on either side, and chunk 0's copy starts right after.
            // Host memory sent straight carries the first eager bytes in it (no copy needed).
            long inline = engine == null ? s.eager() : 0;
            chunk = bytes <= tuning.threshold() ? bytes - inline : tuning.chunkFor(bytes - inline);
            new Wire.Header(0, bytes, inline, chunk, transfer).write(seg);
            copyIn(slot, Wire.HEADER, 0, inline);
            startChunks(inline);
        }
        first = isend(comm.user(), slot.slice(0, Wire.firstPiece(s.eager())), Wire.firstPiece(s.eager()), tag);
    }

    private Request isend(Transport c, Buffer b, long n, int t) {
        long t0 = rt.calls.start();
        Request r = c.isend(b, n, DataType.BYTE, dest, t);
        rt.calls.end(Calls.Kind.MPI_POST, t0);
        return r;
    }

    /** MPI_Test, counted. */
    private boolean done(Request r) {
        long t0 = rt.calls.start();
        boolean d = r.test().isPresent();
        rt.calls.end(Calls.Kind.MPI_TEST, t0);
        return d;
    }

    private HostBuffer acquireSlot() {
        long t0 = rt.calls.start();
        HostBuffer h = rt.slots.acquire(rt.slots.maxBytes(), true);
        rt.calls.end(Calls.Kind.POOL, t0);
        return h;
    }

    /** Copies user bytes into a slot, synchronously. */
    private void copyIn(HostBuffer into, long at, long from, long n) {
        if (engine != null) {
            engine.toStagingNow(into, at, buffer, from, n);
        } else {
            MemorySegment.copy(((HostBuffer) buffer).segment(), from, into.segment(), at, n);
        }
    }

    private void startChunks(long inline) {
        base = inline;
        chunks = Wire.chunks(bytes, inline, chunk);
        chunking = true;
    }

    private long offset(long k) {
        return base + k * chunk;
    }

    private long length(long k) {
        return Math.min(chunk, bytes - offset(k));
    }

    @Override
    boolean advance() {
        boolean moved = false;
        if (first != null && done(first)) {
            first = null;
            moved = true;
        }
        if (awaitingReply && done(reply)) {
            awaitingReply = false;
            moved = true;
            int code = slot.segment().get(ValueLayout.JAVA_INT_UNALIGNED, Wire.scratch(rt.settings.eager()));
            switch (code) {
                case Wire.REPLY_DONE -> {
                    // the receiver copied from our GPU: nothing more to send
                }
                case Wire.REPLY_SEND, Wire.REPLY_SEND_NO_IPC -> {
                    rt.stats.ipcRefused.increment();
                    if (code == Wire.REPLY_SEND_NO_IPC) {
                        comm.noIpcTo(dest);
                    }
                    startChunks(0);
                }
                default -> throw new FerryException(describe() + ": unknown IPC reply " + code + " from rank " + dest);
            }
        }
        if (chunking) {
            moved |= pump();
        }
        if (first == null && !awaitingReply && (!chunking || (nextSend == chunks && inFlight.isEmpty()))) {
            complete(new Status(dest, tag, bytes));
        }
        return moved;
    }

    /** The chunks to one rank, when the oldest of them in flight is all this send waits for. */
    private record ChunkOut(Transport bulk, int dest) {
    }

    /**
     * See {@link Progress.Op#waitKey()}: the copy engine while the oldest chunk's staging copy is
     * all this send waits for (copies finish in order), or the chunks to the destination while the
     * oldest chunk's MPI send is (the receiver takes them in order, as it posted the transfers).
     */
    @Override
    Object waitKey() {
        if (!chunking || engine == null || awaitingReply || inFlight.isEmpty()) {
            return null;
        }
        if (nextCopy < chunks && inFlight.size() < tuning.depth()) {
            return null; // it may still issue copies
        }
        InFlight oldest = inFlight.peekFirst();
        if (oldest.sent == null) {
            return new Progress.Copies(engine, false);
        }
        for (InFlight f : inFlight) {
            if (f.sent == null && f.copied.isDone()) {
                return null; // a chunk ready to go
            }
        }
        return new ChunkOut(comm.bulk(), dest);
    }

    private boolean pump() {
        boolean moved = false;
        if (engine == null) {
            // host memory: every chunk straight from the buffer, in order
            while (nextSend < chunks) {
                InFlight f = new InFlight(nextSend, null, CopyEngine.Fence.DONE);
                f.sent = isend(comm.bulk(), buffer.slice(offset(nextSend), length(nextSend)), length(nextSend), Wire.dataTag(transfer));
                inFlight.addLast(f);
                rt.stats.straightChunksOut.increment();
                nextSend++;
                nextCopy++;
                moved = true;
            }
        } else {
            // device (or staged host) memory: copies up to depth ahead
            while (nextCopy < chunks && inFlight.size() < tuning.depth()) {
                long t0 = rt.calls.start();
                HostBuffer staging = rt.chunks.acquireForTransfer(length(nextCopy), inFlight.isEmpty());
                rt.calls.end(Calls.Kind.POOL, t0);
                if (staging == null) {
                    break;
                }
                CopyEngine.Fence f;
                try {
                    f = engine.toStaging(staging, 0, buffer, offset(nextCopy), length(nextCopy));
                } catch (RuntimeException e) {
                    rt.chunks.release(staging);
                    throw e;
                }
                inFlight.addLast(new InFlight(nextCopy, staging, f));
                nextCopy++;
                moved = true;
            }
            // sends in chunk order, each once its copy is done
            for (InFlight f : inFlight) {
                if (f.sent != null) {
                    continue;
                }
                if (!f.copied.isDone()) {
                    break;
                }
                f.sent = isend(comm.bulk(), f.staging.slice(0, length(f.k)), length(f.k), Wire.dataTag(transfer));
                rt.stats.stagedChunksOut.increment();
                nextSend++;
                moved = true;
            }
        }
        // chunks leave in order: test the oldest sends first and stop at the first still in flight
        // (one MPI test per round also drives MPI's progress for the others)
        for (Iterator<InFlight> it = inFlight.iterator(); it.hasNext(); ) {
            InFlight f = it.next();
            if (f.sent == null || !done(f.sent)) {
                break;
            }
            if (f.staging != null) {
                long t0 = rt.calls.start();
                rt.chunks.release(f.staging);
                rt.calls.end(Calls.Kind.POOL, t0);
            }
            it.remove();
            moved = true;
        }
        return moved;
    }

    @Override
    void cleanup(boolean failed) {
        // a staging buffer MPI may still read is not given back (it is dropped instead)
        for (InFlight f : inFlight) {
            if (f.staging == null) continue;
            try {
                f.copied.await();
                if (f.sent == null || f.sent.test().isPresent()) {
                    rt.chunks.release(f.staging);
                }
            } catch (RuntimeException e) {
                // keep it out of the pool
            }
        }
        inFlight.clear();
        if (slot != null) {
            boolean busy = false;
            try {
                busy = (first != null && first.test().isEmpty()) || (awaitingReply && reply.test().isEmpty());
            } catch (RuntimeException e) {
                busy = true;
            }
            if (!busy) {
                rt.slots.release(slot);
            }
            slot = null;
        }
    }
}
