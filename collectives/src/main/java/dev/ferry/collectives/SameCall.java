// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.CollectiveMismatchException;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.function.IntToLongFunction;
import java.util.stream.Collectors;

/**
 * Compares one collective call across the ranks before its data moves, for an algorithm whose
 * library completes calls that the ranks disagree on (NCCL's rooted collectives given different
 * roots move wrong data and return): one agreement of three words and their negations (MAX,
 * {@link Group#agree}), and on a disagreement an allGather of every rank's call, so
 * that every rank throws the same {@link CollectiveMismatchException}, naming the ranks and their
 * calls. The node's IPC collectives compare the records they exchange anyway and need none.
 */
public final class SameCall {
    private static final int WORDS = 3; // collective, root, bytes
    private final Group group;

    public SameCall(Group group) {
        this.group = group;
    }

    /**
     * Returns when every rank of the group makes the call {@code c} with {@code root} and {@code bytes};
     * else throws on every rank, naming the call {@code where} gives (built only then).
     */
    public void check(Collective c, int root, long bytes, java.util.function.Supplier<String> where) {
        long[] mine = {c.ordinal(), root, bytes};
        long[] both = new long[2 * WORDS];
        for (int i = 0; i < WORDS; i++) {
            both[i] = mine[i];
            both[WORDS + i] = -mine[i];
        }
        long[] max = group.agree(both, ReduceOp.MAX);
        boolean same = true;
        for (int i = 0; i < WORDS; i++) {
            same &= max[i] == -max[WORDS + i];
        }
        if (!same) throw mismatch(mine, where.get());
    }

    /** Every rank's call, gathered (every rank comes here alike: they all saw the same maxima). */
    private CollectiveMismatchException mismatch(long[] mine, String where) {
        Transport mover = group.mover();
        int n = mover.size();
        try (HostBuffer one = HostBuffer.allocate(WORDS * Long.BYTES); HostBuffer all = HostBuffer.allocate((long) n * WORDS * Long.BYTES)) {
            for (int i = 0; i < WORDS; i++) one.segment().setAtIndex(ValueLayout.JAVA_LONG, i, mine[i]);
            mover.allGather(one, all, WORDS, DataType.LONG);
            MemorySegment a = all.segment();
            return mismatch(where, n, r -> Collective.values()[(int) a.getAtIndex(ValueLayout.JAVA_LONG, (long) r * WORDS)],
                    r -> a.getAtIndex(ValueLayout.JAVA_LONG, (long) r * WORDS + 1), r -> a.getAtIndex(ValueLayout.JAVA_LONG, (long) r * WORDS + 2));
        }
    }

    /**
     * The exception for ranks whose calls disagree, the same on every rank that has every rank's
     * call: rank {@code r} called {@code op(r)} with {@code root(r)} (negative: none) and
     * {@code bytes(r)}; the ranks that made one call are named together.
     */
    static CollectiveMismatchException mismatch(String where, int n, IntFunction<Collective> op, IntToLongFunction root, IntToLongFunction bytes) {
        Map<String, List<Integer>> calls = new LinkedHashMap<>();
        for (int r = 0; r < n; r++) {
            long rr = root.applyAsLong(r);
            calls.computeIfAbsent(op.apply(r).label() + "(" + (rr >= 0 ? "root " + rr + ", " : "") + bytes.applyAsLong(r) + " bytes)",
                    k -> new ArrayList<>()).add(r);
        }
        String who = calls.entrySet().stream().map(e -> (e.getValue().size() == 1 ? "rank " : "ranks ")
                + e.getValue().stream().map(String::valueOf).collect(Collectors.joining(",")) + " called " + e.getKey()).collect(Collectors.joining("; "));
        return new CollectiveMismatchException(where + ": the ranks' calls disagree: " + who
                + " (each rank must call the same collective with the same root and amount of data)");
    }
}
