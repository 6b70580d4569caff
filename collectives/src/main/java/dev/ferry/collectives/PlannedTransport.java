// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.Settings;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.ForwardingTransport;
import dev.ferry.spi.PendingDuplicate;
import dev.ferry.spi.Transport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * A backend's transport (the mover) whose collectives the {@link Planner} runs: point-to-point
 * messages, the barrier and communicators go to the mover; every other collective becomes a
 * {@link CollectiveCall} that the planner gives to one algorithm. Made over the world transport of
 * every backend when a communicator opens, and over every split and duplicate of it (each finds its
 * {@link Topology}: collective, as the split or duplicate itself).
 */
public final class PlannedTransport extends ForwardingTransport {
    private static final CostTable BUILT_IN = CostTable.builtIn();

    private final Group group;
    private final Planner planner;

    /** Plans the collectives of {@code mover} (taking ownership; collective over its ranks). */
    public PlannedTransport(Transport mover, Settings settings) {
        super(mover);
        Group g = null;
        try {
            Topology t = Topology.discover(mover, NodeIdentity.of(settings), dev.ferry.cuda.Cuda.isAvailable() && settings.get(dev.ferry.collectives.ipc.IpcSettings.IPC));
            g = new Group(mover, t);
            List<Algorithm> algorithms = new ArrayList<>();
            for (AlgorithmProvider p : ServiceLoader.load(AlgorithmProvider.class, PlannedTransport.class.getClassLoader())) {
                algorithms.addAll(p.algorithms(g));
            }
            Map<String, String> choice = settings.get(CollectivesSettings.COLLECTIVES);
            this.planner = new Planner(g, algorithms, table(settings), mover.backend(), choice, settings.text(CollectivesSettings.COLLECTIVES),
                    settings.get(CollectivesSettings.UNIFORM_BUFFERS));
            this.group = g;
        } catch (RuntimeException | Error e) {
            if (g != null) g.close();
            mover.close();
            throw e;
        }
    }

    /** The tables measured for this project ({@code costs/}). */
    static CostTable builtIn() {
        return BUILT_IN;
    }

    private static CostTable table(Settings settings) {
        String path = settings.get(CollectivesSettings.TABLE);
        if (path == null) {
            return BUILT_IN;
        }
        try {
            return BUILT_IN.withFirst(CostTable.read(Path.of(path)));
        } catch (IOException | RuntimeException e) {
            throw new dev.ferry.InvalidSettingException(CollectivesSettings.TABLE.key(), path, CollectivesSettings.TABLE.key() + "='" + path
                    + "' cannot be read as a cost table: " + e.getMessage());
        }
    }

    /** The planner of this communicator (reports, tests). */
    public Planner planner() {
        return planner;
    }

    /** The ranks as the algorithms see them, with their agreement ({@link Group#agree}; tests). */
    public Group group() {
        return group;
    }

    /** The backend's transport under the planner. */
    public Transport mover() {
        return inner;
    }

    private void plan(CollectiveCall call) {
        planner.run(call);
    }

    /** Every collective with buffers goes to {@link Planner#run}, which waits or leaves the wait to an algorithm that {@link Algorithm#ordersOnGpu orders on the GPU}. */
    @Override
    public boolean waitsForPendingDeviceWork() {
        return true;
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        boolean isRoot = rank() == root;
        plan(CollectiveCall.of(Collective.BROADCAST, isRoot ? buffer : null, isRoot ? null : buffer, count, type, null, root));
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        plan(CollectiveCall.of(Collective.SCATTER, sendBuffer, recvBuffer, count, type, null, root));
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        plan(CollectiveCall.of(Collective.GATHER, sendBuffer, recvBuffer, count, type, null, root));
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        plan(CollectiveCall.of(Collective.ALL_GATHER, sendBuffer, recvBuffer, count, type, null, -1));
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        plan(CollectiveCall.of(Collective.ALL_TO_ALL, sendBuffer, recvBuffer, count, type, null, -1));
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        plan(CollectiveCall.of(Collective.REDUCE, sendBuffer, recvBuffer, count, type, op, root));
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        plan(CollectiveCall.of(Collective.ALL_REDUCE, sendBuffer, recvBuffer, count, type, op, -1));
    }

    @Override
    public void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        plan(CollectiveCall.of(Collective.SCAN, sendBuffer, recvBuffer, count, type, op, -1));
    }

    @Override
    public void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        plan(CollectiveCall.of(Collective.EXSCAN, sendBuffer, recvBuffer, count, type, op, -1));
    }

    /**
     * A stream-ordered collective on the GPU alone: when an algorithm can enqueue it on the stream
     * ({@link Planner#onStream}: {@code ipc-short}, NCCL), the first that does takes it; otherwise false. The choice is the same on every
     * rank and the view passes device memory on every rank, so no rank votes.
     */
    @Override
    public boolean enqueueOnStream(dev.ferry.spi.StreamCollective c, dev.ferry.DeviceStream stream) {
        CollectiveCall call = streamCall(c);
        if (call == null) return false;
        for (Algorithm a : planner.onStream(call.shape())) {
            if (a.enqueue(call, stream)) {
                Planner.ranOnStream(a.name());
                return true;
            }
        }
        return false;
    }

    @Override
    public void throwStreamFailure() {
        for (Algorithm a : planner.algorithms()) a.throwStreamFailure();
        inner.throwStreamFailure();
    }

    @Override
    public boolean enqueuesOnStream(dev.ferry.spi.StreamCollective c) {
        CollectiveCall call = streamCall(c);
        return call != null && planner.onStream(call.shape()).length > 0;
    }

    /**
     * The call of a stream-ordered collective, or null for one no algorithm enqueues (barrier,
     * reduce-scatter in place). In place, the rank's block of the other buffer stands for the
     * marker, so that the root of a gather or scatter, the one rank that passes the marker, takes
     * the path its peers take.
     */
    private CollectiveCall streamCall(dev.ferry.spi.StreamCollective c) {
        if (c.kind() == dev.ferry.spi.StreamCollective.Kind.BARRIER) return null;
        Buffer send = c.send(), recv = c.recv();
        long block = c.type().bytes(c.count());
        if (send == dev.ferry.Communicator.IN_PLACE) {
            switch (c.kind()) {
                case ALL_REDUCE, REDUCE -> send = recv; // NCCL reduces in place when the two are one
                case ALL_GATHER, GATHER -> {
                    if (!(recv instanceof dev.ferry.DeviceBuffer d)) return null;
                    send = d.slice(rank() * block, block); // NCCL gathers in place from the rank's own block
                }
                default -> {
                    return null;
                }
            }
        }
        if (recv == dev.ferry.Communicator.IN_PLACE) {
            if (c.kind() != dev.ferry.spi.StreamCollective.Kind.SCATTER || !(send instanceof dev.ferry.DeviceBuffer d)) return null;
            recv = d.slice(rank() * block, block); // the root's own block stays where it is
        }
        return switch (c.kind()) {
            case BARRIER -> null;
            case REDUCE_SCATTER_BLOCK -> {
                long[] counts = new long[size()];
                java.util.Arrays.fill(counts, c.count());
                yield CollectiveCall.reduceScatter(send, recv, Blocks.contiguous(counts), rank(), c.type(), c.op());
            }
            case BROADCAST -> CollectiveCall.of(Collective.BROADCAST, send, null, c.count(), c.type(), null, c.root());
            case SCATTER -> CollectiveCall.of(Collective.SCATTER, send, recv, c.count(), c.type(), null, c.root());
            case GATHER -> CollectiveCall.of(Collective.GATHER, send, recv, c.count(), c.type(), null, c.root());
            case ALL_GATHER -> CollectiveCall.of(Collective.ALL_GATHER, send, recv, c.count(), c.type(), null, -1);
            case ALL_TO_ALL -> CollectiveCall.of(Collective.ALL_TO_ALL, send, recv, c.count(), c.type(), null, -1);
            case REDUCE -> CollectiveCall.of(Collective.REDUCE, send, recv, c.count(), c.type(), c.op(), c.root());
            case ALL_REDUCE -> CollectiveCall.of(Collective.ALL_REDUCE, send, recv, c.count(), c.type(), c.op(), -1);
        };
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        long[] counts = new long[size()];
        java.util.Arrays.fill(counts, recvCount);
        reduceScatter(sendBuffer, recvBuffer, Blocks.contiguous(counts), type, op);
    }

    @Override
    public void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op) {
        plan(CollectiveCall.reduceScatter(sendBuffer, recvBuffer, blocks, rank(), type, op));
    }

    @Override
    public void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root) {
        plan(CollectiveCall.vector(Collective.SCATTER_V, sendBuffer, sendBlocks, recvBuffer, null, recvCount, type, root));
    }

    @Override
    public void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root) {
        plan(CollectiveCall.vector(Collective.GATHER_V, sendBuffer, null, recvBuffer, recvBlocks, sendCount, type, root));
    }

    @Override
    public void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        plan(CollectiveCall.vector(Collective.ALL_GATHER_V, sendBuffer, null, recvBuffer, recvBlocks, sendCount, type, -1));
    }

    @Override
    public void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type) {
        plan(CollectiveCall.vector(Collective.ALL_TO_ALL_V, sendBuffer, sendBlocks, recvBuffer, recvBlocks, 0, type, -1));
    }

    @Override
    public Transport split(int color, int key) {
        Transport t = inner.split(color, key);
        return t == null ? null : new PlannedTransport(t, Settings.process());
    }

    @Override
    public Transport duplicate() {
        return new PlannedTransport(inner.duplicate(), Settings.process());
    }

    /** The mover's duplicate is started here; the planner over it (its topology: collective on the duplicate) is made when it is finished. */
    @Override
    public PendingDuplicate startDuplicate() {
        PendingDuplicate mover = inner.startDuplicate();
        return () -> new PlannedTransport(mover.finish(), Settings.process());
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (AutoCloseable c : new AutoCloseable[] {planner, group, inner}) {
            try {
                c.close();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            } catch (Exception e) {
                if (first == null) first = new RuntimeException(e); else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    @Override
    public String toString() {
        return "planned " + inner;
    }
}
