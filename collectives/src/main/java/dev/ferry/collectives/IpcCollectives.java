// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaIpc;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.DeviceBuffer;
import dev.ferry.MemoryKind;
import dev.ferry.collectives.ipc.CudaIpcCache;
import dev.ferry.collectives.ipc.IpcOffer;
import dev.ferry.collectives.ipc.NodeIpc;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The engine of the collectives over CUDA IPC among the ranks of one node ({@link IpcAlgorithms}):
 * every rank reads (and writes) the other ranks' buffers where they are, mapped into its own
 * context, and reduces on the GPU with {@link DeviceReduction}; no byte crosses PCIe and nothing is
 * reduced on the host.
 *
 * <p>Each call starts with one small exchange of a record per rank, on the node's shared-memory
 * {@link NodeBoard} (or, where none could be made, an allGather over the mover): whether its buffers
 * can take this path (device memory of one GPU, exportable, aligned for the type), their IPC
 * handles (made once per allocation, {@link dev.ferry.collectives.ipc.IpcExports}) and its device.
 * Every rank decides from the same records, so all take this path or all decline it (the planner
 * then runs its next algorithm). Peers' allocations are mapped through the process's
 * {@link dev.ferry.collectives.ipc.CudaIpcCache} (once, then hits). A call that maps a pair of ranks
 * not yet proven (each rank's record says which peers it maps) also agrees (one allReduce) that
 * every rank could map what it needed and reach it from its GPU; if a rank could not, the path is off
 * for the communicator on every rank. Once every pair is proven, the ranks meet on the board after
 * mapping instead (a few hundred nanoseconds): where a rank could not map a peer's allocation (CUDA
 * maps a block of an owner's memory once per process, and another library of the process, such as a
 * CUDA-aware MPI, may hold that block), every rank declines that call alike, before any data moves.
 *
 * <p>Ordering: the front has finished the caller's prior device work on every rank before the call
 * (the device ordering contract), so once the records are exchanged every rank's input is ready and
 * its output is free. Each rank then runs its part on its collective stream, waits for it, and meets
 * the others on the node's board (or in an MPI barrier), after which no rank touches another's
 * memory: a rank returns only when every read of its buffers and every write into them is complete.
 * A call can instead end on the ranks' interprocess CUDA events (each records its event after its
 * part, the ranks meet while the GPU works, then each waits for every rank's event); that ending
 * measured slower under MPS on one GPU, so it is off unless {@link #offerEvents} turns it on, and
 * where CUDA cannot make or open such events a call ends the first way.
 *
 * <ul>
 * <li>allReduce and allGather, short ({@link ShortRounds}): up to {@link ShortRounds#SLOT_BYTES}
 *     bytes per rank (at most 8 ranks, whose kernels run at once: different GPUs, or one shared under
 *     CUDA MPS), after the records, one kernel per rank: each stores its input into a scratch slot of
 *     every other rank, mapped since the first such call, the ranks meet on the GPU, and each folds
 *     (allGather: lays out) every slot into its result (no buffer of the call is mapped, and no
 *     closing barrier);</li>
 * <li>allReduce, folded: every rank folds all ranks' inputs into its own result (one kernel);
 *     sliced: rank r folds slice r of every input into slice r of its result, then copies that
 *     slice into the other ranks' results (reduce-scatter and all-gather, fused);</li>
 * <li>reduce: the root folds everything, or, sliced, rank r folds slice r straight into the
 *     root's result;</li>
 * <li>reduceScatter: every rank folds its block of every rank's send buffer into its result;</li>
 * <li>broadcast: every other rank copies the root's buffer (or, split, its slice of it, then the
 *     other ranks' slices from them); allGather, allToAll, gather and scatter: every rank copies the
 *     blocks it gets from where they are, one copy-engine transfer per block or all in one kernel.</li>
 * </ul>
 *
 * <p>Inputs are folded in rank order, {@code ((in_0 op in_1) op in_2) ...}, element by element: the
 * result is the same on every rank and equal to {@link dev.ferry.spi.HostReduction}'s fold.
 */
final class IpcCollectives {
    private static final int OFFER = 64 + 4 * 8;
    /**
     * A record: state, device, need and root, whether the rank can take the short allReduce, where
     * its GPU sits on the PCI bus, the offers of buffers A and B, the handle of the rank's
     * interprocess event (zeros: none), the call's operation and bytes; last, one bit per entry of
     * {@link #recent}: whether the rank still holds every mapping of that call (the only field that
     * {@link #repeats} does not compare).
     */
    private static final int SHORT = 16, PCI = 20, A = 24, B = A + OFFER, EVENT = B + OFFER, OP = EVENT + 64, BYTES = OP + 8, KEPT = BYTES + 8,
            RECORD = KEPT + 8;
    /** Record states: some buffer in host memory (not a device collective), eligible, device memory that cannot take the path. */
    private static final int HOST = 0, ELIGIBLE = 1, REFUSED = 2;

    static {
        if (RECORD > Group.BOARD_RECORD_BYTES) throw new AssertionError("a record of " + RECORD + " bytes exceeds the group's board's " + Group.BOARD_RECORD_BYTES);
    }

    private static final System.Logger LOG = System.getLogger("dev.ferry.collectives");
    /** The collectives by their labels, as this class names its calls (a lookup at every call). */
    private static final java.util.Map<String, Collective> BY_LABEL = java.util.Arrays.stream(Collective.values())
            .collect(java.util.stream.Collectors.toUnmodifiableMap(Collective::label, c -> c));

    private final Group comm;
    private final NodeIpc rt;
    private final boolean applicable;
    private final HostBuffer mine;
    private final HostBuffer all;
    private String lastRefusal;
    private boolean warnedExport;
    /** TRUE once every rank mapped every peer (over one or more calls), FALSE once a rank could not map: null until either. */
    private Boolean verified;
    /**
     * The last {@link #RECENT} calls for which every rank mapped what it needed, the latest first: the
     * same list on every rank (every rank changes it on the same answers). A program that cycles
     * through a few buffers and sizes (the buckets of a training step) repeats all of them.
     */
    private final List<Mapped> recent = new ArrayList<>();
    /** How many mapped calls {@link #recent} keeps (one bit each in {@link #KEPT}). */
    static final int RECENT = 8;

    /** A call that every rank mapped: its records (each up to {@link #KEPT}), and this rank's cache's closes when it released them. */
    private static final class Mapped {
        final byte[] records;
        /** This rank's {@link CudaIpcCache#closes} when the call released its mappings (-1: not yet). */
        long closesAtEnd = -1;

        Mapped(byte[] records) {
            this.records = records;
        }
    }
    /** Whether the last exchange of records found host memory on some rank (the same on every rank). */
    private boolean lastHost;
    /** reached[r][p]: rank r mapped rank p's memory in a call that every rank agreed on (null before the first). */
    private boolean[][] reached;
    /** This rank's interprocess event (recorded after its part of each call) on {@link #eventDevice}, and its handle; null when CUDA gave none. */
    private CudaEvent done;
    private int eventDevice = -1;
    private byte[] doneHandle;
    /** False once a rank could not make or open an interprocess event: every call then ends with a stream synchronize and a barrier. */
    private boolean events = true;
    /**
     * Whether this rank offers its event: off by default, since ending on events was no faster than a
     * stream synchronize and the board's barrier at 8 B and slower at 1 MiB (ranks sharing an H100
     * under MPS, 2 and 4 ranks: bench/results/2026-11-24-h100x1-mps-transport-spi.md).
     */
    private volatile boolean offerEvents;
    /** The short rounds met on the GPU (allReduce and allGather): made at the first such call; null before, or for good once {@link #shortOff}. */
    private ShortRounds shortPath;
    /** True once the ranks agreed that the short rounds cannot run (a rank could not make or map a scratch). */
    private boolean shortOff;
    /** The short allReduce in stream order, with a scratch of its own: made at its first call; null before, or for good once {@link #streamShortOff}. */
    private ShortRounds streamShort;
    private boolean streamShortOff;
    /** Whether this rank offers the short rounds (on unless a measurement turns it off; a call takes them only when every rank offers them). */
    private volatile boolean offerShort = true;
    /** The peers' events as opened here, by rank, with the handles they were opened from. */
    private final CudaEvent[] peerEvents;
    private final byte[][] peerHandles;

    IpcCollectives(Group comm, NodeIpc ipc) {
        this.comm = comm;
        this.rt = ipc;
        this.applicable = comm.size() > 1 && ipc.enabled() && comm.topology().oneNode() && comm.topology().ipcEverywhere();
        this.mine = applicable ? HostBuffer.allocate(RECORD) : null;
        this.all = applicable ? HostBuffer.allocate((long) RECORD * comm.size()) : null;
        this.peerEvents = new CudaEvent[comm.size()];
        this.peerHandles = new byte[comm.size()][];
    }

    /** Whether a call may take this path at all (same answer on every rank: from settings and the peer table). */
    boolean applicable() {
        return applicable;
    }

    void close() {
        for (HostBuffer h : new HostBuffer[] {mine, all}) {
            if (h != null) h.close();
        }
        if (shortPath != null) shortPath.close();
        shortPath = null;
        if (streamShort != null) streamShort.close();
        streamShort = null;
        closeEvents();
    }

    /**
     * Every rank's record of this call into {@code all}: through the group's board (shared host memory
     * of the node's ranks, where a rank planned onto an algorithm that meets otherwise makes every
     * rank throw), or one allGather.
     */
    private void exchangeRecords(Collective op, int root, long bytes) {
        if (comm.board() != null) {
            comm.exchange(Group.CALL_RECORDS, SameCall.key(op, root), bytes, mine.segment(), all.segment(), RECORD);
            rt.count("boardRounds");
        } else {
            comm.progress();
            comm.mover().allGather(mine, all, RECORD, DataType.BYTE);
        }
    }

    /** A meeting within or at the end of a call: on the node's board, or one MPI barrier. */
    private void meet() {
        NodeBoard board = comm.board();
        if (board != null) {
            board.barrier(true, comm::progress);
        } else {
            comm.progress();
            comm.mover().barrier();
        }
    }

    /** The meeting after the mappings, before any data moves: true when every rank passed {@code ok} (on the board, or one agreement). */
    private boolean mapped(boolean ok) {
        NodeBoard board = comm.board();
        if (board != null) {
            return board.barrier(ok, comm::progress);
        }
        comm.progress();
        return (comm.everyRank(ok, true) & 1) != 0;
    }

    private void closeEvents() {
        for (int r = 0; r < peerEvents.length; r++) {
            if (peerEvents[r] != null) peerEvents[r].close();
            peerEvents[r] = null;
            peerHandles[r] = null;
        }
        if (done != null) done.close();
        done = null;
        doneHandle = null;
        eventDevice = -1;
    }

    /** This rank's interprocess event on {@code device} (made on first use); null when CUDA cannot make one (events then stay off). */
    private byte[] eventHandle(int device) {
        if (!events || !offerEvents) return null;
        if (eventDevice != device) {
            closeEvents();
            try {
                done = CudaIpc.newInterprocessEvent(device);
                doneHandle = CudaIpc.exportEvent(done);
                eventDevice = device;
            } catch (CudaException e) {
                closeEvents();
                events = false;
                LOG.log(System.Logger.Level.WARNING, "rank " + comm.rank() + ": no interprocess CUDA event (" + e.getMessage()
                        + "); IPC collectives end with a stream synchronize and a barrier instead");
                return null;
            }
        }
        return doneHandle;
    }

    /** Opens (once per handle) rank {@code r}'s event from its record at {@code at}. */
    private void openPeerEvent(MemorySegment s, long at, int r, int device) {
        byte[] h = handleAt(s, at);
        if (peerEvents[r] != null && java.util.Arrays.equals(h, peerHandles[r])) return;
        if (peerEvents[r] != null) peerEvents[r].close();
        peerEvents[r] = null;
        peerEvents[r] = CudaIpc.openEvent(h, device);
        peerHandles[r] = h;
    }

    /** The 64-byte IPC handle (of memory or of an event) at {@code at} of the records. */
    private static byte[] handleAt(MemorySegment s, long at) {
        byte[] h = new byte[64];
        MemorySegment.copy(s, at, MemorySegment.ofArray(h), 0, 64);
        return h;
    }

    private static boolean zero(MemorySegment s, long at, int bytes) {
        for (int i = 0; i < bytes; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, at + i) != 0) return false;
        }
        return true;
    }

    // ---- the operations: true when carried here, false: every rank stages instead ------------

    /**
     * The short allReduce met on the GPU ({@link ShortRounds}): true when carried, false when every
     * rank takes another algorithm (a rank's buffers cannot, or the kernels cannot meet here).
     */
    boolean shortAllReduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
        return shortRound("allReduce", send, recv, type, type.bytes(count), true,
                (path, stream) -> path.allReduce(send.address(), recv.address(), count, type, op, stream));
    }

    /** The short allGather met on the GPU ({@link ShortRounds}): as {@link #shortAllReduce}. */
    boolean shortAllGather(Buffer send, Buffer recv, long count, DataType type) {
        long bytes = type.bytes(count);
        return shortRound("allGather", send, recv, DataType.BYTE, bytes, false, (path, stream) -> path.allGather(send.address(), recv.address(), bytes, stream));
    }

    /** One round of a short collective on the path and stream given. */
    private interface ShortRun {
        void run(ShortRounds path, CudaStream stream);
    }

    /**
     * The short allReduce enqueued on {@code stream} ({@link ShortRounds#enqueue}), the host not
     * waiting: true when enqueued; false on every rank alike when the path cannot run here (the
     * first call sets it up, collectively, and every rank learns the same outcome). A stream-ordered
     * view passes device memory on every rank, so no records are exchanged; buffers on another GPU
     * than the stream's are a local error, as under NCCL.
     */
    @SuppressWarnings("try") // the scope is held for its close (restoring the caller's context), not used
    boolean enqueueShortAllReduce(CollectiveCall c, dev.ferry.DeviceStream s, long patienceNanos) {
        if (!applicable || streamShortOff || !(s instanceof CudaStream stream)) {
            return false;
        }
        int device = stream.deviceOrdinal();
        for (Buffer b : new Buffer[] {c.send(), c.recv()}) {
            if (!(b instanceof dev.ferry.DeviceBuffer d) || d.kind() != dev.ferry.MemoryKind.DEVICE || d.device() != device) {
                throw new dev.ferry.UnsupportedBufferException(c + " on a stream of GPU " + device + " over CUDA IPC: every buffer must be "
                        + "device memory (cuMemAlloc) of the stream's GPU, not " + b);
            }
        }
        try (dev.ferry.spi.DeviceSupport.Scope ignored = dev.ferry.spi.DeviceSupport.get().preserveContext()) {
            if (streamShort == null) {
                if (stream.isCapturing()) {
                    return false; // the set-up allocates, fills and maps memory, which no graph may hold: a first call outside the capture does it
                }
                streamShort = ShortRounds.open(comm, rt, device);
                if (streamShort == null) {
                    streamShortOff = true;
                    return false;
                }
            }
            if (streamShort.device() != device) {
                throw new dev.ferry.UnsupportedBufferException(c + " on a stream of GPU " + device + ": this communicator's stream-ordered short "
                        + "allReduce runs on GPU " + streamShort.device() + ", where its first call ran; keep a communicator's streams on one GPU");
            }
            streamShort.enqueue(c.send().address(), c.recv().address(), c.count(), c.type(), c.op(), stream, patienceNanos);
        }
        return true;
    }

    /** Throws when a stream-ordered short round of this communicator gave up waiting for a peer ({@link ShortRounds#throwIfFailed}). */
    void throwStreamFailure(long patienceNanos) {
        ShortRounds s = streamShort;
        if (s != null) s.throwIfFailed(patienceNanos);
    }

    /** allReduce: every rank folds all inputs into its result ({@code sliced} false), or reduce-scatter then all-gather, fused. */
    boolean allReduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, boolean sliced) {
        Call c = begin("allReduce", send, recv, type, count, true, sliced ? Need.A_AND_B : Need.A, -1);
        if (c == null) return false;
        try {
            int n = comm.size(), me = comm.rank();
            int size = type.size();
            if (!sliced) {
                long[] sources = new long[n];
                for (int r = 0; r < n; r++) sources[r] = c.a[r];
                DeviceReduction.reduce(type, op, recv.address(), sources, count, c.stream);
                rt.count("gpuReductions");
            } else {
                long[] slice = slice(count, type, me, n);
                if (slice[1] > 0) {
                    long off = slice[0] * size, len = slice[1] * size;
                    long[] sources = new long[n];
                    for (int r = 0; r < n; r++) sources[r] = c.a[r] + off;
                    DeviceReduction.reduce(type, op, recv.address() + off, sources, slice[1], c.stream);
                    rt.count("gpuReductions");
                    for (int k = 1; k < n; k++) {
                        int r = (me + k) % n; // every rank starts with a different peer
                        Cuda.copyAsync(c.b[r] + off, recv.address() + off, len, c.stream);
                    }
                }
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    /**
     * A short collective, the ranks meeting on the GPU ({@link ShortRounds}) after one exchange of
     * records: true when carried, false when every rank takes another algorithm (a rank's buffers
     * cannot, some rank does not offer the short path, or it could not be set up here).
     */
    private boolean shortRound(String what, Buffer send, Buffer recv, DataType type, long bytes, boolean reduces, ShortRun run) {
        if (!applicable || shortOff) { // once agreed off, no second exchange of records
            return false;
        }
        int n = comm.size();
        Eligibility e = eligibility(send, recv, type, reduces);
        boolean offer = e.state == ELIGIBLE && offerShort && (shortPath == null || shortPath.device() == e.device);
        MemorySegment m = mine.segment();
        m.fill((byte) 0);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, SHORT, offer ? 1 : 0);
        if (!exchangeAndAgree(what, bytes, e.state, e.device, Need.NOTHING, -1, e.why)) {
            return false;
        }
        int offers = 0;
        for (int r = 0; r < n; r++) offers += all.segment().get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD + SHORT);
        if (offers < n) {
            return false;
        }
        if (shortPath == null) {
            shortPath = ShortRounds.open(comm, rt, e.device);
            if (shortPath == null) {
                shortOff = true;
                return false;
            }
        }
        CudaStream stream = rt.collectiveStream(e.device);
        dev.ferry.spi.PendingDeviceWork.before(stream); // the round's kernel reads this rank's input, and no peer does
        run.run(shortPath, stream);
        rt.count("ipcCollectives");
        return true;
    }

    /** reduce: the root folds all inputs ({@code sliced} false), or rank r folds slice r straight into the root's result. */
    boolean reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root, boolean sliced) {
        Call c = begin("reduce", send, recv, type, count, true, sliced ? Need.A_AND_ROOT_B : (comm.rank() == root ? Need.A : Need.NOTHING), root);
        if (c == null) return false;
        try {
            int n = comm.size(), me = comm.rank();
            int size = type.size();
            if (!sliced) {
                if (me == root) {
                    DeviceReduction.reduce(type, op, recv.address(), c.a.clone(), count, c.stream);
                    rt.count("gpuReductions");
                }
            } else {
                long[] slice = slice(count, type, me, n);
                if (slice[1] > 0) {
                    long off = slice[0] * size;
                    long[] sources = new long[n];
                    for (int r = 0; r < n; r++) sources[r] = c.a[r] + off;
                    long out = me == root ? recv.address() : c.b[root];
                    DeviceReduction.reduce(type, op, out + off, sources, slice[1], c.stream);
                    rt.count("gpuReductions");
                }
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    /**
     * reduceScatter (and reduceScatterBlock): every rank folds its block of every rank's send buffer,
     * in rank order, into its receive buffer, on its GPU.
     */
    boolean reduceScatter(Buffer send, Buffer recv, dev.ferry.spi.Blocks blocks, DataType type, ReduceOp op) {
        Call c = begin("reduceScatter", send, recv, type, blocks.total(), true, Need.A, -1);
        if (c == null) return false;
        try {
            int n = comm.size(), me = comm.rank();
            long mine = blocks.count(me);
            if (mine > 0) {
                long off = blocks.byteOffset(me, type);
                long[] sources = new long[n];
                for (int r = 0; r < n; r++) sources[r] = c.a[r] + off;
                DeviceReduction.reduce(type, op, recv.address(), sources, mine, c.stream);
                rt.count("gpuReductions");
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    boolean broadcast(Buffer buffer, long count, DataType type, int root, boolean byKernel) {
        Call c = begin("broadcast", buffer, null, type, count, false, comm.rank() == root ? Need.NOTHING : Need.ROOT_A, root);
        if (c == null) return false;
        try {
            if (comm.rank() != root) {
                copyBlocks(c, buffer.address(), new long[] {c.a[root]}, type.bytes(count), byKernel);
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    /**
     * Broadcast in two steps ({@code ipc-split}): every rank but the root copies its slice of the
     * root's buffer, so that the root's data leaves it once instead of once per rank; then, once every
     * slice is in place, the other ranks' slices from where they are.
     */
    boolean broadcastSplit(Buffer buffer, long count, DataType type, int root) {
        Call c = begin("broadcast", buffer, null, type, count, false, Need.A, root);
        if (c == null) return false;
        try {
            int n = comm.size(), me = comm.rank();
            if (me != root) copySlice(c, buffer, count, type, root, me < root ? me : me - 1);
            c.reached();
            for (int k = 1; k < n && me != root; k++) {
                int r = (me + k) % n; // starting with the next rank's, so that the ranks do not all read one peer at once
                if (r != root) copySlice(c, buffer, count, type, r, r < root ? r : r - 1);
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    /** Copies slice {@code j} of {@code count} elements cut in one slice per rank but the root, from rank {@code r}'s buffer into this rank's. */
    private void copySlice(Call c, Buffer buffer, long count, DataType type, int r, int j) {
        long[] s = slice(count, type, j, comm.size() - 1);
        long at = type.bytes(s[0]), bytes = type.bytes(s[1]);
        if (bytes > 0) Cuda.copyAsync(buffer.address() + at, c.a[r] + at, bytes, c.stream);
    }

    boolean allGather(Buffer send, Buffer recv, long count, DataType type, boolean byKernel) {
        return pullFromEveryRank("allGather", send, recv, type.bytes(count), false, byKernel);
    }

    boolean allToAll(Buffer send, Buffer recv, long count, DataType type, boolean byKernel) {
        return pullFromEveryRank("allToAll", send, recv, type.bytes(count), true, byKernel);
    }

    /**
     * Every rank copies, from every rank r, a block into block r of its receive buffer: r's whole
     * send buffer (allGather), or block {@code me} of it ({@code blockOfMine}: allToAll).
     */
    private boolean pullFromEveryRank(String what, Buffer send, Buffer recv, long block, boolean blockOfMine, boolean byKernel) {
        Call c = begin(what, send, recv, DataType.BYTE, block, false, Need.A, -1);
        if (c == null) return false;
        try {
            int n = comm.size(), me = comm.rank();
            long[] from = new long[n];
            for (int r = 0; r < n; r++) from[r] = c.a[r] + (blockOfMine ? block * me : 0);
            copyBlocks(c, recv.address(), from, block, byKernel);
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    boolean gather(Buffer send, Buffer recv, long count, DataType type, int root, boolean byKernel) {
        // the root pulls every rank's send buffer into its block of the receive buffer
        boolean isRoot = comm.rank() == root;
        Call c = begin("gather", send, isRoot ? recv : null, type, count, false, isRoot ? Need.A : Need.NOTHING, root);
        if (c == null) return false;
        try {
            if (isRoot) {
                copyBlocks(c, recv.address(), c.a.clone(), type.bytes(count), byKernel);
            }
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    boolean scatter(Buffer send, Buffer recv, long count, DataType type, int root, boolean byKernel) {
        // every rank pulls its block of the root's send buffer
        boolean isRoot = comm.rank() == root;
        Call c = begin("scatter", isRoot ? send : recv, isRoot ? recv : null, type, count, false, isRoot ? Need.NOTHING : Need.ROOT_A, root);
        if (c == null) return false;
        try {
            long block = type.bytes(count);
            long from = isRoot ? send.address() + block * root : c.a[root] + block * comm.rank();
            copyBlocks(c, recv.address(), new long[] {from}, block, byKernel);
            c.finish();
        } finally {
            c.release();
        }
        return true;
    }

    /**
     * Copies block r ({@code block} bytes at {@code from[r]}) to {@code out + r * block} on the call's
     * stream: by one kernel that reads every block where it is ({@code byKernel}: {@code ipc-kernel}),
     * or by one copy-engine transfer per block, starting with the next rank's, so that the ranks do not
     * all read one peer at once ({@code ipc}).
     */
    private void copyBlocks(Call c, long out, long[] from, long block, boolean byKernel) {
        if (byKernel) {
            DeviceReduction.copyBlocks(out, from, block, c.stream);
            return;
        }
        int n = from.length, first = n == comm.size() ? comm.rank() : 0;
        for (int k = 0; k < n; k++) {
            int r = (first + k) % n;
            Cuda.copyAsync(out + block * r, from[r], block, c.stream);
        }
    }

    /** Elements {@code [first, first + length)} of rank {@code r}'s slice ({@link dev.ferry.spi.Blocks#sliced}). */
    static long[] slice(long count, DataType type, int r, int n) {
        dev.ferry.spi.Blocks b = dev.ferry.spi.Blocks.sliced(count, type, n);
        return new long[] {b.displacement(r), b.count(r)};
    }

    // ---- one call: records, mappings, the stream, the closing barrier ------------------------

    /** Which peers' buffers a rank maps: none, everyone's A, the root's A, everyone's A and B, everyone's A and the root's B. */
    private enum Need {
        NOTHING, A, ROOT_A, A_AND_B, A_AND_ROOT_B
    }

    private static final Need[] NEEDS = Need.values();

    /** A call on the IPC path: every rank's A and B buffer addresses in this process (own or mapped), and what to release. */
    private final class Call {
        final long[] a, b;
        final CudaStream stream;
        final List<CudaIpcCache.Mapping> mapped = new ArrayList<>();
        /** Every rank has an interprocess event and this rank opened every peer's. */
        boolean withEvents;
        /** Set when every rank mapped what it needs: this call's entry of {@link #recent}, whose mappings a bit of {@link #KEPT} speaks of. */
        Mapped entry;

        Call(int n, CudaStream stream) {
            this.a = new long[n];
            this.b = new long[n];
            this.stream = stream;
        }

        /**
         * Waits for every rank's part, after which no rank touches another's memory. With events: this
         * rank records its event after its part, meets the others in a host barrier (while the GPU
         * works), then waits for every rank's event, its own last; each rank recorded before the
         * barrier, so every wait is for this call's work. Without: a stream synchronize, then the barrier.
         */
        void finish() {
            if (withEvents) {
                done.record(stream);
                meet();
                for (int r = 0; r < peerEvents.length; r++) {
                    if (r != comm.rank()) peerEvents[r].synchronize();
                }
                done.synchronize();
                rt.count("ipcEventWaits");
            } else {
                stream.synchronize();
                meet();
            }
            rt.count("ipcCollectives");
        }

        /**
         * Within a call: every rank's work so far is done before this rank's stream goes on. With
         * events: this rank records its event, meets the others, and its stream waits for every
         * peer's (a peer that records again before this wait is taken only makes it wait longer: its
         * later work waits for nothing of this rank's after this point). Without: a stream
         * synchronize, then the barrier.
         */
        void reached() {
            if (withEvents) {
                done.record(stream);
                meet();
                for (int r = 0; r < peerEvents.length; r++) {
                    if (r != comm.rank()) stream.waitFor(peerEvents[r]);
                }
            } else {
                stream.synchronize();
                meet();
            }
        }

        void release() {
            for (CudaIpcCache.Mapping m : mapped) rt.mappings().release(m);
            mapped.clear();
            if (entry != null) entry.closesAtEnd = rt.mappings().closes();
        }
    }

    /**
     * Exchanges the records and maps what this rank needs; null when the call stages instead (the same
     * answer on every rank). {@code a} is the send buffer (or the broadcast buffer), {@code b} the
     * receive buffer (null at a rank that has none); {@code reduces}: the call reduces (alignment
     * matters); {@code need}: which peers' buffers this rank maps (B's handle is exported only when some
     * rank maps it; it travels in the record with {@code root}, so that every rank knows which pairs a call maps).
     */
    private Call begin(String what, Buffer a, Buffer b, DataType type, long count, boolean reduces, Need need, int root) {
        if (!applicable || count == 0) {
            return null;
        }
        int n = comm.size(), me = comm.rank();
        boolean exportB = need == Need.A_AND_B || need == Need.A_AND_ROOT_B;
        // this rank's record
        MemorySegment m = mine.segment();
        m.fill((byte) 0);
        Eligibility mineNow = eligibility(a, b, type, reduces);
        String why = mineNow.why;
        int device = mineNow.device;
        int state = mineNow.state;
        if (state == ELIGIBLE) {
            IpcOffer oa = offer(a);
            IpcOffer ob = b != null && exportB ? offer(b) : null;
            if (oa == null || (b != null && exportB && ob == null)) {
                state = REFUSED;
                why = "CUDA cannot export the buffer's memory";
            } else {
                write(m, A, oa);
                if (ob != null) write(m, B, ob);
                byte[] h = eventHandle(device);
                if (h != null) MemorySegment.copy(MemorySegment.ofArray(h), 0, m, EVENT, 64);
                m.set(ValueLayout.JAVA_INT_UNALIGNED, KEPT, kept(rt.mappings().closes()));
            }
        }
        if (!exchangeAndAgree(what, type.bytes(count), state, device, need, root, why)) {
            return null;
        }
        MemorySegment s = all.segment();
        if (Boolean.FALSE.equals(verified)) {
            return refuse(what, "a rank could not map or reach a peer's memory at the first IPC collective of this communicator");
        }
        // every pair this call maps already proven by an earlier agreement (the same answer on every rank, from the records)?
        boolean agree = verified == null && !proven(s, n);
        int repeated = agree ? -1 : repeats(s, n);
        boolean repeat = repeated >= 0;
        // map what this rank reads or writes
        Call c = new Call(n, rt.collectiveStream(device));
        boolean ok = true, eventsOk = events && offerEvents; // without this rank's offer its record holds no event
        boolean eventFailed = false;
        String failure = null;
        for (int r = 0; r < n && eventsOk; r++) {
            eventsOk = !zero(s, (long) r * RECORD + EVENT, 64);
        }
        if (eventsOk) {
            try {
                for (int r = 0; r < n; r++) {
                    if (r != me) openPeerEvent(s, (long) r * RECORD + EVENT, r, device);
                }
            } catch (CudaException e) {
                eventsOk = false;
                if (!agree) {
                    ok = false; // declined below, on every rank
                    failure = "cannot open a peer's interprocess CUDA event: " + e.getMessage();
                } else {
                    eventFailed = true;
                    LOG.log(System.Logger.Level.WARNING, "rank " + me + ": cannot open a peer's interprocess CUDA event (" + e.getMessage()
                            + "); IPC collectives of this communicator end with a stream synchronize and a barrier instead");
                }
            }
        }
        try {
            for (int r = 0; r < n && ok; r++) {
                boolean wantA = need == Need.A || need == Need.A_AND_B || need == Need.A_AND_ROOT_B || (need == Need.ROOT_A && r == root);
                boolean wantB = need == Need.A_AND_B || (need == Need.A_AND_ROOT_B && r == root);
                long at = (long) r * RECORD;
                if (r == me) {
                    c.a[r] = a.address();
                    c.b[r] = b == null ? 0 : b.address();
                    continue;
                }
                if (wantA) c.a[r] = map(c, s, at + A, r, device, agree);
                if (wantB) c.b[r] = map(c, s, at + B, r, device, agree);
            }
        } catch (CudaException e) {
            ok = false;
            failure = e.getMessage();
        }
        if (agree) {
            // until every pair of ranks has been proven (one mapped the other's memory and reaches its GPU):
            // agree that every rank could map what it needed (after that, the meeting after the mappings declines a call that a rank could not map)
            rt.count("ipcAgreements");
            comm.progress();
            int agreed = comm.everyRank(ok, !eventFailed);
            boolean everyoneMapped = (agreed & 1) != 0;
            if ((agreed & 2) == 0) {
                // a rank could not open a peer's event: all end this call without them, and no rank offers one again
                // (events merely not offered, the default, change nothing: a later measurement may still offer them)
                eventsOk = false;
                events = false;
            }
            if (everyoneMapped && prove(s, n)) {
                verified = Boolean.TRUE; // every pair proven: later calls skip this round
            }
            if (!everyoneMapped) {
                verified = Boolean.FALSE;
                c.release();
                if (failure != null) {
                    LOG.log(System.Logger.Level.WARNING, "rank " + me + ": CUDA IPC collectives are off for this communicator: " + failure);
                }
                return refuse(what, "a rank could not map or reach a peer's memory" + (failure != null ? " (here: " + failure + ")" : ""));
            }
        } else if (repeat) {
            // the last call's mappings, every one still held: found in the cache, they cannot fail (no meeting needed)
            if (!ok) throw new IllegalStateException("rank " + me + ": " + what + " could not find a mapping that it held: " + failure);
            rt.count("ipcRepeatedCalls");
        } else if (!mapped(ok)) {
            // every pair proven, yet a rank could not map what it needs (CUDA maps a block of an owner's memory once
            // per process, and another library here, such as a CUDA-aware MPI, may hold it): before any data moves,
            // every rank learns it in this meeting and declines this call alike (the planner's next algorithm runs it)
            c.release();
            rt.count("ipcDeclinedAfterMapping");
            if (failure != null) LOG.log(System.Logger.Level.DEBUG, "rank " + me + ": " + what + " declines CUDA IPC: " + failure);
            return refuse(what, "a rank could not map a peer's memory" + (failure != null ? " (here: " + failure + ")" : ""));
        }
        c.withEvents = eventsOk;
        c.entry = repeat ? recent.remove(repeated) : new Mapped(recordsUpToKept(s, n));
        if (!repeat) recent.removeIf(e -> java.util.Arrays.equals(e.records, c.entry.records));
        recent.add(0, c.entry);
        if (recent.size() > RECENT) recent.remove(RECENT);
        return c;
    }

    /** One bit per entry of {@link #recent}: set where this rank's cache has closed no mapping since that call released its own. */
    private int kept(long closesNow) {
        int bits = 0;
        for (int i = 0; i < recent.size(); i++) {
            long end = recent.get(i).closesAtEnd;
            if (end >= 0 && end == closesNow) bits |= 1 << i;
        }
        return bits;
    }

    /**
     * Which entry of {@link #recent} this call maps exactly, with every rank still holding its
     * mappings: every record the same as then (but {@link #KEPT}) and that entry's bit of every
     * rank's {@link #KEPT} set; -1 when none. The same answer on every rank, from the same records.
     */
    private int repeats(MemorySegment s, int n) {
        search:
        for (int i = 0; i < recent.size(); i++) {
            MemorySegment then = MemorySegment.ofArray(recent.get(i).records);
            for (int r = 0; r < n; r++) {
                long at = (long) r * RECORD;
                if ((s.get(ValueLayout.JAVA_INT_UNALIGNED, at + KEPT) & (1 << i)) == 0) continue search;
                if (MemorySegment.mismatch(s, at, at + KEPT, then, (long) r * KEPT, (long) (r + 1) * KEPT) >= 0) continue search;
            }
            return i;
        }
        return -1;
    }

    private static byte[] recordsUpToKept(MemorySegment s, int n) {
        byte[] b = new byte[n * KEPT];
        for (int r = 0; r < n; r++) MemorySegment.copy(s, ValueLayout.JAVA_BYTE, (long) r * RECORD, b, r * KEPT, KEPT);
        return b;
    }

    /**
     * Completes this rank's record (state, device, need, root; the rest is written already), exchanges
     * every rank's, and decides from them alike on every rank: true when every rank's buffers can take
     * the path; false when some rank's are in host memory, or when some rank's cannot (under
     * {@code ipc} that throws instead, on every rank).
     */
    private boolean exchangeAndAgree(String what, long bytes, int state, int device, Need need, int root, String why) {
        MemorySegment m = mine.segment();
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, state);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 4, device);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 8, need.ordinal());
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 12, root);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, PCI, device < 0 ? 0 : Cuda.device(device).pciLocation());
        Collective op = BY_LABEL.get(what);
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, OP, op.ordinal());
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, BYTES, bytes);
        exchangeRecords(op, root, bytes);
        MemorySegment s = all.segment();
        checkSameCall(s, what);
        int host = 0, refused = 0;
        for (int r = 0; r < comm.size(); r++) {
            int st = s.get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD);
            if (st == HOST) host++;
            if (st == REFUSED) refused++;
        }
        lastHost = host > 0;
        if (host > 0) {
            return false;
        }
        if (refused > 0) {
            refuse(what, refused + " rank(s) cannot take it" + (why != null ? " (here: " + why + ")" : ""));
            return false;
        }
        return true;
    }

    /**
     * Every rank's record names the same operation, root and byte count, else every rank throws
     * (each reads the same records, so none goes on into a call its peers do not make): a
     * mismatch that MPI would meet as a truncation or a hang would otherwise move wrong data here.
     */
    private void checkSameCall(MemorySegment s, String what) {
        int n = comm.size();
        long op = s.get(ValueLayout.JAVA_LONG_UNALIGNED, OP), bytes = s.get(ValueLayout.JAVA_LONG_UNALIGNED, BYTES);
        int root = s.get(ValueLayout.JAVA_INT_UNALIGNED, 12);
        boolean same = true;
        for (int r = 1; r < n && same; r++) {
            long at = (long) r * RECORD;
            same = s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + OP) == op && s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + BYTES) == bytes
                    && s.get(ValueLayout.JAVA_INT_UNALIGNED, at + 12) == root;
        }
        if (same) return;
        // the message only when they disagree: this runs at every call of the node's collectives
        throw SameCall.mismatch(what + " on the node's CUDA IPC collectives", n, r -> Collective.values()[(int) s.get(ValueLayout.JAVA_LONG_UNALIGNED, (long) r * RECORD + OP)],
                r -> s.get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD + 12), r -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, (long) r * RECORD + BYTES));
    }

    /** Whether a rank's buffers can take this path: ELIGIBLE, HOST or REFUSED (and why), and their GPU (-1: none). */
    private record Eligibility(int state, int device, String why) {
    }

    private static Eligibility eligibility(Buffer a, Buffer b, DataType type, boolean reduces) {
        int device = -1;
        for (Buffer x : new Buffer[] {a, b}) {
            if (x == null) continue;
            if (x.kind() != MemoryKind.DEVICE) {
                return new Eligibility(x.kind().needsCuda() ? REFUSED : HOST, device, x.kind() + " memory");
            }
            if (device >= 0 && x.device() != device) {
                return new Eligibility(REFUSED, device, "send and receive buffers on different GPUs");
            }
            device = x.device();
            if (!Cuda.inPrimaryContext(x)) {
                return new Eligibility(REFUSED, device, "memory of a context of the application's own, which Ferry's kernels cannot reach");
            }
            if (reduces && x.address() % DeviceReduction.alignment(type) != 0) {
                return new Eligibility(REFUSED, device, "a buffer not aligned to " + DeviceReduction.alignment(type) + " bytes for " + type);
            }
        }
        return new Eligibility(ELIGIBLE, device, null);
    }

    /** Whether rank {@code r} maps rank {@code p}'s memory in this call, from {@code r}'s record (its need and root). */
    private static boolean maps(MemorySegment s, int r, int p) {
        if (p == r) return false;
        Need need = NEEDS[s.get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD + 8)];
        int root = s.get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD + 12);
        return switch (need) {
            case NOTHING -> false;
            case ROOT_A -> p == root;
            case A, A_AND_B, A_AND_ROOT_B -> true;
        };
    }

    /** True when every pair that this call maps was proven by an earlier agreement. */
    private boolean proven(MemorySegment s, int n) {
        for (int r = 0; r < n; r++) {
            for (int p = 0; p < n; p++) {
                if (maps(s, r, p) && (reached == null || !(reached[r][p] || reached[p][r]))) return false;
            }
        }
        return true;
    }

    /**
     * Marks the pairs this call mapped as proven (every rank mapped its part); true once every pair
     * is. A pair is proven by either of its ranks mapping the other's memory: mapping and peer
     * access go both ways between two GPUs of one node.
     */
    private boolean prove(MemorySegment s, int n) {
        if (reached == null) reached = new boolean[n][n];
        for (int r = 0; r < n; r++) {
            for (int p = 0; p < n; p++) {
                if (maps(s, r, p)) reached[r][p] = true;
            }
        }
        boolean all = true;
        for (int r = 0; r < n; r++) {
            for (int p = 0; p < n; p++) {
                all &= p == r || reached[r][p] || reached[p][r];
            }
        }
        return all;
    }

    /** Maps the buffer of the offer at {@code at} of rank {@code r}'s record on {@code device}; its address here. */
    private long map(Call c, MemorySegment s, long at, int r, int device, boolean checkReach) {
        byte[] handle = handleAt(s, at);
        long base = s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 64);
        long size = s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 72);
        long offset = s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 80);
        long generation = s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 88);
        CudaIpcCache.Mapping mp = rt.mappings().acquire(comm.topology().nodeId()[r], comm.topology().pid()[r], handle, base, size, generation, device);
        c.mapped.add(mp);
        if (checkReach) {
            // the kernels read and write the peer's memory directly: its GPU must be reachable from ours
            // (by the peer's PCI location: a pointer mapped by IPC reports the importing GPU, and ordinals
            // need not agree between processes)
            int theirs = Cuda.ordinalAt(s.get(ValueLayout.JAVA_INT_UNALIGNED, (long) r * RECORD + PCI));
            if (theirs < 0) {
                throw new CudaException("rank " + r + "'s GPU is not visible to this process (CUDA_VISIBLE_DEVICES)", 0);
            }
            if (!Cuda.canAccessPeer(device, theirs) || !Cuda.enablePeerAccess(device, theirs)) {
                throw new CudaException("GPU " + device + " cannot access GPU " + theirs + " (rank " + r + "'s memory) directly", 0);
            }
        }
        return mp.at(offset);
    }

    private static void write(MemorySegment m, long at, IpcOffer o) {
        MemorySegment.copy(MemorySegment.ofArray(o.handle()), 0, m, at, 64);
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 64, o.base());
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 72, o.size());
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 80, o.offset());
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 88, o.generation());
    }

    /** The call takes another algorithm, on every rank alike (the planner's next, or an error when a setting forced this one). */
    private Call refuse(String what, String why) {
        lastRefusal = what + ": " + why;
        return null;
    }

    /** Why the last call that could not take this path could not (for the planner's message), or null. */
    String lastRefusal() {
        return lastRefusal;
    }

    /** This rank's IPC offer for {@code b}, or null when CUDA cannot export its memory (said once). */
    private IpcOffer offer(Buffer b) {
        try {
            return rt.offer((DeviceBuffer) b);
        } catch (CudaException e) {
            if (!warnedExport) {
                warnedExport = true;
                LOG.log(System.Logger.Level.WARNING, "rank " + comm.rank() + " cannot export its device memory by CUDA IPC (" + e.getMessage()
                        + "); such collectives take another algorithm");
            }
            return null;
        }
    }

    /** Offers the short allReduce from the next call on, or not (a call takes it only when every rank offers it). */
    void offerShort(boolean on) {
        offerShort = on;
    }

    /** Offers this rank's event from the next call on, or not (a call ends on events only when every rank offers one). */
    void offerEvents(boolean on) {
        offerEvents = on;
    }

    /** Whether the first call that mapped found every peer reachable: null before it (for tests and reports). */
    /** Whether the last call declined because some rank passed host memory (the same answer on every rank). */
    boolean lastDeclinedForHostMemory() {
        return lastHost;
    }

    Boolean verified() {
        return verified;
    }
}
