// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Launch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * What every rank of a communicator knows of the others, exchanged once when the communicator is
 * made (one allGather of a 64-byte record): its node (a hash of host name and boot id), its pid,
 * its GPU, whether it can do CUDA IPC, and its wire settings, which must agree.
 *
 * <p>For tests on one machine, {@code ferry.staged.test.nodeGroup=N} makes groups of N consecutive
 * world ranks (the launcher's rank variables, {@link Launch}) count as separate nodes: each group
 * publishes a node id of its own, so that CUDA IPC, the node-local collectives and the reductions
 * across nodes (the planner's {@code dev.ferry.collectives.HierarchicalReductions}) decide as on that many machines.
 */
final class Peers {
    private static final int RECORD = 64;
    private static final int CUDA = 1, IPC = 2;

    /** This process's node id: stable for the host's boot, equal for processes of one node. */
    static final long NODE = nodeId();
    /** This process's pid. */
    static final long PID = ProcessHandle.current().pid();

    private final long[] node;
    private final long[] pid;
    private final int[] device;
    private final int[] flags;
    private final int rank;
    /** The node id this process publishes: {@link #NODE}, or its group's under {@code ferry.staged.test.nodeGroup}. */
    private final long self;

    private Peers(int size, int rank, long self) {
        node = new long[size];
        pid = new long[size];
        device = new int[size];
        flags = new int[size];
        this.rank = rank;
        this.self = self;
    }

    /** The node id this process publishes under {@code s}: the real one, or one per group of {@code nodeGroup} consecutive world ranks. */
    static long nodeOf(StagedSettings s) {
        return nodeOf(s, Launch.detect().rank());
    }

    /** {@link #nodeOf(StagedSettings)} for world rank {@code world} (-1, unknown: a singleton, rank 0). */
    static long nodeOf(StagedSettings s, int world) {
        if (s.nodeGroup() <= 0) {
            return NODE;
        }
        long group = Math.max(0, world) / s.nodeGroup();
        return NODE ^ ((group + 1) * 0x9E3779B97F4A7C15L);
    }

    /**
     * Exchanges records over {@code c} (a collective on it) and checks that every rank uses the
     * same wire settings; throws on every rank alike when they differ.
     */
    static Peers exchange(Transport c, StagedSettings s, boolean ipcHere) {
        int size = c.size();
        Peers p = new Peers(size, c.rank(), nodeOf(s));
        try (HostBuffer mine = HostBuffer.allocate(RECORD); HostBuffer all = HostBuffer.allocate((long) RECORD * size)) {
            MemorySegment m = mine.segment();
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, p.self);
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, PID);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 16, Cuda.isAvailable() ? Cuda.defaultDevice().ordinal() : -1);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 20, (Cuda.isAvailable() ? CUDA : 0) | (ipcHere ? IPC : 0));
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, s.chunk());
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 32, s.threshold());
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, 40, s.eager());
            c.allGather(mine, all, RECORD, DataType.BYTE);
            MemorySegment a = all.segment();
            StringBuilder mismatch = new StringBuilder();
            for (int r = 0; r < size; r++) {
                long o = (long) r * RECORD;
                p.node[r] = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o);
                p.pid[r] = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o + 8);
                p.device[r] = a.get(ValueLayout.JAVA_INT_UNALIGNED, o + 16);
                p.flags[r] = a.get(ValueLayout.JAVA_INT_UNALIGNED, o + 20);
                long chunk = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o + 24);
                long threshold = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o + 32);
                long eager = a.get(ValueLayout.JAVA_LONG_UNALIGNED, o + 40);
                if (chunk != s.chunk() || threshold != s.threshold() || eager != s.eager()) {
                    mismatch.append(" rank ").append(r).append(": chunk=").append(chunk).append(" threshold=").append(threshold)
                            .append(" eager=").append(eager).append(';');
                }
            }
            if (!mismatch.isEmpty()) {
                throw new FerryException("staged: ranks disagree on ferry.staged.chunk/threshold/eager (every rank must use the same);"
                        + " here chunk=" + s.chunk() + " threshold=" + s.threshold() + " eager=" + s.eager() + "; differing:" + mismatch);
            }
        }
        return p;
    }

    /** True when rank {@code r} runs on this node. */
    boolean sameNode(int r) {
        return node[r] == self;
    }

    /** True when {@code r} is another process of this node and both can do CUDA IPC. */
    boolean ipcPeer(int r) {
        return r != rank && sameNode(r) && (flags[r] & IPC) != 0 && (flags[rank] & IPC) != 0;
    }

    long node(int r) {
        return node[r];
    }

    long pid(int r) {
        return pid[r];
    }

    /** The GPU rank {@code r} uses by default (-1 without CUDA). */
    int device(int r) {
        return device[r];
    }

    /** True when every rank of the communicator runs on this node and can do CUDA IPC (the same answer on every rank). */
    boolean oneNodeWithIpc() {
        for (int r = 0; r < node.length; r++) {
            if (node[r] != self || (flags[r] & IPC) == 0) return false;
        }
        return true;
    }

    /** Ranks of this communicator on this node. */
    int localCount() {
        int n = 0;
        for (long v : node) if (v == self) n++;
        return n;
    }

    private static long nodeId() {
        String host;
        try {
            host = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (Exception e) {
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (Exception e2) {
                host = System.getenv().getOrDefault("HOSTNAME", "?");
            }
        }
        String boot;
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (Exception e) {
            boot = "";
        }
        UUID u = UUID.nameUUIDFromBytes((host + "/" + boot).getBytes(StandardCharsets.UTF_8));
        return u.getMostSignificantBits() ^ u.getLeastSignificantBits();
    }
}
