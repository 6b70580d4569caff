// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import java.util.Locale;

/**
 * The collective operations the planner chooses an algorithm for. {@code reduceScatterBlock} is
 * {@link #REDUCE_SCATTER} with equal blocks; the barrier is always the backend's own.
 */
public enum Collective {
    BROADCAST("broadcast"), SCATTER("scatter"), GATHER("gather"), ALL_GATHER("allGather"), ALL_TO_ALL("allToAll"),
    REDUCE("reduce"), ALL_REDUCE("allReduce"), REDUCE_SCATTER("reduceScatter"), SCAN("scan"), EXSCAN("exscan"),
    SCATTER_V("scatterV"), GATHER_V("gatherV"), ALL_GATHER_V("allGatherV"), ALL_TO_ALL_V("allToAllV");

    private final String label;

    Collective(String label) {
        this.label = label;
    }

    /** The name of the operation in {@link dev.ferry.Communicator} ({@code allReduce}), as settings and tables write it. */
    public String label() {
        return label;
    }

    /** True for the reductions (an operator folds the ranks' data). */
    public boolean reduces() {
        return this == REDUCE || this == ALL_REDUCE || this == REDUCE_SCATTER || this == SCAN || this == EXSCAN;
    }

    /** True for the collectives with a root. */
    public boolean rooted() {
        return this == BROADCAST || this == SCATTER || this == GATHER || this == REDUCE || this == SCATTER_V || this == GATHER_V;
    }

    /** True for the vector collectives, whose block sizes only their own rank knows. */
    public boolean vector() {
        return this == SCATTER_V || this == GATHER_V || this == ALL_GATHER_V || this == ALL_TO_ALL_V;
    }

    /** The collective named {@code label} (case ignored), or null. */
    public static Collective byLabel(String label) {
        for (Collective c : values()) {
            if (c.label.toLowerCase(Locale.ROOT).equals(label.toLowerCase(Locale.ROOT))) {
                return c;
            }
        }
        return null;
    }
}
