// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.spi.ProcessEnvironment;
import java.util.ArrayList;
import java.util.List;

/**
 * What backend ompi does about Open MPI bugs that would give wrong results.
 *
 * <ul>
 *   <li>The AVX reduction kernels of Open MPI 4.1.x ({@code op/avx}) add 8- and 16-bit integers
 *       with saturating instructions, so MPI_SUM over MPI_UINT8_T returns 255 where the sum wraps
 *       (open-mpi/ompi#8045, closed as won't fix; seen here with Debian's 4.1.4 and 4 ranks:
 *       94+59+24+86 gave 255 instead of 7). Ferry never hands Open MPI a sum or product of BYTE or
 *       SHORT ({@link #libraryReduces}): the collectives planner folds those itself, with the
 *       wrapping arithmetic of {@code HostReduction}. The kernels stay on for every other type:
 *       turning the component off ({@code OMPI_MCA_op=^avx}) makes Open MPI's
 *       allReduce of doubles 1.1 to 1.25 × slower from 64 KiB to 1 MiB on 2 ranks
 *       (bench/results/2026-11-28-cpu-host-targets.md).</li>
 * </ul>
 */
final class KnownBugWorkarounds {
    private KnownBugWorkarounds() {
    }

    /** What Ferry does instead of asking Open MPI, for the probe report. */
    static final String SMALL_INTEGER_REDUCTIONS = "SUM and PROD of BYTE and SHORT folded by Ferry, not Open MPI "
            + "(saturating 8/16-bit sums of op/avx, open-mpi/ompi#8045)";

    /** Prepares the process environment before MPI_Init; returns a description of each workaround in force (for the probe report). */
    static List<String> apply() {
        List<String> applied = new ArrayList<>();
        applied.add(SMALL_INTEGER_REDUCTIONS);
        ProcessEnvironment.prepareForCuda(); // before MPI_Init, where a CUDA-aware Open MPI starts the CUDA driver
        return applied;
    }

    /** False for the reductions Open MPI may get wrong: SUM and PROD of the 8- and 16-bit integer types. */
    static boolean libraryReduces(DataType type, ReduceOp op) {
        boolean small = type == DataType.BYTE || type == DataType.SHORT;
        return !(small && (op == ReduceOp.SUM || op == ReduceOp.PROD));
    }
}
