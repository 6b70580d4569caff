// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.FerrySettings;
import dev.ferry.InvalidSettingException;
import dev.ferry.Settings;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.ThreadLevel;
import dev.ferry.ThreadingException;
import dev.ferry.flight.CurrentCall;
import dev.ferry.flight.FlightRecorder;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which Ferry call each thread of this process is inside, kept for three readers:
 * <ul>
 *   <li>the threading rules ({@link ThreadLevel}): a second thread entering while the library
 *       provides only SERIALIZED, a foreign thread under FUNNELED, and overlapping collectives
 *       on one communicator are refused with {@link ThreadingException} before any native call;</li>
 *   <li>the watchdog ({@code ferry.timeout=SECONDS}): one daemon thread looks at every thread's
 *       entry a few times per timeout and reports (and by default aborts the job on) a blocking
 *       call older than the timeout;</li>
 *   <li>the exit path of {@link MpiLifecycle}: a JVM that exits while a thread is inside a call
 *       does not call MPI_Finalize (which would wait for ranks that wait for this one).</li>
 * </ul>
 * and it hands every outermost call to the flight recorder ({@link FlightRecorder}: the
 * communicator's ring of recent operations, JFR events), and a timeout to its dumps.
 *
 * <p>Cost per call: a thread-local lookup and two release stores (plain moves on x86), and the
 * flight recorder's entry (plain stores and one atomic increment; {@code ferry.flight.ring=0}
 * skips it); nothing is allocated (unless JFR records Ferry's events) and no lock is taken. Nested calls (a backend calling Ferry's public API, e.g. on
 * an internal duplicate) count as the outermost call.
 */
final class CallTracker {
    /** What a thread can be inside. */
    enum Op {
        SEND("send", false), RECV("recv", false), ISEND("isend", false), IRECV("irecv", false), SEND_RECV("sendRecv", false),
        BARRIER("barrier", true), BROADCAST("broadcast", true), SCATTER("scatter", true), GATHER("gather", true),
        ALL_GATHER("allGather", true), REDUCE("reduce", true), ALL_REDUCE("allReduce", true), ALL_TO_ALL("allToAll", true),
        IBARRIER("ibarrier", true), IBROADCAST("ibroadcast", true), ISCATTER("iscatter", true), IGATHER("igather", true),
        IALL_GATHER("iallGather", true), IREDUCE("ireduce", true), IALL_REDUCE("iallReduce", true), IALL_TO_ALL("iallToAll", true),
        SPLIT("split", true), DUPLICATE("duplicate", true),
        WAIT("waitFor", false), TEST("test", false), FINALIZE("MPI_Finalize", false),
        PROBE("probe", false), IPROBE("iprobe", false), MPROBE("mprobe", false), IMPROBE("improbe", false),
        MESSAGE_RECV("MatchedMessage.recv", false), MESSAGE_IRECV("MatchedMessage.irecv", false),
        WAIT_ANY("Request.waitAny", false), CANCEL("cancel", false),
        SCATTER_V("scatterV", true), GATHER_V("gatherV", true), ALL_GATHER_V("allGatherV", true), ALL_TO_ALL_V("allToAllV", true),
        REDUCE_SCATTER_BLOCK("reduceScatterBlock", true), REDUCE_SCATTER("reduceScatter", true), SCAN("scan", true), EXSCAN("exscan", true),
        ISCATTER_V("iscatterV", true), IGATHER_V("igatherV", true), IALL_GATHER_V("iallGatherV", true), IALL_TO_ALL_V("iallToAllV", true),
        IREDUCE_SCATTER_BLOCK("ireduceScatterBlock", true), IREDUCE_SCATTER("ireduceScatter", true), ISCAN("iscan", true), IEXSCAN("iexscan", true);

        final String label;
        final boolean collective;

        Op(String label, boolean collective) {
            this.label = label;
            this.collective = collective;
        }
    }

    /** One thread's current call. Written by its thread; {@link #since} published last (release), read first (acquire). */
    static final class Slot {
        final Thread thread;
        int depth;
        Op op;
        Object subject; // the communicator, request or binding name
        int peer, tag, peer2, tag2;
        long count;
        DataType type;
        boolean heldSerial;
        CheckedCommunicator claimed;
        final CurrentCall flight = FlightRecorder.ON ? CurrentCall.ofThisThread() : null;
        @SuppressWarnings("unused") // through SINCE
        private long since; // System.nanoTime() at entry, never 0 while inside; 0 when idle
        long reportedSince;

        Slot(Thread thread) {
            this.thread = thread;
        }

        long since() {
            return (long) SINCE.getAcquire(this);
        }
    }

    private static final VarHandle SINCE;
    private static final VarHandle SERIAL_OWNER;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SINCE = l.findVarHandle(Slot.class, "since", long.class);
            SERIAL_OWNER = l.findStaticVarHandle(CallTracker.class, "serialOwner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through SERIAL_OWNER
    private static volatile Thread serialOwner;

    private static final Set<Slot> SLOTS = ConcurrentHashMap.newKeySet();
    private static final ThreadLocal<Slot> SLOT = ThreadLocal.withInitial(() -> {
        SLOTS.removeIf(s -> !s.thread.isAlive());
        Slot s = new Slot(Thread.currentThread());
        SLOTS.add(s);
        return s;
    });

    /** {@code ferry.timeout} in nanoseconds; 0 when the watchdog is off. Read once. */
    static final long TIMEOUT_NANOS = timeoutNanos(Settings.process());
    static final boolean WATCHDOG = TIMEOUT_NANOS > 0;
    /** {@code ferry.timeout.action}: abort (default) or report (keep waiting). */
    static final boolean ABORT = !"report".equals(orDefault(FerrySettings.TIMEOUT_ACTION, Settings.process()));
    /** {@code ferry.timeout.dump}: print every thread's stack after the report line. */
    static final boolean DUMP = orDefault(FerrySettings.TIMEOUT_DUMP, Settings.process());
    /** Exit code of MPI_Abort after a timeout, as timeout(1) uses. */
    static final int TIMEOUT_EXIT_CODE = 124;

    private static volatile Thread watchdog;

    private CallTracker() {
    }

    /**
     * {@code ferry.timeout} in nanoseconds. A value not accepted leaves the watchdog off here:
     * {@link Ferry#open()} reads every setting before any call and throws the
     * {@link InvalidSettingException} for it, so no call runs under a setting that was not accepted.
     */
    static long timeoutNanos(Settings settings) {
        Double seconds = orDefault(FerrySettings.TIMEOUT, settings);
        return (long) (seconds * 1e9);
    }

    /** A watchdog setting, read in a static initializer (which must not fail): its value, or its default when not accepted (see {@link #timeoutNanos}). */
    private static <T> T orDefault(Setting<T> setting, Settings settings) {
        try {
            return settings.get(setting);
        } catch (InvalidSettingException e) {
            return setting.defaultValue();
        }
    }

    /**
     * Records that the current thread enters {@code op}; enforces the threading rules first.
     * Every successful enter is paired with {@link #exit} in a finally block.
     */
    static Slot enter(CheckedCommunicator c, ThreadLevel level, Op op, Object subject, int peer, int tag, int peer2, int tag2,
                      long count, DataType type) {
        Slot s = SLOT.get();
        if (s.depth > 0) {
            s.depth++;
            return s;
        }
        if (level != ThreadLevel.MULTIPLE) {
            checkThread(s, level, op, subject);
        }
        if (op.collective && c != null) {
            Thread other = c.claimCollective(s.thread);
            if (other != null) {
                if (s.heldSerial) {
                    s.heldSerial = false;
                    SERIAL_OWNER.setRelease((Thread) null);
                }
                throw new ThreadingException(op.label + " on " + c + " from thread \"" + s.thread.getName() + "\": thread \"" + other.getName()
                        + "\" is inside " + describeThread(other) + "; MPI forbids concurrent collectives on one communicator "
                        + "(their order could differ between ranks): give each thread its own duplicate()");
            }
            if (c.collectiveOwner() == s.thread) {
                s.claimed = c;
            }
        }
        s.depth = 1;
        s.op = op;
        s.subject = subject;
        s.peer = peer;
        s.tag = tag;
        s.peer2 = peer2;
        s.tag2 = tag2;
        s.count = count;
        s.type = type;
        long now = System.nanoTime() | 1L;
        if (FlightRecorder.ON) {
            s.flight.begin(c == null ? null : c.flight, op.label, op.collective ? CurrentCall.Kind.COLLECTIVE
                    : c != null ? CurrentCall.Kind.POINT_TO_POINT : CurrentCall.Kind.WAIT, subject, peer, tag, peer2, tag2, count, type, now);
        }
        SINCE.setRelease(s, now);
        if (WATCHDOG && watchdog == null) {
            startWatchdog();
        }
        return s;
    }

    /** Enters {@code op} without the threading rules (MPI_Finalize from a shutdown hook). */
    static Slot enterUnchecked(Op op, Object subject) {
        return enter(null, ThreadLevel.MULTIPLE, op, subject, -2, -2, -2, -2, -1, null);
    }

    static void exit(Slot s) {
        if (--s.depth > 0) {
            return;
        }
        if (FlightRecorder.ON) {
            s.flight.end();
        }
        SINCE.setRelease(s, 0L);
        s.subject = null;
        if (s.claimed != null) {
            s.claimed.releaseCollective();
            s.claimed = null;
        }
        if (s.heldSerial) {
            s.heldSerial = false;
            SERIAL_OWNER.setRelease((Thread) null);
        }
    }

    private static void checkThread(Slot s, ThreadLevel level, Op op, Object subject) {
        if (level == ThreadLevel.SERIALIZED) {
            Thread owner = (Thread) SERIAL_OWNER.compareAndExchange((Thread) null, s.thread);
            if (owner != null) {
                throw new ThreadingException(op.label + " on " + subject + " from thread \"" + s.thread.getName() + "\": thread \""
                        + owner.getName() + "\" is inside " + describeThread(owner) + ", and the MPI library provides only "
                        + level.mpiName() + " (no two threads in MPI at once): serialize the calls, or run with "
                        + "-Dferry.threads=multiple on an MPI that provides MPI_THREAD_MULTIPLE");
            }
            s.heldSerial = true;
        } else {
            Thread main = MpiLifecycle.initThread();
            if (main != null && main != s.thread) {
                throw new ThreadingException(op.label + " on " + subject + " from thread \"" + s.thread.getName() + "\": the MPI library "
                        + "provides only " + level.mpiName() + ", so only the thread that initialized MPI (\"" + main.getName()
                        + "\") may call it: hand the work to that thread, or run with -Dferry.threads=multiple on an MPI that provides "
                        + "MPI_THREAD_MULTIPLE");
            }
        }
    }

    /** What {@code t} is inside right now ("recv(source 1, tag 7, 4 x INT) on ..."), or "a Ferry call". */
    static String describeThread(Thread t) {
        for (Slot s : SLOTS) {
            if (s.thread == t) {
                String d = describe(s);
                if (d != null) return d;
            }
        }
        return "a Ferry call";
    }

    /** A consistent description of the slot's current call, or null when it is idle. */
    static String describe(Slot s) {
        for (int attempt = 0; attempt < 3; attempt++) {
            long since = s.since();
            if (since == 0) return null;
            Op op = s.op;
            Object subject = s.subject;
            int peer = s.peer, tag = s.tag, peer2 = s.peer2, tag2 = s.tag2;
            long count = s.count;
            DataType type = s.type;
            if (s.since() == since) {
                return format(op, subject, peer, tag, peer2, tag2, count, type);
            }
        }
        return "a Ferry call";
    }

    private static String rank(int r) {
        return r == Communicator.ANY_SOURCE ? "any" : Integer.toString(r);
    }

    private static String tag(int t) {
        return t == Communicator.ANY_TAG ? "any" : Integer.toString(t);
    }

    static String format(Op op, Object subject, int peer, int tag, int peer2, int tag2, long count, DataType type) {
        String n = count < 0 || type == null ? "" : ", " + count + " x " + type;
        String args = switch (op) {
            case SEND, ISEND -> "destination " + rank(peer) + ", tag " + tag(tag) + n;
            case RECV, IRECV, PROBE, IPROBE, MPROBE, IMPROBE, MESSAGE_RECV, MESSAGE_IRECV -> "source " + rank(peer) + ", tag " + tag(tag) + n;
            case SEND_RECV -> "destination " + rank(peer) + ", send tag " + tag(tag) + ", source " + rank(peer2) + ", receive tag " + tag(tag2) + n;
            case BROADCAST, SCATTER, GATHER, REDUCE -> "root " + rank(peer) + n;
            case ALL_GATHER, ALL_REDUCE, ALL_TO_ALL -> n.isEmpty() ? "" : n.substring(2);
            case SPLIT -> "color " + peer + ", key " + tag;
            default -> "";
        };
        String on = subject == null ? "" : op == Op.WAIT || op == Op.TEST || op == Op.WAIT_ANY || op == Op.CANCEL ? " of " + subject : " on " + subject;
        return op.label + "(" + args + ")" + on;
    }

    /** Calls in progress on threads other than the current one, one per line; null when there are none. */
    static String inFlightElsewhere() {
        StringBuilder sb = null;
        Thread me = Thread.currentThread();
        for (Slot s : SLOTS) {
            if (s.thread == me || !s.thread.isAlive()) continue;
            String d = describe(s);
            if (d == null) continue;
            if (sb == null) sb = new StringBuilder(); else sb.append("; ");
            sb.append("thread \"").append(s.thread.getName()).append("\" is inside ").append(d);
        }
        return sb == null ? null : sb.toString();
    }

    // ---- the watchdog ------------------------------------------------------------------------

    private static synchronized void startWatchdog() {
        if (watchdog != null) return;
        Thread t = new Thread(CallTracker::watch, "ferry-watchdog");
        t.setDaemon(true);
        t.start();
        watchdog = t;
    }

    private static void watch() {
        long period = Math.max(20_000_000L, Math.min(TIMEOUT_NANOS / 4, 1_000_000_000L));
        while (true) {
            try {
                Thread.sleep(period / 1_000_000L, (int) (period % 1_000_000L));
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Slot s : SLOTS) {
                long since = s.since();
                if (since == 0 || now - since < TIMEOUT_NANOS || s.reportedSince == since) continue;
                String what = describe(s);
                if (what == null || s.since() != since) continue;
                s.reportedSince = since;
                timedOut(s, what, now - since);
            }
        }
    }

    private static void timedOut(Slot s, String what, long waitedNanos) {
        String line = "ferry: rank " + MpiLifecycle.worldRank() + ": TIMEOUT: " + what + " in thread \"" + s.thread.getName()
                + "\" has not completed after " + String.format(Locale.ROOT, "%.1f", waitedNanos / 1e9) + " s (ferry.timeout="
                + Settings.process().text(FerrySettings.TIMEOUT) + "); "
                + (ABORT ? "aborting the MPI job (MPI_Abort, exit code " + TIMEOUT_EXIT_CODE + "): a blocking MPI call cannot be cancelled"
                         : "still waiting (ferry.timeout.action=report)");
        StringBuilder sb = new StringBuilder(line);
        if (DUMP) {
            sb.append(System.lineSeparator()).append("ferry: threads of rank ").append(MpiLifecycle.worldRank()).append(':');
            for (ThreadInfo ti : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false, 64)) {
                sb.append(System.lineSeparator()).append(ti);
            }
        }
        MpiLifecycle.reportFault(sb.toString().stripTrailing());
        FlightRecorder.dump("TIMEOUT: " + what + " in thread \"" + s.thread.getName() + "\" after " + String.format(Locale.ROOT, "%.1f", waitedNanos / 1e9)
                + " s", ABORT);
        if (ABORT) {
            MpiLifecycle.abort(TIMEOUT_EXIT_CODE);
        }
    }
}
