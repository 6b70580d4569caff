// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.util.Optional;

/**
 * This process's rank among the ranks of its node as MPI sees it: the backend that initialized MPI
 * splits the world communicator by shared memory ({@code MPI_Comm_split_type} with
 * {@code MPI_COMM_TYPE_SHARED}) and records the result here. It confirms the launcher's node-local
 * rank ({@link Launch#localRank()}) and stands in for it where the launcher gave none (the GPU
 * choice, {@code dev.ferry.cuda.Cuda}).
 */
public final class NodeLocal {
    /**
     * The split's result.
     *
     * @param rank     rank in the node's shared-memory communicator
     * @param size     ranks on this node
     * @param launcher the launcher's node-local rank, or -1 when it gave none
     */
    public record Split(int rank, int size, int launcher) {
        /** Whether the launcher gave a node-local rank that differs from MPI's. */
        public boolean disagrees() {
            return launcher >= 0 && launcher != rank;
        }

        /** For probe details: "1 of 2 (MPI_Comm_split_type SHARED; the launcher says 1)". */
        public String describe() {
            return rank + " of " + size + " (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); "
                    + (launcher < 0 ? "the launcher gave none" : disagrees() ? "the launcher says " + launcher + ", which is used" : "the launcher agrees") + ")";
        }
    }

    private static volatile Split split;
    private static volatile String failure;

    private NodeLocal() {
    }

    /** Records the split of this process's MPI (called once by the backend after MPI_Init). */
    public static void record(int rank, int size, Launch launch) {
        split = new Split(rank, size, launch.localRank());
    }

    /** Records why the split could not be made. */
    public static void failed(String why) {
        failure = why;
    }

    /** The split, when a backend made one. */
    public static Optional<Split> split() {
        return Optional.ofNullable(split);
    }

    /** For probe details: the split, or why there is none. */
    public static String describe() {
        Split s = split;
        return s != null ? s.describe() : failure != null ? "unknown (" + failure + ")" : "unknown (MPI not initialized)";
    }

    /** The node-local rank: the launcher's when it gave one, else MPI's shared-memory split, else -1. */
    public static int rank(Launch launch) {
        if (launch.localRank() >= 0) return launch.localRank();
        Split s = split;
        return s != null ? s.rank() : -1;
    }
}
