// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The last operations of one communicator on this rank, kept always: a fixed ring of entries
 * written in place (nothing is allocated per call), and the communicator's identity as every rank
 * sees it.
 *
 * <p>The identity: a communicator opened outside any call (the world of {@code Ferry.open()}, a
 * wrapped MPI communicator) is numbered in the order this process opened them, from 0; one made
 * inside a call (split, duplicate, the duplicate behind non-blocking collectives) is named by that
 * call: its parent's id, a dot, and the call's collective number on the parent, plus the color
 * of a split ({@code 0.4c1}). Collectives happen in the same order on every rank, so every rank
 * gives the same communicator the same id, whatever order its other communicators were made in.
 *
 * <p>Numbers: {@code seq} counts every operation of this rank on the communicator (from 1);
 * {@code collective} counts its collectives (from 1) and is the same on every rank for the same
 * collective, which is what a hang report compares.
 */
public final class OperationRing {
    private static final VarHandle OPERATIONS;
    private static final VarHandle COLLECTIVES;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            OPERATIONS = l.findVarHandle(OperationRing.class, "operations", long.class);
            COLLECTIVES = l.findVarHandle(OperationRing.class, "collectives", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String id;
    private final String origin;
    private final WeakReference<Communicator> communicator;
    private final RingEntry[] entries;
    private final int mask;
    @SuppressWarnings("unused") // through OPERATIONS
    private long operations;
    @SuppressWarnings("unused") // through COLLECTIVES; written only under the communicator's collective claim
    private long collectives;

    OperationRing(String id, String origin, Communicator communicator, int size) {
        this.id = id;
        this.origin = origin;
        this.communicator = new WeakReference<>(communicator);
        this.entries = new RingEntry[size];
        for (int i = 0; i < size; i++) {
            entries[i] = new RingEntry();
        }
        this.mask = size - 1;
    }

    /** The id every rank gives this communicator ("0", "0.3", "0.4c1"). */
    public String id() {
        return id;
    }

    /** How it was made, for reports: "opened", "duplicate #3 of 0", "split #4 of 0 (color 1)". */
    String origin() {
        return origin;
    }

    /** The communicator, or null once it was collected. */
    Communicator communicator() {
        return communicator.get();
    }

    /** True once the communicator is closed or collected: its ring is dropped from dumps. */
    boolean gone() {
        Communicator c = communicator.get();
        return c == null || c.isClosed();
    }

    /** Records the start of an operation and returns its entry; {@code seq} and {@code collective} are taken here. */
    RingEntry begin(CurrentCall call, String op, CurrentCall.Kind kind, int peer, int tag, int peer2, int tag2, long count, DataType type,
                    long start) {
        long seq = (long) OPERATIONS.getAndAdd(this, 1L) + 1;
        long collective = -1;
        if (kind == CurrentCall.Kind.COLLECTIVE) {
            // collectives on one communicator never overlap (CallTracker's claim), so a plain increment is enough
            collective = (long) COLLECTIVES.get(this) + 1;
            COLLECTIVES.setOpaque(this, collective);
        }
        call.seq = seq;
        call.collective = collective;
        RingEntry e = entries[(int) (seq & mask)];
        e.write(seq, collective, op, kind, peer, tag, peer2, tag2, count, type, start, call.thread);
        return e;
    }

    /** Operations recorded so far (the newest {@code seq}). */
    long operations() {
        return (long) OPERATIONS.getOpaque(this);
    }

    /** Collectives entered so far (the newest collective number). */
    long collectives() {
        return (long) COLLECTIVES.getOpaque(this);
    }

    /** The ring's consistent entries, oldest first. */
    List<RingEntry.Snapshot> snapshot() {
        List<RingEntry.Snapshot> out = new ArrayList<>(entries.length);
        for (RingEntry e : entries) {
            RingEntry.Snapshot s = e.read();
            if (s != null) {
                out.add(s);
            }
        }
        out.sort(Comparator.comparingLong(RingEntry.Snapshot::seq));
        return out;
    }
}
