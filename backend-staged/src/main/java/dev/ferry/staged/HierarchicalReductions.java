package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import java.util.ArrayList;
import java.util.List;

/**
 * Large reduce and allReduce of staged buffers (device memory) on ranks of several nodes, several of
 * them on one node: node by node, reduced on the GPUs, never on the host. Taken instead of the flat
 * chain over every rank ({@link ChainReductions}) when the ranks span more than one node and some
 * node holds more than one of them, under the same agreement (every rank's buffers staged and fit
 * for the GPU kernels, larger than {@code threshold}, {@code deviceCollectives} not {@code host}).
 *
 * <ol>
 * <li>Within each node, the ranks' inputs are folded into the node's <em>leader</em> on a
 *     communicator of the node's ranks: over CUDA IPC with the GPU kernels ({@link IpcCollectives}:
 *     every rank maps the others' buffers through the runtime's IPC cache), or, where IPC is off or
 *     refused, by the reduction chain of that communicator. The leader of a node is its lowest rank;
 *     for reduce, the root leads its own node. A node of one rank skips this step.</li>
 * <li>The leaders, in node order, run the reduction chain among themselves
 *     ({@link ChainReductions#along}): pipelined staged chunks through pinned host memory between
 *     nodes, each chunk folded on the receiving leader's GPU, {@code depth} chunks in flight per link.
 *     The last leader holds the result; reduce sends it to the root chunk by chunk.</li>
 * <li>allReduce: the last leader broadcasts the result to the leaders (staged chunks through the
 *     inner MPI's broadcast on a communicator of the leaders), then every leader to its node (over
 *     CUDA IPC, or staged). reduce: nothing more; the root has the result.</li>
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
 * <p>The node of each rank is the one {@link Peers} knows, so that
 * {@code ferry.staged.test.nodeGroup} (groups of consecutive world ranks counted as nodes) runs this
 * path on one machine. The communicators of the node and of the leaders are made at the first call
 * and kept with this communicator.
 */
final class HierarchicalReductions {
    private final StagedTransport comm;
    private final StagedRuntime rt;
    private final Collectives collectives;
    private final ChainReductions chain;
    /** Node index of every rank; nodes numbered in the order of their lowest ranks. */
    private final int[] nodeOf;
    /** Rank of every rank on its node (its rank on the node's communicator). */
    private final int[] localRank;
    /** Lowest rank and number of ranks of every node. */
    private final int[] lowest, nodeSize;
    private final int nodes;
    private final boolean applicable;
    /** The ranks of this node in rank order, and the lowest rank of every node in node order (null on other ranks): made at the first call. */
    private StagedTransport local, leaders;
    private boolean made;
    /** A non-root leader's fold of its node for reduce, kept for the next call. */
    private Buffer partial;

    HierarchicalReductions(StagedTransport comm, Collectives collectives, ChainReductions chain) {
        this.comm = comm;
        this.collectives = collectives;
        this.rt = comm.runtime();
        this.chain = chain;
        Peers peers = comm.peers();
        int n = comm.size();
        nodeOf = new int[n];
        localRank = new int[n];
        List<Long> ids = new ArrayList<>();
        List<Integer> first = new ArrayList<>(), counts = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int at = ids.indexOf(peers.node(r));
            if (at < 0) {
                at = ids.size();
                ids.add(peers.node(r));
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
        applicable = rt.settings.deviceCollectives() != StagedSettings.DeviceCollectives.HOST && nodes > 1 && nodes < n;
    }

    /** Whether a chain-eligible reduction runs here instead of the flat chain: several nodes, one of several ranks (the same on every rank). */
    boolean applies() {
        return applicable;
    }

    /** The number of nodes the ranks span (for tests). */
    int nodes() {
        return nodes;
    }

    void close() {
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
        StagedTransport c = comm.internal(); // collective when first made: every rank asks here
        int me = comm.rank(), node = nodeOf[me];
        int[] leaderOf = new int[nodes];
        for (int k = 0; k < nodes; k++) {
            leaderOf[k] = root >= 0 && nodeOf[root] == k ? root : lowest[k];
        }
        boolean leader = leaderOf[node] == me;
        rt.stats.hierarchicalReductions.increment();

        // 1. within the node: every input folded into the leader's buffer
        Buffer folded = send;
        if (nodeSize[node] > 1) {
            folded = !leader ? null : root < 0 || me == root ? recv : partial(send, type.bytes(count));
        }
        foldNode(nodeSize[node] > 1, send, folded, count, type, op, localRank[leaderOf[node]]);

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

    /**
     * The node's reduction to its rank {@code localRoot} on the node's communicator (over CUDA IPC, or
     * its chain), where the node has several ranks ({@code fold}). Under {@code deviceCollectives=ipc}
     * a node whose ranks cannot take the IPC path fails (on each of its ranks alike); one agreement
     * over every rank, those of one-rank nodes included, then makes every rank fail, so that no other
     * node waits for it in the leaders' chain.
     */
    private void foldNode(boolean fold, Buffer send, Buffer folded, long count, DataType type, ReduceOp op, int localRoot) {
        if (rt.settings.deviceCollectives() != StagedSettings.DeviceCollectives.IPC) {
            if (fold) local.reduce(send, folded, count, type, op, localRoot);
            return;
        }
        RuntimeException failed = null;
        try {
            if (fold) local.reduce(send, folded, count, type, op, localRoot);
        } catch (dev.ferry.UnsupportedBufferException e) {
            failed = e;
        }
        boolean anyFailed = collectives.anyRank(failed != null);
        if (failed != null) {
            throw failed;
        }
        if (anyFailed) {
            throw new dev.ferry.UnsupportedBufferException("reduction across nodes: ferry.staged.deviceCollectives=ipc, but the ranks of another"
                    + " node cannot take the CUDA IPC path (the exception on those ranks says why); use auto to stage such calls");
        }
    }

    /** The communicators of the node and of the leaders (collective over every rank, at the first call). */
    private void makeCommunicators() {
        if (made) {
            return;
        }
        int me = comm.rank();
        local = (StagedTransport) comm.split(nodeOf[me], me);
        leaders = (StagedTransport) comm.split(lowest[nodeOf[me]] == me ? 0 : -1, nodeOf[me]);
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
