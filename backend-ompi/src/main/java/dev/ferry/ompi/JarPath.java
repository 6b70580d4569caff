// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Communicator;
import java.util.Map;

/**
 * Backend ompi's mpi.jar path as seen by the provider, reached only by class name
 * ({@link #load()}), so that the provider (and the FFM path) neither needs nor touches mpi.jar:
 * this module builds without it (Maven profile {@code no-mpi-jar}) and runs without it.
 */
interface JarPath {
    /** What the probe reports after MPI was initialized through mpi.jar. */
    record Started(String version, CudaSupportQuery.Answer cuda, Map<String, String> details) {
    }

    /** Initializes MPI through mpi.jar (once); throws FerryException with the cause when that fails. */
    Started start();

    /** A duplicate of MPI_COMM_WORLD as a Ferry communicator. */
    dev.ferry.spi.Transport openWorld();

    /** The implementation, or a LinkageError/ReflectiveOperationException when it is not built or mpi.jar is absent. */
    static JarPath load() throws ReflectiveOperationException {
        return (JarPath) Class.forName("dev.ferry.ompi.MpiJarPath").getDeclaredConstructor().newInstance();
    }
}
