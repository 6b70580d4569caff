// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.DataType;
import dev.ferry.MemoryKind;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One operation in a communicator's {@link OperationRing}: written in place by the thread that
 * makes the call (no allocation), read by a dump on another thread. {@link #seq} is the entry's
 * version: -1 while it is being rewritten, set last with a release store; a reader that sees it
 * change across its read drops the entry (the ring moved on under it).
 */
final class RingEntry {
    private static final VarHandle SEQ;
    private static final VarHandle DONE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SEQ = l.findVarHandle(RingEntry.class, "seq", long.class);
            DONE = l.findVarHandle(RingEntry.class, "done", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through SEQ
    private long seq = -1;
    long collective;
    String op;
    CurrentCall.Kind kind;
    int peer, tag, peer2, tag2;
    long count;
    DataType type;
    MemoryKind memory;
    MemoryKind otherMemory;
    String algorithm;
    long start;
    Thread thread;
    @SuppressWarnings("unused") // through DONE
    private boolean done;

    void write(long seq, long collective, String op, CurrentCall.Kind kind, int peer, int tag, int peer2, int tag2, long count, DataType type,
               long start, Thread thread) {
        SEQ.setOpaque(this, -1L);
        VarHandle.storeStoreFence(); // the -1 is visible before any field of the new operation
        this.collective = collective;
        this.op = op;
        this.kind = kind;
        this.peer = peer;
        this.tag = tag;
        this.peer2 = peer2;
        this.tag2 = tag2;
        this.count = count;
        this.type = type;
        this.memory = null;
        this.otherMemory = null;
        this.algorithm = null;
        this.start = start;
        this.thread = thread;
        DONE.setOpaque(this, false);
        SEQ.setRelease(this, seq);
    }

    /** Marks operation {@code seq} done, with what was learnt during it; nothing when the entry holds a later operation. */
    void finish(long seq, MemoryKind memory, MemoryKind otherMemory, String algorithm) {
        if ((long) SEQ.getOpaque(this) != seq) {
            return;
        }
        this.memory = memory;
        this.otherMemory = otherMemory;
        this.algorithm = algorithm;
        DONE.setRelease(this, true);
    }

    /** A consistent copy of this entry, or null when it is empty or being rewritten. */
    Snapshot read() {
        long s = (long) SEQ.getAcquire(this);
        if (s < 0) {
            return null;
        }
        boolean d = (boolean) DONE.getAcquire(this);
        Snapshot copy = new Snapshot(s, collective, op, kind, peer, tag, peer2, tag2, count, type, memory, otherMemory, algorithm, start,
                thread == null ? "?" : thread.getName(), d);
        VarHandle.loadLoadFence();
        return (long) SEQ.getOpaque(this) == s ? copy : null;
    }

    /** What a dump reads of one entry. */
    record Snapshot(long seq, long collective, String op, CurrentCall.Kind kind, int peer, int tag, int peer2, int tag2, long count, DataType type,
                    MemoryKind memory, MemoryKind otherMemory, String algorithm, long start, String thread, boolean done) {
    }
}
