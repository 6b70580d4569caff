// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import java.util.Set;

/**
 * What every rank must pass alike to one collective, by the operation's name: the root of a rooted
 * collective, and the count and datatype of those whose count is the same on every rank (not the
 * vector forms, whose counts differ by rank, nor reduceScatter, whose count is the rank's own
 * block; split's color and key differ by design). A hang report compares these and nothing else.
 */
final class CollectiveShape {
    private static final Set<String> ROOTED = withNonBlocking("broadcast", "scatter", "gather", "reduce", "scatterV", "gatherV");
    private static final Set<String> COUNT_BY_RANK = withNonBlocking("scatterV", "gatherV", "allGatherV", "allToAllV", "reduceScatter");
    private static final Set<String> NO_DATA = withNonBlocking("barrier", "split", "duplicate");

    private CollectiveShape() {
    }

    private static Set<String> withNonBlocking(String... ops) {
        java.util.HashSet<String> s = new java.util.HashSet<>();
        for (String op : ops) {
            s.add(op);
            s.add("i" + op);
        }
        return Set.copyOf(s);
    }

    /** Whether {@code op} has a root (its peer field). */
    static boolean rooted(String op) {
        return ROOTED.contains(op);
    }

    /** Whether every rank passes the same count to {@code op}. */
    static boolean sameCount(String op) {
        return !COUNT_BY_RANK.contains(op) && !NO_DATA.contains(op);
    }

    /** Whether every rank passes the same datatype to {@code op}. */
    static boolean sameType(String op) {
        return !NO_DATA.contains(op);
    }
}
