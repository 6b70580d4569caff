// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaIpc;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The short allReduce and allGather of device buffers among the ranks of a node: one kernel per
 * rank and call, the ranks meeting on the GPU ({@link DeviceReduction#allReduceShort},
 * {@link DeviceReduction#allGatherShort}), so that a call costs one launch and one wait for the
 * kernel's status word in pinned memory, with no host round between the ranks after the call's
 * records and no closing barrier. Both collectives run rounds of one protocol on one scratch.
 *
 * <p>Each rank owns a scratch in device memory (a header and two slots, each with room for every
 * rank's {@link #SLOT_BYTES}), made and mapped by every peer once, at the first short call of the
 * communicator: a collective step (one allGather of the handles and one agreement, {@link Group#everyRank})
 * whose answer is the same on every rank. A round stores the rank's input into every peer's scratch, so no peer
 * reads the caller's buffer, or this rank's memory at all; the next round uses the other slot, and
 * the one after that starts only after every rank has arrived in between, so a slot is never
 * written while a peer may read it.
 * The GPU numbers the rounds (in the scratch's header), alike on every rank: the calls that take
 * this path are decided from records that every rank reads the same ({@link IpcCollectives}).
 *
 * <p>The ranks' kernels must run at once: ranks on different GPUs, or sharing one under CUDA MPS.
 * Ranks that share a GPU without MPS take turns on it, so there the path is off from the start.
 * A rank whose kernel waits too long for a peer ({@link #PATIENCE_NANOS}: a peer that has not
 * launched yet, or a peer's process that is not running) returns to the host,
 * polls the progress engine and launches again to wait, so a late peer delays the call but never
 * holds the GPU. {@link #close} frees the scratch at once: a rank whose last round is done has
 * every peer's words of it, and no more come.
 */
final class ShortRounds {

    /** The largest allReduce (allGather: contribution of a rank) this path carries, in bytes per rank (one slot). */
    static final long SLOT_BYTES = 16 * 1024;
    /**
     * The scratch's size: its header and two slots, rounded up to 2 MiB. CUDA places smaller
     * allocations in shared 2 MiB blocks and maps a block once per process, so a small scratch
     * mapped by the peers would make them fail to map the application's buffers that land in its
     * block (CUDA_ERROR_ALREADY_MAPPED, seen in the JMH bench); an allocation of 2 MiB has a block of its own.
     */
    static final long SCRATCH_BYTES = 2L << 20;

    static {
        if (DeviceReduction.shortScratchBytes(SLOT_BYTES) > SCRATCH_BYTES) {
            throw new AssertionError("the short rounds' scratch (" + DeviceReduction.shortScratchBytes(SLOT_BYTES) + " bytes) exceeds " + SCRATCH_BYTES);
        }
    }
    /** How long one launch waits on the GPU for the other ranks before it returns to the host. */
    static final long PATIENCE_NANOS = 2_000_000L;

    private static final System.Logger LOG = System.getLogger("dev.ferry.collectives");

    private final Group comm;
    private final NodeIpc rt;
    private final int device;
    private final DeviceBuffer scratch;
    /** Every rank's scratch as mapped here (this rank's own address at {@code me}). */
    private final long[] scratches;
    /** The peers' mapped allocations, to unmap (0 at {@code me}). */
    private final long[] mapped;
    /** Pinned: the kernel's status word at 0, and the stream-ordered rounds' failure word at {@link #FAILED}. */
    private final HostBuffer status;
    /** Rounds were enqueued in stream order ({@link #enqueue}). */
    private boolean streamed;
    private boolean closed;
    /** In {@link #status}: the int a stream-ordered round sets when it waited too long for a peer. */
    private static final long FAILED = 8;

    /** The status word before the kernel writes it (0: done; 1: it waited {@link #PATIENCE_NANOS} for a peer). */
    private static final int PENDING = 2;

    private static final java.lang.invoke.VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private ShortRounds(Group comm, NodeIpc rt, int device, DeviceBuffer scratch, long[] scratches, long[] mapped, HostBuffer status) {
        this.comm = comm;
        this.rt = rt;
        this.device = device;
        this.scratch = scratch;
        this.scratches = scratches;
        this.mapped = mapped;
        this.status = status;
    }

    /** Whether an allReduce (or allGather) of {@code bytes} per rank among {@code ranks} ranks fits this path. */
    static boolean fits(long bytes, int ranks) {
        return bytes > 0 && bytes <= SLOT_BYTES && ranks >= 2 && ranks <= DeviceReduction.MAX_SOURCES;
    }

    /** The GPU of this rank's scratch: calls with buffers on another GPU take the regular IPC path. */
    int device() {
        return device;
    }

    /**
     * Makes this rank's scratch on {@code device}, maps every peer's, and agrees with every rank that
     * all of them could and that their kernels run at once (collective: every rank of {@code comm}
     * calls it in the same call). Returns null on every rank when some rank could not (the reason
     * printed by that rank), or when ranks share a GPU without MPS ({@link Cuda#mpsEnabled}).
     */
    static ShortRounds open(Group comm, NodeIpc rt, int device) {
        int n = comm.size(), me = comm.rank();
        // a record: the scratch's IPC handle, its offset, and where its GPU sits on the PCI bus (ordinals
        // need not agree between processes, and a pointer mapped by IPC reports the importing GPU)
        final int record = CudaIpc.HANDLE_BYTES + 16, pciAt = CudaIpc.HANDLE_BYTES + 8;
        final int myPci = Cuda.device(device).pciLocation();
        DeviceBuffer scratch = null;
        HostBuffer status = null;
        long[] scratches = new long[n];
        long[] mapped = new long[n];
        String failure = null;
        try (HostBuffer mine = HostBuffer.allocate(record); HostBuffer all = HostBuffer.allocate((long) record * n)) {
            boolean sharesGpu = false;
            try {
                scratch = Cuda.allocate(device, SCRATCH_BYTES);
                Cuda.fill(scratch, (byte) 0);
                status = Cuda.allocatePinned(128);
                status.segment().fill((byte) 0);
                status.segment().set(ValueLayout.JAVA_INT, 0, PENDING);
                CudaIpc.Export e = CudaIpc.export(scratch);
                MemorySegment.copy(MemorySegment.ofArray(e.handle()), 0, mine.segment(), 0, CudaIpc.HANDLE_BYTES);
                mine.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, CudaIpc.HANDLE_BYTES, e.offset());
                mine.segment().set(ValueLayout.JAVA_INT_UNALIGNED, pciAt, myPci);
            } catch (CudaException e) {
                failure = "cannot make its scratch: " + e.getMessage();
                mine.segment().fill((byte) 0);
            }
            comm.progress();
            comm.mover().allGather(mine, all, record, DataType.BYTE);
            MemorySegment s = all.segment();
            for (int r = 0; r < n && failure == null; r++) {
                if (r == me) {
                    scratches[r] = scratch.address();
                    continue;
                }
                long at = (long) r * record;
                byte[] handle = new byte[CudaIpc.HANDLE_BYTES];
                MemorySegment.copy(s, at, MemorySegment.ofArray(handle), 0, CudaIpc.HANDLE_BYTES);
                if (java.util.Arrays.equals(handle, new byte[CudaIpc.HANDLE_BYTES])) {
                    failure = "rank " + r + " has no scratch";
                    break;
                }
                try {
                    mapped[r] = CudaIpc.open(handle, device);
                    scratches[r] = mapped[r] + s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + CudaIpc.HANDLE_BYTES);
                    int theirPci = s.get(ValueLayout.JAVA_INT_UNALIGNED, at + pciAt);
                    int theirs = Cuda.ordinalAt(theirPci);
                    sharesGpu |= theirPci == myPci;
                    if (theirs < 0) {
                        failure = "rank " + r + "'s GPU (PCI location " + Integer.toHexString(theirPci) + ") is not visible to this process";
                    } else if (!Cuda.canAccessPeer(device, theirs) || !Cuda.enablePeerAccess(device, theirs)) {
                        failure = "GPU " + device + " cannot access GPU " + theirs + " (rank " + r + "'s scratch) directly";
                    }
                } catch (CudaException e) {
                    failure = "cannot map rank " + r + "'s scratch: " + e.getMessage();
                }
            }
            // ranks that share a GPU meet there only under MPS: without it their contexts take turns, and
            // a kernel waiting for a peer's would wait for the GPU's time slice (2.3 ms per call, measured)
            boolean meets = !sharesGpu || Cuda.mpsEnabled(device);
            comm.progress();
            if ((comm.everyRank(failure == null, failure == null && meets) & 2) != 0) {
                return new ShortRounds(comm, rt, device, scratch, scratches, mapped, status);
            }
        }
        if (failure != null) {
            LOG.log(System.Logger.Level.WARNING, "rank " + me + ": the short allReduce on the GPU is off for this communicator: " + failure);
        }
        // no round ran: nobody reads this rank's scratch
        for (int r = 0; r < n; r++) {
            if (mapped[r] != 0) {
                try {
                    CudaIpc.close(mapped[r], device);
                } catch (CudaException ignored) {
                    // unmapping after a failed set-up: the path stays off either way
                }
            }
        }
        if (scratch != null) scratch.close();
        if (status != null) status.close();
        return null;
    }

    /**
     * One round: {@code recv = fold of every rank's send}, {@code count} elements, on {@code stream};
     * returns once the result is in {@code recv} (the kernel's last instructions may still run: the
     * stream orders what follows on it, and the front orders the next call after the context).
     */
    void allReduce(long send, long recv, long count, DataType type, ReduceOp op, CudaStream stream) {
        round(resume -> DeviceReduction.allReduceShort(type, op, recv, send, scratches, comm.rank(), count, SLOT_BYTES, resume,
                status.address(), PATIENCE_NANOS, stream), stream);
        rt.count("shortAllReduces");
        rt.count("gpuReductions");
    }

    /** One round: {@code recv} = every rank's {@code bytes} of {@code send}, in rank order; returns as {@link #allReduce}. */
    void allGather(long send, long recv, long bytes, CudaStream stream) {
        round(resume -> DeviceReduction.allGatherShort(recv, send, scratches, comm.rank(), bytes, SLOT_BYTES, resume, status.address(),
                PATIENCE_NANOS, stream), stream);
        rt.count("shortAllGathers");
    }

    /** A launch of one round's kernel; {@code resume}: the round's launch again after it came back waiting for a peer. */
    private interface Launch {
        void launch(boolean resume);
    }

    /** Launches the round and waits for its status word, launching it again (to resume) while it comes back waiting for a peer. */
    private void round(Launch kernel, CudaStream stream) {
        MemorySegment st = status.segment();
        boolean resume = false;
        while (true) {
            kernel.launch(resume);
            int s = awaitStatus(st, stream);
            // armed for the next launch now, while the word's line is in this core's cache (the
            // kernel wrote it last and writes nothing after it)
            st.set(ValueLayout.JAVA_INT, 0, PENDING);
            if (s == 0) {
                return;
            }
            if (s != 1) {
                throw new CudaException("the short round's kernel ended without a status (" + s + ") on rank " + comm.rank(), 0);
            }
            rt.count("shortRoundWaits");
            comm.progress();
            resume = true;
        }
    }

    /**
     * One round in stream order ({@link DeviceReduction#allReduceStream}): enqueued on
     * {@code stream} after its earlier work, the host not waiting; the GPU counts the rounds, so a
     * CUDA graph that captured the launch runs a round per replay. An instance runs its rounds
     * either this way or by {@link #allReduce}, never both. A round whose kernel waited
     * {@code patienceNanos} for a peer marks the instance failed: the next call throws.
     */
    void enqueue(long send, long recv, long count, DataType type, ReduceOp op, CudaStream stream, long patienceNanos) {
        throwIfFailed(patienceNanos);
        streamed = true;
        DeviceReduction.allReduceStream(type, op, recv, send, scratches, comm.rank(), count, SLOT_BYTES, status.address() + FAILED,
                patienceNanos > 0 ? patienceNanos : Long.MAX_VALUE, stream);
        rt.count("shortAllReducesOnStream");
    }

    /** Throws when a stream-ordered round's kernel gave up waiting for a peer (the word it sets, read from host memory). */
    void throwIfFailed(long patienceNanos) {
        if (closed || !streamed) return;
        if ((int) INT.getAcquire(status.segment(), FAILED) != 0) {
            throw new dev.ferry.StreamOperationException("allReduce in stream order on rank " + comm.rank() + ": an earlier round's kernel waited "
                    + patienceNanos / 1_000_000 + " ms (ferry.timeout) for a peer that never arrived; its result and every later one are undefined",
                    new dev.ferry.OperationTimeoutException("a peer's kernel did not arrive within ferry.timeout"));
        }
    }

    /**
     * Waits for the kernel's status word, which it writes last (after its result, fenced for the
     * GPU, where every reader of the result runs): under MPS the word arrives several
     * microseconds before a stream synchronize returns. The stream is queried now and then, so that a
     * kernel that failed (and never wrote the word) is an exception, not a hang.
     */
    private static int awaitStatus(MemorySegment st, CudaStream stream) {
        for (int spins = 1; ; spins++) {
            int s = (int) INT.getAcquire(st, 0L);
            if (s != PENDING) return s;
            if ((spins & 1023) == 0 && stream.isIdle()) { // isIdle throws for a kernel that failed
                return (int) INT.getAcquire(st, 0L);
            }
            Thread.onSpinWait();
        }
    }

    /**
     * Unmaps the peers' scratches and frees this rank's. The rounds push every rank's input into its
     * peers' scratches and read only their own: once this rank's last round is done (its status
     * word seen, or the view synchronized), every peer's words of it have landed here, no later
     * words come, and no peer reads this scratch, so there is nothing to wait for.
     */
    void close() {
        if (closed) return;
        closed = true;
        int n = scratches.length;
        RuntimeException error = null;
        for (int r = 0; r < n; r++) {
            if (mapped[r] == 0) continue;
            try {
                CudaIpc.close(mapped[r], device);
            } catch (RuntimeException e) {
                if (error == null) error = e; else error.addSuppressed(e);
            }
        }
        try {
            scratch.close();
        } catch (RuntimeException e) {
            if (error == null) error = e; else error.addSuppressed(e);
        }
        status.close();
        if (error != null) throw error;
    }
}
