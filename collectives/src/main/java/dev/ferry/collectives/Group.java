// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Transport;
import java.lang.foreign.ValueLayout;

/**
 * The ranks of one communicator as its algorithms see them: the backend's transport (the mover: its
 * point-to-point messages and its own collectives), a private duplicate of it for algorithms made
 * of messages (made at the first call that needs it, on every rank at the same call), the
 * {@link Topology}, and the one agreement utility of the planner ({@link #everyRank}).
 */
public final class Group implements AutoCloseable {
    private final Transport mover;
    private final Topology topology;
    private final HostBuffer flagIn = HostBuffer.allocate(8);
    private final HostBuffer flagOut = HostBuffer.allocate(8);
    private Transport internal;
    private long agreements;

    Group(Transport mover, Topology topology) {
        this.mover = mover;
        this.topology = topology;
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
     * True on every rank when {@code mine} is true on every rank: the planner's agreement (one
     * allReduce of one int, collective). The one place where ranks agree on a call.
     */
    public boolean everyRank(boolean mine) {
        agreements++;
        flagIn.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
        mover.allReduce(flagIn, flagOut, 1, DataType.INT, ReduceOp.MIN);
        return flagOut.segment().get(ValueLayout.JAVA_INT, 0) == 1;
    }

    /**
     * Two answers agreed in one round (a 2-int MIN allReduce): bit 0 set when {@code first} is true
     * on every rank, bit 1 when {@code second} is.
     */
    public int everyRank(boolean first, boolean second) {
        agreements++;
        flagIn.segment().set(ValueLayout.JAVA_INT, 0, first ? 1 : 0);
        flagIn.segment().set(ValueLayout.JAVA_INT, 4, second ? 1 : 0);
        mover.allReduce(flagIn, flagOut, 2, DataType.INT, ReduceOp.MIN);
        return flagOut.segment().get(ValueLayout.JAVA_INT, 0) | flagOut.segment().get(ValueLayout.JAVA_INT, 4) << 1;
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
            flagIn.close();
            flagOut.close();
        }
    }
}
