package dev.ferry.spi;

import dev.ferry.Ferry;

/**
 * The end of an MPI process, done the same way by every binding: MPI_Finalize at JVM exit (or at
 * {@code Ferry.shutdown()}), except after an uncaught exception, when the job is aborted instead.
 *
 * <p>Why abort: a rank that dies with an exception while its peers wait in a receive or a
 * collective would otherwise leave them waiting forever, and MPI_Finalize itself would wait for
 * them. MPI_Abort ends the whole job at once with the rank's message.
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
    }

    private static Binding binding;
    private static volatile boolean aborting;
    private static boolean finalized;

    private MpiLifecycle() {
    }

    /** Registers the process's MPI (once MPI_Init succeeded): finalize at exit, abort on uncaught exceptions. */
    public static synchronized void register(Binding b) {
        if (binding != null) {
            throw new IllegalStateException("MPI already initialized by " + binding.name() + "; cannot also use " + b.name());
        }
        binding = b;
        Runtime.getRuntime().addShutdownHook(new Thread(MpiLifecycle::finalizeAtExit, "ferry-mpi-finalize"));
        if (Boolean.parseBoolean(Ferry.setting("ferry.abortOnUncaught", "true"))) {
            Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
            Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
                if (previous != null) {
                    previous.uncaughtException(t, e);
                } else {
                    System.err.print("Exception in thread \"" + t.getName() + "\" ");
                    e.printStackTrace();
                }
                abortJob(t, e);
            });
        }
    }

    private static void abortJob(Thread t, Throwable e) {
        Binding b;
        synchronized (MpiLifecycle.class) {
            b = binding;
            if (b == null || finalized || aborting) {
                return;
            }
            aborting = true;
        }
        System.err.println("ferry: rank " + b.worldRank() + ": uncaught " + e.getClass().getName() + " in thread \"" + t.getName()
                + "\"; aborting the MPI job so that the other ranks do not wait for this one (-Dferry.abortOnUncaught=false to keep running)");
        System.err.flush();
        b.abort(1);
    }

    /** The registered binding's name, or null when MPI was not initialized in this process. */
    public static synchronized String initializedBy() {
        return binding == null ? null : binding.name();
    }

    /** True once MPI_Finalize ran. */
    public static synchronized boolean isFinalized() {
        return finalized;
    }

    /** MPI_Finalize now, if it has not run. */
    public static synchronized void finalizeNow() {
        if (binding != null && !finalized && !aborting) {
            finalized = true;
            binding.finalizeMpi();
        }
    }

    private static void finalizeAtExit() {
        try {
            finalizeNow();
        } catch (RuntimeException | Error e) {
            System.err.println("ferry: MPI_Finalize at exit failed: " + e);
        }
    }
}
