// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.Ferry;
import dev.ferry.ThreadLevel;
import dev.ferry.flight.FlightRecorder;

/**
 * The end of an MPI process, done the same way by every binding: MPI_Finalize at JVM exit (or at
 * {@code Ferry.shutdown()}), except after an uncaught exception, when the job is aborted instead.
 *
 * <p>Why abort: a rank that dies with an exception while its peers wait in a receive or a
 * collective would otherwise leave them waiting forever, and MPI_Finalize itself would wait for
 * them. MPI_Abort ends the whole job at once with the rank's message.
 *
 * <p>Exit in the middle of the work: when the JVM exits (System.exit, a signal from the launcher)
 * while another thread is inside a Ferry call, or while the thread that initialized MPI (a
 * non-daemon thread, such as main) is still running and is not the one that called System.exit, MPI_Finalize is not called, because it
 * would wait for the other ranks while they wait for this one: the process ends without it, and
 * the launcher ends the job and names the rank. A program that ends by returning from main, or by
 * System.exit on the thread that initialized MPI, finalizes. With {@code ferry.timeout} set, MPI_Finalize
 * itself is watched like any blocking call.
 *
 * <p>Reports of these fault paths ({@link #reportFault}) go to the {@link System.Logger} of this class
 * at {@code ERROR} (by default, with {@code java.util.logging}, to stderr) while the JVM runs, and
 * straight to stderr once it is exiting.
 */
public final class MpiLifecycle {
    /** What a binding must provide. */
    public interface Binding {
        /** Name for messages, e.g. "Open MPI 4.1.4". */
        String name();

        /** World rank, for messages. */
        int worldRank();

        /** MPI_Finalize, once. */
        void finalizeMpi();

        /** MPI_Abort(MPI_COMM_WORLD, code). */
        void abort(int code);

        /** The thread level MPI_Init_thread provided. */
        default ThreadLevel threadLevel() {
            return ThreadLevel.MULTIPLE;
        }
    }

    private static volatile Binding binding;
    private static volatile boolean aborting;
    private static volatile boolean finalized;
    private static volatile ThreadLevel threadLevel = ThreadLevel.MULTIPLE;
    private static volatile Thread initThread;
    /** Set when the JVM's shutdown began (this class's hook runs): fault reports bypass the logger from then on. */
    private static volatile boolean exiting;
    private static final System.Logger LOG = System.getLogger(MpiLifecycle.class.getName());
    private static final java.util.List<Runnable> BEFORE_FINALIZE = new java.util.concurrent.CopyOnWriteArrayList<>();

    private MpiLifecycle() {
    }

    /** Registers the process's MPI (once MPI_Init succeeded): finalize at exit, abort on uncaught exceptions. */
    public static synchronized void register(Binding b) {
        if (binding != null) {
            throw new IllegalStateException("MPI already initialized by " + binding.name() + "; cannot also use " + b.name());
        }
        binding = b;
        threadLevel = b.threadLevel();
        initThread = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(MpiLifecycle::finalizeAtExit, "ferry-mpi-finalize"));
        if (Settings.process().get(FerrySettings.ABORT_ON_UNCAUGHT)) {
            Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
            Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
                Binding aborts = claimAbort(t, e); // the reason first: a launcher may cut the trace short
                if (previous != null) {
                    previous.uncaughtException(t, e);
                } else {
                    // what the JVM's own handler, which this one replaces, prints
                    System.err.print("Exception in thread \"" + t.getName() + "\" ");
                    e.printStackTrace();
                }
                if (aborts != null) {
                    abortJob(aborts, t, e);
                }
            });
        }
    }

    /** The thread level of the registered MPI; MULTIPLE when none is registered (the application owns MPI). */
    public static ThreadLevel threadLevel() {
        return threadLevel;
    }

    /** The thread that initialized MPI (that registered it), or null. */
    public static Thread initThread() {
        return initThread;
    }

    /** World rank for messages, or -1 before MPI is registered. */
    public static int worldRank() {
        Binding b = binding;
        return b == null ? -1 : b.worldRank();
    }

    /**
     * Ends the whole job now with exit code {@code code} (MPI_Abort on MPI_COMM_WORLD), after the
     * caller printed why. Without a registered MPI the process halts. Does not return; if
     * MPI_Abort itself has not ended the process within 10 s, the process halts.
     */
    public static void abort(int code) {
        // no lock: a stuck MPI_Finalize holds this class's monitor
        Binding b = finalized ? null : binding;
        aborting = true;
        Thread backstop = new Thread(() -> {
            try {
                Thread.sleep(10_000);
            } catch (InterruptedException e) {
                return;
            }
            reportFault("ferry: MPI_Abort did not end this process within 10 s: halting it");
            Runtime.getRuntime().halt(code);
        }, "ferry-abort-backstop");
        backstop.setDaemon(true);
        backstop.start();
        if (b != null) {
            b.abort(code);
        }
        Runtime.getRuntime().halt(code);
    }

    /** The binding to abort after an uncaught exception, having printed why; null when this process does not abort (no MPI, finalized, already aborting). */
    private static Binding claimAbort(Thread t, Throwable e) {
        Binding b;
        synchronized (MpiLifecycle.class) {
            b = binding;
            if (b == null || finalized || aborting) {
                return null;
            }
            aborting = true;
        }
        reportFault("ferry: rank " + b.worldRank() + ": uncaught " + e.getClass().getName() + " in thread \"" + t.getName()
                + "\"; aborting the MPI job so that the other ranks do not wait for this one (-Dferry.abortOnUncaught=false to keep running)");
        return b;
    }

    /** How long the output gets to reach the launcher before MPI_Abort tears the job down. */
    private static final long FORWARD_OUTPUT_MILLIS = 200;

    private static void abortJob(Binding b, Thread t, Throwable e) {
        System.out.flush();
        System.err.flush();
        FlightRecorder.dump("uncaught " + e + " in thread \"" + t.getName() + "\"", true);
        try {
            // MPI_Abort makes the launcher kill every rank; output still in its pipes from this rank
            // (the stack trace) was seen lost under MPICH's Hydra, so give it a moment to be forwarded
            Thread.sleep(FORWARD_OUTPUT_MILLIS);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
        b.abort(1);
    }

    /**
     * What the thread that initialized MPI is doing when the JVM exits while that (non-daemon) thread
     * still runs and is not the one exiting (System.exit from another thread, or a signal): the program is in
     * the middle of its work, between two Ferry calls, and its peers may already wait in the next
     * one. Null when that thread has ended (main returned) or is the one calling System.exit.
     */
    private static String midProgram() {
        Thread t = initThread;
        if (t == null || !t.isAlive() || t.isDaemon() || t == Thread.currentThread()) {
            // a daemon thread (a pool's worker that opened Ferry) does not keep the JVM alive: idle, not mid-work
            return null;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if ((e.getClassName().equals("java.lang.Shutdown") || e.getClassName().equals("java.lang.Runtime"))
                    && (e.getMethodName().equals("exit") || e.getMethodName().equals("halt"))) {
                return null; // it is the thread that asked the JVM to exit: its work is done
            }
        }
        return "thread \"" + t.getName() + "\", which initialized MPI, is still running (between Ferry calls)";
    }

    /** The registered binding's name, or null when MPI was not initialized in this process. */
    public static synchronized String initializedBy() {
        return binding == null ? null : binding.name();
    }

    /** True once MPI_Finalize ran (or started). */
    public static boolean isFinalized() {
        return finalized;
    }

    /**
     * Registers what a thread of Ferry's that calls MPI on its own (a progress thread) does before
     * MPI_Finalize: return once its MPI call in flight, if any, has ended. It runs after
     * {@link #isFinalized()} turned true, and such a thread checks that before each call, so that
     * none is inside MPI while the library shuts down. Register once per class, not per object.
     */
    public static void beforeFinalize(Runnable quiesce) {
        BEFORE_FINALIZE.add(quiesce);
    }

    /** MPI_Finalize now, if it has not run. Watched by {@code ferry.timeout} like any blocking call. */
    public static synchronized void finalizeNow() {
        if (binding != null && !finalized && !aborting) {
            finalized = true;
            for (Runnable quiesce : BEFORE_FINALIZE) {
                quiesce.run(); // Ferry's threads that call MPI on their own end their call in flight; the flag stops the next
            }
            CallTracker.Slot s = CallTracker.enterUnchecked(CallTracker.Op.FINALIZE, binding.name());
            try {
                binding.finalizeMpi();
            } finally {
                CallTracker.exit(s);
            }
        }
    }

    private static void finalizeAtExit() {
        exiting = true;
        String busy = CallTracker.inFlightElsewhere();
        if (busy == null) {
            busy = midProgram();
        }
        if (busy != null && binding != null && !finalized && !aborting) {
            reportFault("ferry: rank " + worldRank() + ": the JVM is exiting while " + busy + "; not calling MPI_Finalize, which "
                    + "would wait for ranks that wait for this one: the launcher ends the job");
            FlightRecorder.dumpAtExit("exiting while " + busy);
            return;
        }
        try {
            finalizeNow();
        } catch (RuntimeException | Error e) {
            reportFault("ferry: MPI_Finalize at exit failed: " + e);
        }
    }

    /**
     * Reports a fault of the process (a line, or lines such as a thread dump): at {@code ERROR} to
     * this class's {@link System.Logger}; once the JVM is exiting, straight to stderr instead,
     * because the platform's logging closes its handlers in a shutdown hook of its own that runs
     * beside this one, and the report would be lost (it was, in two of three exits tried). Flushed
     * either way: MPI_Abort or the launcher may end the process right after. Public for Ferry's
     * other fault paths (the flight recorder's dumps and hang reports).
     */
    public static void reportFault(String text) {
        if (exiting) {
            System.err.println(text);
        } else {
            LOG.log(System.Logger.Level.ERROR, text);
        }
        System.err.flush();
    }
}
