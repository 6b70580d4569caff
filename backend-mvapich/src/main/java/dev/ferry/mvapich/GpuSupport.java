// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.mpi.Mpi;
import dev.ferry.mpi.MpichConstants;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Does the loaded library carry CUDA device memory? Asked after MPI_Init (MPICH selects its GPU
 * layer there):
 * <ul>
 *   <li>MPICH &ge; 4.0 (and libraries built on it): {@code MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes)}
 *       and {@code MPIX_Query_cuda_support()}, where exported; the library's answer wins;</li>
 *   <li>MVAPICH2 / MVAPICH2-GDR, which export neither: a CUDA build (GDR in the version string, or
 *       {@code --enable-cuda} in its configure line) with {@code MV2_USE_CUDA=1} in the environment;</li>
 *   <li>anything else: no.</li>
 * </ul>
 */
final class GpuSupport {
    /** The answer and how it was reached, for the probe report and the exception messages. */
    record Answer(boolean cudaAware, String explanation) {
    }

    private GpuSupport() {
    }

    static Answer ask(LibraryVersion version, Map<String, String> env) {
        List<String> facts = new ArrayList<>();
        Boolean library = null;
        if (Mpi.hasGpuQuerySupport()) {
            MemorySegment yes = Mpi.scratch().int0;
            yes.set(JAVA_INT, 0, 0);
            int rc = Mpi.gpuQuerySupport(MpichConstants.MPIX_GPU_SUPPORT_CUDA, yes);
            if (rc == MpichConstants.MPI_SUCCESS) {
                int v = Mpi.scratch().int0();
                facts.add("MPIX_GPU_query_support(CUDA) = " + v);
                library = v != 0;
            } else {
                facts.add("MPIX_GPU_query_support(CUDA) failed with error " + rc);
            }
        }
        if (Mpi.hasQueryCudaSupport()) {
            int v = Mpi.queryCudaSupport();
            facts.add("MPIX_Query_cuda_support() = " + v);
            library = (library != null && library) || v != 0;
        }
        if (!Mpi.hasGpuQuerySupport() && !Mpi.hasQueryCudaSupport()) {
            facts.add("the library exports neither MPIX_GPU_query_support nor MPIX_Query_cuda_support");
        }
        boolean aware;
        if (version.flavor().isMvapich()) {
            String useCuda = env.get("MV2_USE_CUDA");
            boolean on = "1".equals(useCuda == null ? null : useCuda.trim());
            if (!version.cudaBuild()) {
                facts.add(version.name() + " is not a CUDA build (no GDR in its version, no --enable-cuda in its configure line)");
            } else {
                facts.add(on ? "MV2_USE_CUDA=1" : "MV2_USE_CUDA is " + (useCuda == null ? "unset" : "'" + useCuda + "'")
                        + " (launch with MV2_USE_CUDA=1 to let " + version.flavor().label() + " take device memory)");
            }
            aware = library != null ? library : version.cudaBuild() && on;
        } else {
            aware = library != null && library;
        }
        return new Answer(aware, String.join("; ", facts));
    }
}
