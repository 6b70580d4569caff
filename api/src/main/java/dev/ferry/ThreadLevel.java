package dev.ferry;

import java.util.Locale;

/**
 * How much concurrency the MPI library was initialized for (MPI's {@code MPI_THREAD_*} levels),
 * and therefore how Ferry lets threads use communicators (see {@link Communicator#threadLevel()}).
 *
 * <p>Ferry asks for {@link #MULTIPLE} unless {@code -Dferry.threads=serialized|funneled|single}
 * (environment {@code FERRY_THREADS}) asks for less; the library may provide less than asked.
 */
public enum ThreadLevel {
    /** Only one thread calls MPI, and it is the one that initialized it. Ferry treats it as {@link #FUNNELED}. */
    SINGLE,
    /** Only the thread that initialized MPI (the one that first opened Ferry) may call it. */
    FUNNELED,
    /** Any thread may call MPI, but never two at once. */
    SERIALIZED,
    /** Any thread may call MPI at any time. */
    MULTIPLE;

    /** MPI's name: {@code MPI_THREAD_MULTIPLE}. */
    public String mpiName() {
        return "MPI_THREAD_" + name();
    }

    /** The level to ask MPI_Init_thread for: {@code ferry.threads} (default {@code multiple}). */
    public static ThreadLevel requested() {
        String v = Ferry.setting("ferry.threads", "multiple").toUpperCase(Locale.ROOT);
        if (v.startsWith("MPI_THREAD_")) {
            v = v.substring("MPI_THREAD_".length());
        }
        try {
            return valueOf(v);
        } catch (IllegalArgumentException e) {
            throw new InvalidArgumentException("ferry.threads='" + Ferry.setting("ferry.threads", "") + "' is not one of multiple, serialized, funneled, single");
        }
    }
}
