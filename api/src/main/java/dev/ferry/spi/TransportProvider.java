// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/**
 * A transport backend, found with {@link java.util.ServiceLoader}: register the implementation in
 * {@code META-INF/services/dev.ferry.spi.TransportProvider}.
 *
 * <p>{@link #probe} must never crash the JVM and must never load an MPI library of a family other
 * than the launcher's (see {@link Launch}); it may initialize the launcher's own MPI when
 * that is the only way to ask (CUDA support, e.g.).
 */
public interface TransportProvider {
    /** Short name used by {@code -Dferry.backend}: {@code ompi}, {@code mvapich}, {@code staged}. */
    String name();

    /**
     * Names of the providers this one builds on (decorators): the only names its probe and open may
     * pass to {@link ProbeContext#probe} and {@link OpenContext#open}; they are probed first.
     */
    default java.util.List<String> dependsOn() {
        return java.util.List.of();
    }

    /** Can this backend run in this process, and with what capabilities? */
    Probe probe(ProbeContext context);

    /**
     * The transport over all ranks of the job (a duplicate of MPI_COMM_WORLD), which Ferry puts
     * under its checked front ({@link CheckedCommunicator}). Only called after an available probe.
     */
    Transport open(OpenContext context);

    /** Releases process-wide resources (MPI_Finalize); called once at exit or by {@code Ferry.shutdown()}. */
    default void shutdown() {
    }
}
