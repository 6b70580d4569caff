// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the ranks of one communicator run, found once when the communicator is made (one
 * allGather of a 64-byte record per rank and one allReduce, collective) and the same on every
 * rank: nodes, GPUs and whether the GPUs of a node reach each other directly. The planner decides
 * from it without a message per call.
 *
 * @param size        ranks
 * @param node        each rank's node, numbered in order of first appearance (0 ..)
 * @param nodes       how many nodes
 * @param cuda        how many ranks have a CUDA device (0: no device buffers anywhere)
 * @param ipc         how many ranks have CUDA IPC on ({@code ferry.ipc})
 * @param placement   how ranks sit on GPUs
 * @param peerAccess  every rank reaches the GPU of every other rank of its node directly (CUDA peer access or the same GPU)
 * @param gpu         the GPU model of rank 0 ({@code H100}, {@code H200}, ...; {@code none} without CUDA)
 * @param pid         each rank's process id (for messages and the node's shared memory)
 * @param nodeId      each rank's node identity (a hash of host name and boot id)
 */
public record Topology(int size, int[] node, int nodes, int cuda, int ipc, Placement placement, boolean peerAccess, String gpu, long[] pid, long[] nodeId) {

    /** How the ranks of the communicator sit on GPUs. */
    public enum Placement {
        /** No rank has a GPU. */
        NONE,
        /** Every rank has a GPU of its own (on each node, no two ranks on one GPU). */
        ONE_PER_RANK,
        /** Every rank of a node shares that node's one GPU. */
        SHARED,
        /** Anything else (some ranks share, others not; some without a GPU). */
        MIXED;

        /** As the cost tables write it: {@code one-per-rank}, {@code shared}, ... */
        public String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    private static final int RECORD = 64;
    private static final Pattern MODEL = Pattern.compile("\\b([A-Z]{1,2}\\d{2,4}[A-Z]?)\\b");

    /** True when every rank runs on one node. */
    public boolean oneNode() {
        return nodes == 1;
    }

    /** True when every rank has a CUDA device. */
    public boolean cudaEverywhere() {
        return cuda == size;
    }

    /** True when every rank has CUDA IPC on. */
    public boolean ipcEverywhere() {
        return ipc == size;
    }

    /** Ranks on the node of rank {@code r}. */
    public int ranksOnNodeOf(int r) {
        int n = 0;
        for (int x : node) if (x == node[r]) n++;
        return n;
    }

    /** One line for reports: "2 ranks on 1 node, one GPU per rank (H200), peer access". */
    public String describe() {
        return size + " rank" + (size == 1 ? "" : "s") + " on " + nodes + " node" + (nodes == 1 ? "" : "s") + ", "
                + switch (placement) {
                    case NONE -> "no GPU";
                    case ONE_PER_RANK -> "one GPU per rank (" + gpu + ")" + (peerAccess ? ", peer access" : ", no peer access");
                    case SHARED -> "ranks of a node sharing its GPU (" + gpu + ")";
                    case MIXED -> "GPUs shared by some ranks (" + gpu + ")";
                };
    }

    /**
     * Exchanges the records over {@code mover} (host memory; collective) and derives the topology.
     * {@code nodeOf} gives this process's node identity (the real one, or a pretended one for tests).
     */
    public static Topology discover(Transport mover, long myNode, boolean ipcHere) {
        int n = mover.size();
        boolean cuda = Cuda.isAvailable();
        int device = cuda ? Cuda.defaultDevice().ordinal() : -1;
        try (HostBuffer mine = HostBuffer.allocate(RECORD); HostBuffer all = HostBuffer.allocate((long) RECORD * n);
             HostBuffer flagIn = HostBuffer.allocate(4); HostBuffer flagOut = HostBuffer.allocate(4)) {
            MemorySegment m = mine.segment();
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, myNode);
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, ProcessHandle.current().pid());
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 16, device);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 20, cuda ? Cuda.device(device).pciLocation() : 0);
            byte[] name = (cuda ? model(Cuda.device(device).name()) : "none").getBytes(StandardCharsets.US_ASCII);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 24, Math.min(name.length, 31));
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 60, ipcHere ? 1 : 0);
            MemorySegment.copy(MemorySegment.ofArray(name), 0, m, 28, Math.min(name.length, 31));
            mover.allGather(mine, all, RECORD, DataType.BYTE);
            MemorySegment a = all.segment();
            long[] nodeId = new long[n], pid = new long[n];
            int[] pci = new int[n], node = new int[n];
            boolean[] hasCuda = new boolean[n];
            Map<Long, Integer> nodes = new HashMap<>();
            int withCuda = 0, withIpc = 0;
            for (int r = 0; r < n; r++) {
                long o = (long) r * RECORD;
                nodeId[r] = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o);
                pid[r] = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o + 8);
                hasCuda[r] = a.get(ValueLayout.JAVA_INT_UNALIGNED, o + 16) >= 0;
                pci[r] = a.get(ValueLayout.JAVA_INT_UNALIGNED, o + 20);
                node[r] = nodes.computeIfAbsent(nodeId[r], k -> nodes.size());
                if (hasCuda[r]) withCuda++;
                if (a.get(ValueLayout.JAVA_INT_UNALIGNED, o + 60) == 1) withIpc++;
            }
            int len = a.get(ValueLayout.JAVA_INT_UNALIGNED, 24);
            byte[] gpu = new byte[len];
            MemorySegment.copy(a, ValueLayout.JAVA_BYTE, 28, gpu, 0, len);
            Placement placement = placement(n, node, hasCuda, pci);
            // peer access: this rank reaches every other GPU of its node; agreed by every rank (MIN)
            int me = mover.rank();
            boolean reach = true;
            for (int r = 0; r < n && cuda && reach; r++) {
                if (r == me || node[r] != node[me] || !hasCuda[r] || pci[r] == pci[me]) continue;
                int theirs = Cuda.ordinalAt(pci[r]);
                reach = theirs >= 0 && Cuda.canAccessPeer(device, theirs);
            }
            flagIn.segment().set(ValueLayout.JAVA_INT, 0, reach ? 1 : 0);
            mover.allReduce(flagIn, flagOut, 1, DataType.INT, ReduceOp.MIN);
            boolean peer = flagOut.segment().get(ValueLayout.JAVA_INT, 0) == 1 && withCuda == n;
            return new Topology(n, node, nodes.size(), withCuda, withIpc, placement, peer, new String(gpu, StandardCharsets.US_ASCII), pid, nodeId);
        }
    }

    private static Placement placement(int n, int[] node, boolean[] cuda, int[] pci) {
        boolean any = false, all = true;
        for (boolean c : cuda) {
            any |= c;
            all &= c;
        }
        if (!any) return Placement.NONE;
        if (!all) return Placement.MIXED;
        boolean distinct = true, shared = true;
        Map<Integer, Set<Integer>> gpusByNode = new HashMap<>();
        Map<Integer, Integer> ranksByNode = new HashMap<>();
        for (int r = 0; r < n; r++) {
            gpusByNode.computeIfAbsent(node[r], k -> new HashSet<>()).add(pci[r]);
            ranksByNode.merge(node[r], 1, Integer::sum);
        }
        for (Map.Entry<Integer, Set<Integer>> e : gpusByNode.entrySet()) {
            int gpus = e.getValue().size(), ranks = ranksByNode.get(e.getKey());
            distinct &= gpus == ranks;
            shared &= gpus == 1;
        }
        return distinct ? Placement.ONE_PER_RANK : shared ? Placement.SHARED : Placement.MIXED;
    }

    /** The model in a device name: "NVIDIA H100 80GB HBM3" gives {@code H100}; else the name without spaces. */
    static String model(String deviceName) {
        Matcher m = MODEL.matcher(deviceName);
        return m.find() ? m.group(1) : deviceName.replace(' ', '_');
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Topology t && t.size == size && java.util.Arrays.equals(t.node, node) && t.placement == placement && t.peerAccess == peerAccess
                && t.gpu.equals(gpu) && t.cuda == cuda && t.ipc == ipc;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(size, java.util.Arrays.hashCode(node), placement, peerAccess, gpu, cuda, ipc);
    }

    @Override
    public String toString() {
        return describe();
    }
}
