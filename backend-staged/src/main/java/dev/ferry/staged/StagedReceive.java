// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.collectives.ipc.IpcOffer;
import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.DeviceBuffer;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

/**
 * One staged receive (see {@link Wire}). The first receive, of a first piece's size, is posted at
 * once into a staging slot with the user's source and tag (wildcards allowed), so that receives
 * match in the order they were posted. Its size tells an eager message from a first piece; a
 * first piece's header gives the real size, the chunk size and the transfer tag, and the chunks
 * are then received from the resolved source: straight into a host buffer, or into pooled staging
 * buffers whose host-to-device copy is issued as each chunk lands, while the next chunks arrive.
 * An IPC offer is answered by a copy from the peer's GPU, or by SEND. A message longer than the
 * receive buffer is received whole (the excess discarded) so that the communicator stays in step,
 * then reported as a {@link dev.ferry.TruncationException}.
 */
final class StagedReceive extends Progress.Op {
    private final StagedTransport comm;
    private final StagedRuntime rt;
    private final Buffer buffer;
    private final long capacity;
    private final DataType type;
    private final int source;
    private final int tag;
    private final CopyEngine engine; // null: host memory received straight

    private HostBuffer slot;
    private boolean ownSlot; // the slot is a message a probe took off MPI (Arrivals): closed, not pooled
    private Arrivals.Arrived adopted;
    private Status pending; // the adopted message, for the next advance
    private Request first;
    private Request reply;
    private int from = -1, tagSeen = -1;
    private long total = -1;
    private final List<CopyEngine.Fence> copies = new ArrayList<>();
    private dev.ferry.collectives.ipc.CudaIpcCache.Mapping mapping;
    private CopyEngine.Fence peerCopy;
    private Wire.Header header;
    private boolean ipcDone;

    private boolean chunking;
    private long base, chunk, chunks, nextPost;
    private int held;
    private final List<InFlight> inFlight = new ArrayList<>();

    private static final class InFlight {
        final long k;
        final HostBuffer staging; // null when received straight into the user's buffer
        final Request received;
        CopyEngine.Fence copied;

        InFlight(long k, HostBuffer staging, Request received) {
            this.k = k;
            this.staging = staging;
            this.received = received;
        }
    }

    StagedReceive(StagedTransport comm, Buffer buffer, long capacity, DataType type, int source, int tag) {
        this(comm, buffer, capacity, type, source, tag, null);
    }

    /** A receive of {@code adopted}, a message a matched probe took off MPI (null: match a message as usual). */
    StagedReceive(StagedTransport comm, Buffer buffer, long capacity, DataType type, int source, int tag, Arrivals.Arrived adopted) {
        this.adopted = adopted;
        this.comm = comm;
        this.rt = comm.runtime();
        this.buffer = StagedTransport.innerView(buffer);
        this.capacity = capacity;
        this.type = type;
        this.source = source;
        this.tag = tag;
        this.engine = rt.engineFor(buffer);
    }

    @Override
    String describe() {
        return "staged receive of up to " + capacity + " bytes from " + (source < 0 ? "any rank" : "rank " + source)
                + " tag " + (tag < 0 ? "any" : Integer.toString(tag));
    }

    @Override
    void post() {
        if (engine != null) {
            engine.awaitPriorWork(buffer);
        }
        if (adopted == null) {
            adopted = comm.probes().arrivals().take(source, tag); // a message a probe took off MPI comes first
        }
        if (adopted != null) {
            slot = adopted.data();
            ownSlot = true;
            pending = new Status(adopted.source(), adopted.tag(), adopted.wireBytes());
            return;
        }
        long piece = Wire.firstPiece(rt.settings.eager());
        long t = rt.calls.start();
        slot = rt.slots.acquire(rt.slots.maxBytes(), true);
        rt.calls.end(Calls.Kind.POOL, t);
        first = irecv(comm.user(), slot.slice(0, piece), piece, source, tag);
    }

    private Request irecv(Transport c, Buffer b, long n, int src, int t) {
        long t0 = rt.calls.start();
        Request r = c.irecv(b, n, DataType.BYTE, src, t);
        rt.calls.end(Calls.Kind.MPI_POST, t0);
        return r;
    }

    /** MPI_Test, counted; the status when complete. */
    private Optional<Status> test(Request r) {
        long t0 = rt.calls.start();
        Optional<Status> s = r.test();
        rt.calls.end(Calls.Kind.MPI_TEST, t0);
        return s;
    }

    @Override
    boolean advance() {
        boolean moved = false;
        if (pending != null) {
            Status arrivedEarlier = pending;
            pending = null;
            moved = true;
            arrived(arrivedEarlier);
        }
        if (first != null) {
            Optional<Status> s = test(first);
            if (s.isEmpty()) {
                return false;
            }
            first = null;
            moved = true;
            arrived(s.get());
        }
        if (peerCopy != null && peerCopy.isDone()) {
            peerCopy = null;
            rt.ipc.mappings().release(mapping);
            mapping = null;
            answer(Wire.REPLY_DONE);
            ipcDone = true;
            moved = true;
        }
        if (chunking) {
            moved |= pump();
        }
        for (Iterator<CopyEngine.Fence> it = copies.iterator(); it.hasNext(); ) {
            if (it.next().isDone()) {
                it.remove();
                moved = true;
            }
        }
        if (reply != null && test(reply).isPresent()) {
            reply = null;
            moved = true;
        }
        boolean chunksDone = !chunking || (nextPost == chunks && inFlight.isEmpty());
        if (total >= 0 && chunksDone && copies.isEmpty() && peerCopy == null && reply == null
                && (header == null || !header.ipcOffer() || ipcDone || chunking)) {
            finish();
        }
        return moved;
    }

    private void arrived(Status s) {
        from = s.source();
        tagSeen = s.tag();
        long eager = rt.settings.eager();
        if (s.byteCount() <= eager) {
            total = s.byteCount();
            long n = Math.min(total, capacity);
            if (engine != null && n > 0) {
                engine.fromStagingNow(buffer, 0, slot, 0, n); // one synchronous small copy (cuMemcpy from the pinned slot)
            } else {
                copyOut(slot, 0, 0, n);
            }
            return;
        }
        header = Wire.Header.read(slot.segment(), from);
        total = header.total();
        chunk = header.chunk();
        if (header.ipcOffer()) {
            IpcOffer offer = IpcOffer.read(slot.segment(), Wire.HEADER);
            int code = comm.ipcReceive(buffer, from, offer, this);
            if (code == Wire.REPLY_DONE) {
                return; // the peer copy runs; DONE goes back when it is complete
            }
            answer(code);
            startChunks(0);
        } else {
            // post the chunks' receives first, then copy the inline bytes (only host senders send any)
            startChunks(header.inline());
            pump();
            copyOut(slot, Wire.HEADER, 0, Math.min(header.inline(), capacity));
        }
    }

    /** Called by the IPC path: the copy from the peer's mapping runs behind {@code fence}. */
    void peerCopyStarted(dev.ferry.collectives.ipc.CudaIpcCache.Mapping m, CopyEngine.Fence fence) {
        this.mapping = m;
        this.peerCopy = fence;
    }

    private void answer(int code) {
        long at = Wire.scratch(rt.settings.eager());
        slot.segment().set(ValueLayout.JAVA_INT_UNALIGNED, at, code);
        long t0 = rt.calls.start();
        reply = comm.bulk().isend(slot.slice(at, Wire.REPLY), Wire.REPLY, DataType.BYTE, from, Wire.replyTag(header.transferTag()));
        rt.calls.end(Calls.Kind.MPI_POST, t0);
    }

    /** Copies {@code n} staged bytes at {@code at} into the user's buffer at {@code to}. */
    private void copyOut(HostBuffer staged, long at, long to, long n) {
        if (n <= 0) {
            return;
        }
        if (engine != null) {
            copies.add(engine.fromStaging(buffer, to, staged, at, n));
        } else {
            MemorySegment.copy(staged.segment(), at, ((HostBuffer) buffer).segment(), to, n);
        }
    }

    private void startChunks(long inline) {
        base = inline;
        chunks = Wire.chunks(total, inline, chunk);
        chunking = true;
    }

    private long offset(long k) {
        return base + k * chunk;
    }

    private long length(long k) {
        return Math.min(chunk, total - offset(k));
    }

    /** What this receive's first piece matches, when it waits for nothing else (see {@link Progress.Op#waitKey()}). */
    private record FirstPiece(Transport comm, int source, int tag) {
    }

    /** The next chunk from a sender, when a receive waits for nothing else. */
    private record NextChunk(Transport bulk, int source) {
    }

    @Override
    Object waitKey() {
        if (first != null) {
            // wildcards match out of the posting order of exact receives: never skipped
            return source >= 0 && tag >= 0 ? new FirstPiece(comm.user(), source, tag) : null;
        }
        if (!chunking || engine == null || !copies.isEmpty() || reply != null || peerCopy != null) {
            return null;
        }
        if (nextPost < chunks && held < comm.tuning().depth()) {
            return null; // it may still post receives
        }
        if (inFlight.isEmpty()) {
            return null;
        }
        InFlight oldest = inFlight.get(0);
        if (oldest.copied == null) {
            for (InFlight f : inFlight) {
                if (f.copied != null) {
                    return null; // a copy to the device to watch
                }
            }
            return new NextChunk(comm.bulk(), from);
        }
        for (InFlight f : inFlight) {
            if (f.copied == null) {
                return null; // a chunk to watch arrive
            }
        }
        return new Progress.Copies(engine, true); // only copies to the device left: they finish in the order issued
    }

    private boolean pump() {
        boolean moved = false;
        boolean starved = false; // the pool had no staging buffer for the next chunk
        int dataTag = Wire.dataTag(header.transferTag());
        while (nextPost < chunks) {
            long off = offset(nextPost), len = length(nextPost);
            if (engine == null && off + len <= capacity) {
                Request r = irecv(comm.bulk(), buffer.slice(off, len), len, from, dataTag);
                inFlight.add(new InFlight(nextPost, null, r));
            } else {
                if (held >= comm.tuning().depth()) {
                    break;
                }
                long t0 = rt.calls.start();
                HostBuffer staging = rt.chunks.acquireForTransfer(len, held == 0);
                rt.calls.end(Calls.Kind.POOL, t0);
                if (staging == null) {
                    starved = true;
                    break;
                }
                Request r;
                try {
                    r = irecv(comm.bulk(), staging.slice(0, len), len, from, dataTag);
                } catch (RuntimeException e) {
                    rt.chunks.release(staging);
                    throw e;
                }
                held++;
                inFlight.add(new InFlight(nextPost, staging, r));
            }
            nextPost++;
            moved = true;
        }
        // Chunks arrive in order (one source, one tag: MPI does not reorder them), so test the
        // oldest receive only and stop at the first still in flight; a landed chunk's copy to the
        // device is issued at once.
        boolean waiting = false; // a posted chunk has not arrived yet
        for (InFlight f : inFlight) {
            if (f.copied != null) {
                continue;
            }
            Optional<Status> s = test(f.received);
            if (s.isEmpty()) {
                waiting = true;
                break;
            }
            moved = true;
            long off = offset(f.k), len = length(f.k);
            if (s.get().byteCount() != len) {
                throw new FerryException(describe() + ": chunk " + f.k + " from rank " + from + " has " + s.get().byteCount()
                        + " bytes, expected " + len + " (protocol error)");
            }
            if (f.staging == null) {
                rt.stats.straightChunksIn.increment();
                f.copied = CopyEngine.Fence.DONE;
            } else {
                rt.stats.stagedChunksIn.increment();
                long n = Math.max(0, Math.min(len, capacity - off)); // the excess of a truncated message is dropped
                if (n == 0) {
                    f.copied = CopyEngine.Fence.DONE;
                } else if (engine != null) {
                    f.copied = engine.fromStaging(buffer, off, f.staging, 0, n);
                } else {
                    MemorySegment.copy(f.staging.segment(), 0, ((HostBuffer) buffer).segment(), off, n);
                    f.copied = CopyEngine.Fence.DONE;
                }
            }
        }
        // Copies to the device complete in the order they were issued (one stream): ask about the
        // oldest only, and only when its staging buffer is wanted (the pipeline is full) or when
        // there is nothing else to wait for, so that polling does not query every event each round.
        boolean wanted = nextPost < chunks && (held >= comm.tuning().depth() || starved);
        if (wanted || !waiting) {
            while (!inFlight.isEmpty()) {
                InFlight f = inFlight.get(0);
                if (f.copied == null || !f.copied.isDone()) {
                    break;
                }
                if (f.staging != null) {
                    long t0 = rt.calls.start();
                    rt.chunks.release(f.staging);
                    rt.calls.end(Calls.Kind.POOL, t0);
                    held--;
                }
                inFlight.remove(0);
                moved = true;
            }
        }
        return moved;
    }

    private void finish() {
        if (total > capacity) {
            rt.stats.truncated.increment();
            fail(comm.truncation("recv from rank " + from + " tag " + tagSeen, total, capacity));
            return;
        }
        if (total % type.size() != 0) {
            fail(new DataTypeMismatchException("recv: received " + total + " bytes from rank " + from + ", not a whole number of " + type
                    + " (" + type.size() + " bytes): sender and receiver disagree on the datatype"));
            return;
        }
        complete(new Status(from, tagSeen, total));
    }

    /**
     * Cancels the receive while its first receive has matched nothing (cancelled in the inner
     * MPI); false once a message (or its first piece) has arrived, or was taken from a probe.
     */
    @Override
    boolean cancel() {
        if (first == null || !first.cancel()) {
            return false; // when the inner cancel failed, its receive completed: the next advance takes the message
        }
        first = null;
        complete(Status.cancelledReceive(source, tag));
        return true;
    }

    /** True when the receive buffer is device memory the IPC path can copy into. */
    boolean deviceTarget() {
        return buffer instanceof DeviceBuffer && StagedRuntime.ipcExportable(buffer);
    }

    long capacity() {
        return capacity;
    }

    long total() {
        return total;
    }

    @Override
    void cleanup(boolean failed) {
        for (CopyEngine.Fence f : copies) {
            try {
                f.await();
            } catch (RuntimeException e) {
                // reported by the op already, or moot after its failure
            }
        }
        copies.clear();
        if (peerCopy != null) {
            try {
                peerCopy.await();
            } catch (RuntimeException e) {
                // as above
            }
            peerCopy = null;
        }
        if (mapping != null) {
            rt.ipc.mappings().release(mapping);
            mapping = null;
        }
        for (InFlight f : inFlight) {
            if (f.staging == null) continue;
            try {
                if (f.copied != null) {
                    f.copied.await();
                    rt.chunks.release(f.staging);
                } else if (f.received.test().isPresent()) {
                    rt.chunks.release(f.staging);
                }
            } catch (RuntimeException e) {
                // keep it out of the pool: MPI may still write into it
            }
        }
        inFlight.clear();
        if (slot != null) {
            boolean busy;
            try {
                busy = (first != null && first.test().isEmpty()) || (reply != null && reply.test().isEmpty());
            } catch (RuntimeException e) {
                busy = true;
            }
            if (!busy) {
                if (ownSlot) {
                    slot.close();
                } else {
                    rt.slots.release(slot);
                }
            }
            slot = null;
        }
    }
}
