// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.MemoryKind;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Ferry call one thread is inside, as the flight recorder sees it: the operation and its
 * arguments, its entry in the communicator's {@link OperationRing}, what was learnt during it
 * (the memory kind of its buffers, the algorithm that carried it) and its JFR event while JFR
 * records Ferry's events. The call tracker of the checked front calls {@link #begin} and
 * {@link #end} around every outermost call; nothing is allocated unless JFR records the event.
 *
 * <p>A transport names the algorithm that carries the current call with
 * {@link #algorithm(String)}; without it the record says the backend's name.
 */
public final class CurrentCall {
    /** What a call is, for its JFR event and its report. */
    public enum Kind {
        /** A collective (blocking, or the start of a non-blocking one), split and duplicate included. */
        COLLECTIVE,
        /** A point-to-point operation: send, receive, probe, the start of isend/irecv. */
        POINT_TO_POINT,
        /** A wait, test or cancel of a request, or MPI_Finalize: not an operation of one communicator. */
        WAIT
    }

    private static final VarHandle SINCE;

    static {
        try {
            SINCE = MethodHandles.lookup().findVarHandle(CurrentCall.class, "since", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final ThreadLocal<CurrentCall> CURRENT = new ThreadLocal<>();
    private static final Set<CurrentCall> ALL = ConcurrentHashMap.newKeySet();

    final Thread thread;
    @SuppressWarnings("unused") // through SINCE
    private long since; // System.nanoTime() at the start, 0 while idle; published last
    String op;
    Kind kind;
    Object subject; // what a WAIT waits for (a request, "N requests", the MPI library), described in a dump
    OperationRing ring;
    RingEntry entry;
    long seq;
    long collective;
    int peer, tag, peer2, tag2;
    long count;
    DataType type;
    MemoryKind memory;
    MemoryKind otherMemory;
    String algorithm;
    int made; // communicators made inside this call
    private jdk.jfr.Event event;

    private CurrentCall(Thread thread) {
        this.thread = thread;
    }

    /** The current thread's record, made at its first call. */
    public static CurrentCall ofThisThread() {
        CurrentCall c = CURRENT.get();
        if (c == null) {
            c = new CurrentCall(Thread.currentThread());
            ALL.removeIf(x -> !x.thread.isAlive());
            ALL.add(c);
            CURRENT.set(c);
        }
        return c;
    }

    /** The current thread's call in progress, or null. */
    static CurrentCall inProgress() {
        CurrentCall c = CURRENT.get();
        return c != null && c.since() != 0 ? c : null;
    }

    /** Every thread's call in progress right now. */
    static List<CurrentCall> inProgressEverywhere() {
        List<CurrentCall> out = new ArrayList<>();
        for (CurrentCall c : ALL) {
            if (c.since() != 0 && c.thread.isAlive()) {
                out.add(c);
            }
        }
        return out;
    }

    long since() {
        return (long) SINCE.getAcquire(this);
    }

    /**
     * Records the start of an outermost call: into {@code ring} (null for a {@link Kind#WAIT}), and
     * as a JFR event when JFR records Ferry's events. {@code start} is the caller's
     * {@code System.nanoTime()}, never 0.
     */
    public void begin(OperationRing ring, String op, Kind kind, Object subject, int peer, int tag, int peer2, int tag2, long count, DataType type,
                      long start) {
        this.op = op;
        this.kind = kind;
        this.subject = ring == null ? subject : null;
        this.peer = peer;
        this.tag = tag;
        this.peer2 = peer2;
        this.tag2 = tag2;
        this.count = count;
        this.type = type;
        this.memory = null;
        this.otherMemory = null;
        this.algorithm = null;
        this.made = 0;
        this.ring = ring;
        if (ring != null) {
            entry = ring.begin(this, op, kind, peer, tag, peer2, tag2, count, type, start);
        } else {
            entry = null;
            seq = -1;
            collective = -1;
        }
        event = OperationEvents.begin(kind);
        SINCE.setRelease(this, start);
    }

    /** Records the end of the call begun last (normally or by an exception). */
    public void end() {
        RingEntry e = entry;
        if (e != null) {
            e.finish(seq, memory, otherMemory, algorithm);
            entry = null;
        }
        jdk.jfr.Event ev = event;
        if (ev != null) {
            event = null;
            OperationEvents.commit(ev, this);
        }
        SINCE.setRelease(this, 0L);
        subject = null;
        ring = null;
    }

    /**
     * Notes the memory kinds of the current call's buffers (the first one's, and another when they
     * differ); the front calls it when it pins them. Only the first note of a call counts (a
     * backend's nested call does not change it).
     */
    public static void memory(Buffer... buffers) {
        CurrentCall c = CURRENT.get();
        if (c == null || c.memory != null) {
            return;
        }
        MemoryKind first = null, other = null;
        for (Buffer b : buffers) {
            if (b == null) continue;
            MemoryKind k = b.kind();
            if (first == null) first = k; else if (k != first) other = k;
        }
        c.memory = first;
        c.otherMemory = other;
    }

    /**
     * Names the algorithm or path that carries the current thread's call ("mpi", "ipc-short",
     * "nccl-ring", ...), for its ring entry and its JFR event; the last name given in a call counts.
     * A transport calls it where it decides; outside a Ferry call it does nothing.
     */
    public static void algorithm(String name) {
        CurrentCall c = CURRENT.get();
        if (c != null && c.since() != 0) {
            c.algorithm = name;
        }
    }

    /** The algorithm named in this call, else the backend of its communicator, else null. */
    String algorithmOrBackend() {
        if (algorithm != null) return algorithm;
        OperationRing r = ring;
        dev.ferry.Communicator c = r == null ? null : r.communicator();
        return c == null ? null : c.backend();
    }

    /** "HOST_PAGEABLE", "HOST_PAGEABLE/DEVICE" (buffers of two kinds), or "" when the call had no buffer. */
    static String memoryText(MemoryKind memory, MemoryKind other) {
        return memory == null ? "" : other == null ? memory.toString() : memory + "/" + other;
    }
}
