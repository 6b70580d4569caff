// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;


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
        return Settings.process().get(FerrySettings.THREADS);
    }
}
