// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.spi.ProcessEnvironment;
import java.util.ArrayList;
import java.util.List;

/**
 * MCA settings that keep Open MPI's results correct, applied to the process environment before
 * MPI_Init (Open MPI reads {@code OMPI_MCA_*} variables there). A setting the user made is never
 * overridden.
 *
 * <ul>
 *   <li>{@code OMPI_MCA_op=^avx}: the AVX reduction kernels of Open MPI 4.1.x add 8- and 16-bit
 *       integers with saturating instructions, so MPI_SUM over MPI_UINT8_T returns 255 where
 *       the sum wraps (open-mpi/ompi#8045; seen here with Debian's 4.1.4 and 4 ranks: 94+59+24+86
 *       gave 255 instead of 7). The plain C kernels are correct and only slightly slower.</li>
 * </ul>
 */
final class KnownBugWorkarounds {
    private KnownBugWorkarounds() {
    }

    /** Applies the settings; returns a description of each one applied (for the probe report). */
    static List<String> apply() {
        List<String> applied = new ArrayList<>();
        String why = "saturating 8/16-bit sums of op/avx, open-mpi/ompi#8045";
        if (ProcessEnvironment.setIfUnset("OMPI_MCA_op", "^avx", why)) {
            applied.add("OMPI_MCA_op=^avx (" + why + ")");
        }
        ProcessEnvironment.prepareForCuda(); // before MPI_Init, where a CUDA-aware Open MPI starts the CUDA driver
        return applied;
    }
}
