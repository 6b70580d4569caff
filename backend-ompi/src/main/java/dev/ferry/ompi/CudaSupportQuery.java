// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.mpi.Mpi;

/**
 * Asks the loaded Open MPI whether it carries CUDA device memory: {@code int MPIX_Query_cuda_support(void)}
 * through the shared java.lang.foreign binding ({@link Mpi}), on the very libmpi the process uses
 * (on the mpi.jar path the one libmpi_java loaded, found in /proc/self/maps). Open MPI 5 answers
 * only after MPI_Init (its accelerator framework is selected there), so this is called after
 * initialization.
 */
final class CudaSupportQuery {
    /** The answer and how it was obtained, for the probe report. */
    record Answer(boolean cudaAware, String explanation) {
    }

    private CudaSupportQuery() {
    }

    static Answer ask() {
        try {
            if (Mpi.unavailabilityCause() != null) {
                return new Answer(false, "MPIX_Query_cuda_support could not be called: " + Mpi.unavailabilityCause().getMessage());
            }
            if (!Mpi.hasQueryCudaSupport()) {
                return new Answer(false, "MPIX_Query_cuda_support is not exported (Open MPI built without the cuda extension)");
            }
            int v = Mpi.queryCudaSupport();
            return new Answer(v != 0, "MPIX_Query_cuda_support() = " + v);
        } catch (RuntimeException | LinkageError e) {
            return new Answer(false, "MPIX_Query_cuda_support could not be called: " + e);
        }
    }
}
