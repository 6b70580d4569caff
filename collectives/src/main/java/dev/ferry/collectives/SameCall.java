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
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Compares one collective call across the ranks before its data moves: its collective, root and
 * bytes ({@link Shape}: what every rank must pass alike), in one agreement ({@link Group#agree}, MIN
 * of the words and their negations), and on a disagreement an allGather of every rank's call, so
 * that every rank throws the same {@link CollectiveMismatchException}, naming the ranks and their
 * calls. The planner compares in the round of an algorithm's vote ({@link #vote}, no round of its
 * own), and alone ({@link #check}) for an algorithm whose library completes calls the ranks disagree
 * on (NCCL's rooted collectives given different roots move wrong data and return) where no vote ran.
 * The node's IPC collectives compare the records they exchange anyway and need neither.
 */
public final class SameCall {
    private static final int WORDS = 3; // collective, root, bytes
    private final Group group;

    public SameCall(Group group) {
        this.group = group;
    }

    /**
     * Returns when every rank of the group makes the call {@code s}; else throws on every rank,
     * naming the call {@code where} gives (built only then).
     */
    public void check(Shape s, Supplier<String> where) {
        vote(s, true, true, where);
    }

    /**
     * Two answers agreed in the round that compares the call {@code s} (as {@link #check}): bit 0 set
     * when {@code first} is true on every rank, bit 1 when {@code second} is
     * ({@link Group#everyRank(boolean, boolean)}).
     */
    public int vote(Shape s, boolean first, boolean second, Supplier<String> where) {
        long key = key(s.collective(), s.root());
        long[] min = group.agree(new long[] {first ? 1 : 0, second ? 1 : 0, key, s.bytes(), -key, -s.bytes()}, ReduceOp.MIN, Group.CALL_VOTE, key, s.bytes());
        if (min[2] != -min[4] || min[3] != -min[5]) throw mismatch(new long[] {s.collective().ordinal(), s.root(), s.bytes()}, where.get());
        return (int) min[0] | (int) min[1] << 1;
    }

    /** One word for a collective and its root (negative: none), as the vote and the node's board carry it. */
    static long key(Collective c, long root) {
        return (long) c.ordinal() << 32 | (root + 1L & 0xffff_ffffL);
    }

    /** The collective of a {@link #key}. */
    static Collective collective(long key) {
        return Collective.values()[(int) (key >>> 32)];
    }

    /** The root of a {@link #key} (-1: none). */
    static long root(long key) {
        return (key & 0xffff_ffffL) - 1;
    }

    /** Every rank's call, gathered (every rank comes here alike: they all saw the same extremes). */
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
        return mismatch(where, n, r -> "called " + call(op.apply(r), root.applyAsLong(r), bytes.applyAsLong(r)));
    }

    /** A call as the messages name it: {@code allReduce(40 bytes)}, {@code broadcast(root 1, 8 bytes)}. */
    static String call(Collective op, long root, long bytes) {
        return op.label() + "(" + (root >= 0 ? "root " + root + ", " : "") + bytes + " bytes)";
    }

    /** As above, with what each rank did in words ({@code what(r)}: "called allReduce(40 bytes)"); ranks that did the same are named together. */
    static CollectiveMismatchException mismatch(String where, int n, IntFunction<String> what) {
        Map<String, List<Integer>> calls = new LinkedHashMap<>();
        for (int r = 0; r < n; r++) {
            calls.computeIfAbsent(what.apply(r), k -> new ArrayList<>()).add(r);
        }
        String who = calls.entrySet().stream().map(e -> (e.getValue().size() == 1 ? "rank " : "ranks ")
                + e.getValue().stream().map(String::valueOf).collect(Collectors.joining(",")) + " " + e.getKey()).collect(Collectors.joining("; "));
        return new CollectiveMismatchException(where + ": the ranks' calls disagree: " + who
                + " (each rank must call the same collective with the same root and amount of data)");
    }
}
