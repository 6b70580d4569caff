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

/**
 * The ranks of one communicator as its algorithms see them: the backend's transport (the mover: its
 * point-to-point messages and its own collectives), a private duplicate of it for algorithms made
 * of messages (made at the first call that needs it, on every rank at the same call), the
 * {@link Topology}, and the one agreement utility of the planner and its algorithms ({@link #agree},
 * {@link #everyRank}).
 *
 * <p>Where every rank runs on this node, agreements meet on the group's {@link NodeBoard} (a few
 * hundred nanoseconds a round), opened at the first agreement or exchange of the node's IPC
 * collectives, which every rank reaches at the same call; elsewhere, or when no board could be made,
 * they are one allReduce of the mover (over a CUDA-aware Open MPI 5.0.7 on a GPU node, 15 µs for 8
 * bytes: bench/results, SmallCollectiveFloor). Every exchange on the board says what it is for
 * ({@link #AGREEMENT}, {@link #CALL_VOTE}, {@link #CALL_RECORDS}), so ranks whose calls the planner
 * put on algorithms that meet differently (sizes on either side of a crossover) all throw the same
 * {@link CollectiveMismatchException} there instead of waiting for each other.
 */
public final class Group implements AutoCloseable {
    /** The most words one agreement folds. */
    public static final int AGREEMENT_WORDS = 8;
    /** The largest record an exchange on the board carries (the IPC collectives' records). */
    static final long BOARD_RECORD_BYTES = 512;
    /** Kinds of the board's exchanges: an agreement within an algorithm (no call's own), a call's vote ({@link SameCall}), a call's records of the IPC collectives. */
    static final long AGREEMENT = 0, CALL_VOTE = 1, CALL_RECORDS = 2;

    private final Transport mover;
    private final Topology topology;
    private final HostBuffer agreeIn = HostBuffer.allocate(8L * AGREEMENT_WORDS);
    private final HostBuffer agreeOut;
    private Transport internal;
    private NodeBoard board;
    private boolean boardTried;
    private long agreements;

    Group(Transport mover, Topology topology) {
        this.mover = mover;
        this.topology = topology;
        this.agreeOut = HostBuffer.allocate(8L * AGREEMENT_WORDS * Math.max(1, mover.size()));
    }

    /** The backend's transport: its messages and its own collectives. */
    public Transport mover() {
        return mover;
    }

    public int rank() {
        return mover.rank();
    }

    public int size() {
        return mover.size();
    }

    public Topology topology() {
        return topology;
    }

    /** A private duplicate of the mover, for algorithms made of messages (collective at its first use). */
    public synchronized Transport internal() {
        if (internal == null) {
            internal = mover.duplicate();
        }
        return internal;
    }

    /** Advances what the program left pending on this communicator while a rank waits for its peers inside a collective. */
    public void progress() {
        mover.progress();
    }

    /**
     * Every rank's {@code mine} (at most {@link #AGREEMENT_WORDS} words, as many on every rank) folded
     * word by word with {@code op} ({@link ReduceOp#MIN} or {@link ReduceOp#MAX}): one round,
     * collective. The one place where ranks agree on a call.
     */
    public long[] agree(long[] mine, ReduceOp op) {
        return agree(mine, op, AGREEMENT, 0, 0);
    }

    /** {@link #agree} as an exchange of {@code kind} on the board, with the call's {@link SameCall#key} and bytes. */
    long[] agree(long[] mine, ReduceOp op, long kind, long key, long bytes) {
        if (mine.length > AGREEMENT_WORDS || (op != ReduceOp.MIN && op != ReduceOp.MAX)) {
            throw new IllegalArgumentException("an agreement folds at most " + AGREEMENT_WORDS + " words by MIN or MAX, not " + mine.length + " by " + op);
        }
        agreements++;
        MemorySegment in = agreeIn.segment(), out = agreeOut.segment();
        for (int i = 0; i < mine.length; i++) in.setAtIndex(ValueLayout.JAVA_LONG, i, mine[i]);
        long[] folded = new long[mine.length];
        NodeBoard b = board();
        if (b == null) {
            mover.allReduce(agreeIn, agreeOut, mine.length, DataType.LONG, op);
            for (int i = 0; i < mine.length; i++) folded[i] = out.getAtIndex(ValueLayout.JAVA_LONG, i);
            return folded;
        }
        exchange(kind, key, bytes, in, out, 8L * mine.length);
        System.arraycopy(mine, 0, folded, 0, mine.length);
        for (int r = 0; r < size(); r++) {
            for (int i = 0; i < mine.length; i++) {
                long v = out.getAtIndex(ValueLayout.JAVA_LONG, (long) r * mine.length + i);
                folded[i] = op == ReduceOp.MIN ? Math.min(folded[i], v) : Math.max(folded[i], v);
            }
        }
        return folded;
    }

    /**
     * The group's board: opened at the first agreement or exchange of records where every rank is on
     * this node (collective); null elsewhere, or when it could not be made.
     */
    NodeBoard board() {
        if (!boardTried) {
            boardTried = true;
            if (topology.oneNode() && size() > 1) board = NodeBoard.open(mover, BOARD_RECORD_BYTES, this::progress);
        }
        return board;
    }

    /**
     * Every rank's record of one exchange of {@code kind} into {@code all}, on the group's {@link #board}
     * (the caller found it open); a rank whose exchange is of another kind makes every rank throw the
     * same {@link CollectiveMismatchException}, naming each rank's call ({@code key}, {@code bytes}).
     */
    void exchange(long kind, long key, long bytes, MemorySegment mine, MemorySegment all, long recordBytes) {
        try {
            board.exchange(kind, key, bytes, mine, all, recordBytes, this::progress);
        } catch (NodeBoard.Diverged d) {
            throw callsOfDifferentKinds(d);
        }
    }

    private CollectiveMismatchException callsOfDifferentKinds(NodeBoard.Diverged d) {
        int n = size();
        String where = "a collective";
        for (int r = 0; r < n; r++) {
            if (d.kind(r) != AGREEMENT) {
                where = SameCall.collective(d.key(r)).label();
                break;
            }
        }
        return SameCall.mismatch(where + " (the ranks' calls planned onto algorithms that meet differently)", n,
                r -> d.kind(r) == AGREEMENT ? "was inside an algorithm's own agreement (another collective)"
                        : "called " + SameCall.call(SameCall.collective(d.key(r)), SameCall.root(d.key(r)), d.size(r)));
    }

    /** True on every rank when {@code mine} is true on every rank ({@link #agree}). */
    public boolean everyRank(boolean mine) {
        return agree(new long[] {mine ? 1 : 0}, ReduceOp.MIN)[0] == 1;
    }

    /**
     * Two answers agreed in one round ({@link #agree}): bit 0 set when {@code first} is true on every
     * rank, bit 1 when {@code second} is.
     */
    public int everyRank(boolean first, boolean second) {
        long[] a = agree(new long[] {first ? 1 : 0, second ? 1 : 0}, ReduceOp.MIN);
        return (int) a[0] | (int) a[1] << 1;
    }

    /** Agreements made so far (for the bench and tests). */
    public long agreements() {
        return agreements;
    }

    @Override
    public void close() {
        try {
            if (internal != null) {
                internal.close();
            }
        } finally {
            if (board != null) board.close();
            agreeIn.close();
            agreeOut.close();
        }
    }
}
