// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Settings;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code hierarchical}: reduce and allReduce of device buffers on ranks of several nodes, several of
 * them on one node: node by node, reduced on the GPUs, never on the host.
 *
 * <ol>
 * <li>Within each node, the ranks' inputs are folded into the node's <em>leader</em> by a reduce on
 *     a communicator of the node's ranks, planned as every collective is (over CUDA IPC on one
 *     node). The leader of a node is its lowest rank; for reduce, the root leads its own node. A node
 *     of one rank skips this step.</li>
 * <li>The leaders, in node order, run the reduction chain among themselves
 *     ({@link ChainReductions#along}): pipelined chunks between nodes, each chunk folded on the
 *     receiving leader's GPU. The last leader holds the result; reduce sends it to the root chunk by
 *     chunk.</li>
 * <li>allReduce: the last leader broadcasts the result to the leaders (on a communicator of the
 *     leaders), then every leader to its node. reduce: nothing more; the root has the result.</li>
 * </ol>
 *
 * <p>Nodes are numbered in the order of their lowest ranks. The order of operations is: within a
 * node, the ranks' inputs folded in rank order, {@code P_n = ((x_a op x_b) op x_c) ...} for the ranks
 * {@code a < b < c ...} of node {@code n}; then the nodes' partial results in node order,
 * {@code ((P_0 op P_1) op P_2) ...}. allReduce gives the same bytes on every rank. This is the
 * flat rank-order fold of {@link dev.ferry.spi.HostReduction} whenever the reduction is exact in
 * any order (integers, and floating-point values whose partial results are all representable); for
 * other floating-point data it differs from the flat fold by rounding only, as MPI allows.
 *
 * <p>The node of each rank is the one the {@link Topology} knows, so that pretended nodes for tests
 * ({@link NodeIdentity}) run this path on one machine. The communicators of the node and of the
 * leaders are made at the first call and kept with this communicator.
 */
final class HierarchicalReductions implements Algorithm {
    private final Group group;
    private final NodeIpc ipc;
    private final ChainReductions chain;
    /** Node index of every rank; nodes numbered in the order of their lowest ranks. */
    private final int[] nodeOf;
    /** Rank of every rank on its node (its rank on the node's communicator). */
    private final int[] localRank;
    /** Lowest rank and number of ranks of every node. */
    private final int[] lowest, nodeSize;
    private final int nodes;
    /** The ranks of this node in rank order, and the lowest rank of every node in node order (null on other ranks): made at the first call. */
    private Transport local, leaders;
    private boolean made;
    /** A non-root leader's fold of its node for reduce, kept for the next call. */
    private Buffer partial;

    /** Runs the leaders' step on {@code chain} (which this algorithm does not close). */
    HierarchicalReductions(Group group, ChainReductions chain) {
        this.group = group;
        this.ipc = chain.ipc();
        this.chain = chain;
        Topology t = group.topology();
        int n = group.size();
        nodeOf = new int[n];
        localRank = new int[n];
        List<Integer> ids = new ArrayList<>();
        List<Integer> first = new ArrayList<>(), counts = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int at = ids.indexOf(t.node()[r]);
            if (at < 0) {
                at = ids.size();
                ids.add(t.node()[r]);
                first.add(r);
                counts.add(0);
            }
            nodeOf[r] = at;
            localRank[r] = counts.get(at);
            counts.set(at, counts.get(at) + 1);
        }
        nodes = ids.size();
        lowest = first.stream().mapToInt(Integer::intValue).toArray();
        nodeSize = counts.stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public String name() {
        return "hierarchical";
    }

    @Override
    public String description() {
        return "node by node: a fold to one leader per node, a chain among the leaders, a broadcast within each node";
    }

    @Override
    public boolean carries(Collective c) {
        return c == Collective.REDUCE || c == Collective.ALL_REDUCE;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        if (t.nodes() < 2) return "one node";
        if (t.nodes() == t.size()) return "one rank per node (the chain serves that)";
        // the fold within a node is the MPI's own reduce
        if (!group.mover().reduces(s.type(), s.op())) return "the MPI does not reduce " + s.type() + " with " + s.op() + " here";
        return chain.unfit(s, t);
    }

    @Override
    public Agreement agreement() {
        return Agreement.VOTE;
    }

    @Override
    public boolean needsDevice() {
        return !group.mover().stagesHostBuffers(); // the staged backend's host test mode runs these protocols on host memory
    }

    @Override
    public boolean takes(CollectiveCall c) {
        return chain.takes(c);
    }

    @Override
    public int preference() {
        return 49;
    }

    @Override
    public boolean run(CollectiveCall c) {
        run(c.send(), c.recv(), c.count(), c.type(), c.op(), c.collective() == Collective.REDUCE ? c.root() : -1);
        return true;
    }

    /** The number of nodes the ranks span (for tests). */
    int nodes() {
        return nodes;
    }

    @Override
    public void close() {
        List<RuntimeException> errors = new ArrayList<>();
        for (AutoCloseable c : new AutoCloseable[] {local, leaders}) {
            if (c == null) continue;
            try {
                c.close();
            } catch (Exception e) {
                errors.add(e instanceof RuntimeException r ? r : new FerryException("closing a node communicator: " + e, e));
            }
        }
        local = leaders = null;
        free(partial);
        partial = null;
        if (!errors.isEmpty()) {
            RuntimeException first = errors.get(0);
            for (int i = 1; i < errors.size(); i++) first.addSuppressed(errors.get(i));
            throw first;
        }
    }

    /**
     * reduce ({@code root >= 0}; {@code recv} null except at the root) or allReduce ({@code root < 0})
     * node by node (collective; every rank agreed that its buffers can take the chain).
     */
    void run(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        makeCommunicators();
        Transport c = group.internal(); // collective when first made: every rank asks here
        int me = group.rank(), node = nodeOf[me];
        int[] leaderOf = new int[nodes];
        for (int k = 0; k < nodes; k++) {
            leaderOf[k] = root >= 0 && nodeOf[root] == k ? root : lowest[k];
        }
        boolean leader = leaderOf[node] == me;
        ipc.count("hierarchicalReductions");

        // 1. within the node: every input folded into the leader's buffer
        Buffer folded = send;
        if (nodeSize[node] > 1) {
            folded = !leader ? null : root < 0 || me == root ? recv : partial(send, type.bytes(count));
        }
        if (nodeSize[node] > 1) {
            local.reduce(send, folded, count, type, op, localRank[leaderOf[node]]);
        }

        // 2. among the leaders, in node order: the chain; the result at the last leader, or at the root
        chain.along(c, leaderOf, leader ? folded : null, recv, count, type, op, root);

        // 3. allReduce: from the last leader to every leader, from every leader to its node
        if (root < 0) {
            if (leaders != null) {
                leaders.broadcast(recv, count, type, nodes - 1);
            }
            if (nodeSize[node] > 1) {
                local.broadcast(recv, count, type, localRank[lowest[node]]);
            }
        }
    }

    /** The communicators of the node and of the leaders (collective over every rank, at the first call). */
    private void makeCommunicators() {
        if (made) {
            return;
        }
        int me = group.rank();
        Transport node = group.mover().split(nodeOf[me], me);
        Transport lead = group.mover().split(lowest[nodeOf[me]] == me ? 0 : -1, nodeOf[me]);
        // planned as every communicator: the node's fold takes the node's best algorithm (CUDA IPC)
        local = new PlannedTransport(node, Settings.process());
        leaders = lead == null ? null : new PlannedTransport(lead, Settings.process());
        made = true;
    }

    /** The node's fold at a leader that is not the root of a reduce: a buffer of {@code bytes} of {@code like}'s memory, kept for later calls. */
    private Buffer partial(Buffer like, long bytes) {
        boolean fits = partial != null && partial.byteSize() >= bytes && (like instanceof HostBuffer) == (partial instanceof HostBuffer)
                && (like instanceof HostBuffer || partial.device() == like.device());
        if (!fits) {
            free(partial);
            partial = null;
            partial = like instanceof HostBuffer ? HostBuffer.allocate(bytes) : Cuda.allocate(like.device(), bytes);
        }
        return partial.slice(0, bytes);
    }

    private static void free(Buffer b) {
        if (b instanceof HostBuffer h) h.close();
        else if (b instanceof DeviceBuffer d) d.close();
    }
}
