// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.collectives.ipc.NodeIpc;
import java.util.List;

/**
 * The collectives over CUDA IPC among the ranks of one node, six algorithms over one engine
 * ({@link IpcCollectives}, which keeps the records, the node's board and the peers' mappings of the
 * communicator):
 *
 * <ul>
 * <li>{@code ipc-short}: allReduce and allGather of small inputs, the ranks' kernels meeting on the
 *     GPU ({@link ShortRounds}); allReduce also in stream order, enqueued on the caller's stream;</li>
 * <li>{@code ipc-fold}: allReduce and reduce, every rank (or the root) folding all inputs;</li>
 * <li>{@code ipc-sliced}: allReduce and reduce, each rank folding a slice (reduce-scatter and
 *     all-gather, fused);</li>
 * <li>{@code ipc}: broadcast, scatter, gather, allGather, allToAll and reduceScatter, each rank copying
 *     (or folding) what it gets from where it is, one copy-engine transfer per block;</li>
 * <li>{@code ipc-kernel}: broadcast, scatter, gather, allGather and allToAll as {@code ipc}, every
 *     block a rank gets copied by one kernel that reads it over the link (one launch instead of a
 *     transfer per block);</li>
 * <li>{@code ipc-split}: broadcast among three ranks or more, in two steps: each rank but the root
 *     copies its slice of the root's buffer, then the others' slices from them (the root's data leaves
 *     it once, not once per rank).</li>
 * </ul>
 *
 * <p>They serve communicators whose ranks all run on one node with CUDA IPC on; a call declines on
 * every rank alike when some rank's buffers cannot take the path (its records say so).
 */
final class IpcAlgorithms {
    private IpcAlgorithms() {
    }

    /** The six algorithms of {@code group}, or none when CUDA IPC is off in this process (released with them). */
    static List<Algorithm> of(Group group, dev.ferry.Settings settings) {
        NodeIpc ipc = NodeIpc.acquire(settings);
        IpcCollectives engine = new IpcCollectives(group, ipc);
        double timeout = settings.get(dev.ferry.FerrySettings.TIMEOUT);
        Owner owner = new Owner(engine, ipc, timeout > 0 ? (long) (timeout * 1e9) : 0);
        return List.of(new Variant(owner, "ipc-short", "allReduce and allGather of small inputs over CUDA IPC, the ranks' kernels meeting on the GPU", Kind.SHORT),
                new Variant(owner, "ipc-fold", "over CUDA IPC: every rank (reduce: the root) folds every input on its GPU", Kind.FOLD),
                new Variant(owner, "ipc-sliced", "over CUDA IPC: each rank folds one slice of every input, then copies it to the others", Kind.SLICED),
                new Variant(owner, "ipc", "over CUDA IPC: each rank copies (reduce-scatter: folds) the blocks it gets from where they are", Kind.COPY),
                new Variant(owner, "ipc-kernel", "over CUDA IPC: each rank copies the blocks it gets from where they are, all in one kernel", Kind.KERNEL),
                new Variant(owner, "ipc-split", "broadcast over CUDA IPC: each rank copies its slice of the root's buffer, then the others' slices from them", Kind.SPLIT));
    }

    private enum Kind { SHORT, FOLD, SLICED, COPY, KERNEL, SPLIT }

    /** The engine under one of these algorithms (diagnostics). */
    static IpcCollectives engine(Algorithm a) {
        return ((Variant) a).owner.engine;
    }

    /** The engine and the node IPC of the six algorithms, released once when the last of them closes. */
    private static final class Owner {
        final IpcCollectives engine;
        final NodeIpc ipc;
        /** {@code ferry.timeout} in nanoseconds (0: none): how long a stream-ordered short round waits on the GPU for a peer. */
        final long timeoutNanos;
        int open = 6;

        Owner(IpcCollectives engine, NodeIpc ipc, long timeoutNanos) {
            this.engine = engine;
            this.ipc = ipc;
            this.timeoutNanos = timeoutNanos;
        }

        synchronized void closeOne() {
            if (--open == 0) {
                try {
                    engine.close();
                } finally {
                    ipc.release();
                }
            }
        }
    }

    private static final class Variant implements Algorithm {
        private final Owner owner;
        private final String name;
        private final String description;
        private final Kind kind;
        private boolean closed;

        Variant(Owner owner, String name, String description, Kind kind) {
            this.owner = owner;
            this.name = name;
            this.description = description;
            this.kind = kind;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return description;
        }

        @Override
        public boolean carries(Collective c) {
            return switch (kind) {
                case SHORT -> c == Collective.ALL_REDUCE || c == Collective.ALL_GATHER;
                case FOLD, SLICED -> c == Collective.ALL_REDUCE || c == Collective.REDUCE;
                case COPY -> c == Collective.BROADCAST || c == Collective.SCATTER || c == Collective.GATHER || c == Collective.ALL_GATHER
                        || c == Collective.ALL_TO_ALL || c == Collective.REDUCE_SCATTER;
                case KERNEL -> c == Collective.BROADCAST || c == Collective.SCATTER || c == Collective.GATHER || c == Collective.ALL_GATHER
                        || c == Collective.ALL_TO_ALL;
                case SPLIT -> c == Collective.BROADCAST;
            };
        }

        @Override
        public String unfit(Shape s, Topology t) {
            if (t.size() < 2) return "one rank";
            if (!t.oneNode()) return "the ranks span " + t.nodes() + " nodes";
            if (!t.ipcEverywhere()) return "CUDA IPC is off on some rank (no CUDA, or ferry.ipc=false)";
            if (t.placement() == Topology.Placement.ONE_PER_RANK && !t.peerAccess()) return "the GPUs of the node do not reach each other directly";
            if (!owner.engine.applicable()) return "CUDA IPC is off in this process";
            if (kind == Kind.SHORT && !ShortRounds.fits(s.bytes(), t.size())) {
                return "more than " + ShortRounds.SLOT_BYTES + " bytes, or more than " + dev.ferry.cuda.DeviceReduction.MAX_SOURCES + " ranks";
            }
            if (kind == Kind.SLICED && s.bytes() < (long) s.type().size() * t.size()) return "fewer elements than ranks";
            if (kind == Kind.SPLIT && t.size() < 3) return "fewer than three ranks (the root's one peer copies it all: ipc)";
            return null;
        }

        @Override
        public Agreement agreement() {
            return Agreement.WITHIN;
        }

        /** The data moves through CUDA IPC (the ranks meet on the node's board), never through the backend. */
        @Override
        public boolean timedWithBackend() {
            return false;
        }

        @Override
        public boolean needsDevice() {
            return true;
        }

        /**
         * {@code ipc-short}: one kernel per rank on this rank's stream reads its input and writes it
         * into the peers' scratch; no peer reads this rank's buffers. The others map the peers'
         * buffers, which the peers read as soon as the ranks met: the host waits first.
         */
        @Override
        public boolean ordersOnGpu() {
            return kind == Kind.SHORT;
        }

        @Override
        public boolean declinedForHostMemory() {
            return owner.engine.lastDeclinedForHostMemory();
        }

        @Override
        public int preference() {
            return switch (kind) {
                case SHORT -> 40;
                case FOLD -> 41;
                case SLICED -> 42;
                case COPY -> 43;
                case KERNEL -> 44;
                case SPLIT -> 45;
            };
        }

        @Override
        public boolean run(CollectiveCall c) {
            IpcCollectives e = owner.engine;
            return switch (c.collective()) {
                case ALL_REDUCE -> kind == Kind.SHORT ? e.shortAllReduce(c.send(), c.recv(), c.count(), c.type(), c.op())
                        : e.allReduce(c.send(), c.recv(), c.count(), c.type(), c.op(), kind == Kind.SLICED);
                case REDUCE -> e.reduce(c.send(), c.recv(), c.count(), c.type(), c.op(), c.root(), kind == Kind.SLICED);
                case BROADCAST -> kind == Kind.SPLIT ? e.broadcastSplit(c.send() != null ? c.send() : c.recv(), c.count(), c.type(), c.root())
                        : e.broadcast(c.send() != null ? c.send() : c.recv(), c.count(), c.type(), c.root(), kind == Kind.KERNEL);
                case SCATTER -> e.scatter(c.send(), c.recv(), c.count(), c.type(), c.root(), kind == Kind.KERNEL);
                case GATHER -> e.gather(c.send(), c.recv(), c.count(), c.type(), c.root(), kind == Kind.KERNEL);
                case ALL_GATHER -> kind == Kind.SHORT ? e.shortAllGather(c.send(), c.recv(), c.count(), c.type())
                        : e.allGather(c.send(), c.recv(), c.count(), c.type(), kind == Kind.KERNEL);
                case ALL_TO_ALL -> e.allToAll(c.send(), c.recv(), c.count(), c.type(), kind == Kind.KERNEL);
                case REDUCE_SCATTER -> e.reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
                default -> throw new IllegalArgumentException(name + " does not run " + c.collective());
            };
        }

        /** {@code ipc-short} enqueues allReduce on a stream: one kernel per rank that meets its peers' on the GPU, the round counted there. */
        @Override
        public boolean enqueues(Collective c) {
            return kind == Kind.SHORT && c == Collective.ALL_REDUCE;
        }

        @Override
        public boolean enqueue(CollectiveCall c, dev.ferry.DeviceStream stream) {
            return enqueues(c.collective()) && owner.engine.enqueueShortAllReduce(c, stream, owner.timeoutNanos);
        }

        @Override
        public void throwStreamFailure() {
            if (kind == Kind.SHORT) owner.engine.throwStreamFailure(owner.timeoutNanos);
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                owner.closeOne();
            }
        }
    }
}
