// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
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
        if (System.getenv("OMPI_MCA_op") == null && setenv("OMPI_MCA_op", "^avx")) {
            applied.add("OMPI_MCA_op=^avx (saturating 8/16-bit sums of op/avx, open-mpi/ompi#8045)");
        }
        return applied;
    }

    /** libc setenv(name, value, 0); false when it cannot be called. */
    private static boolean setenv(String name, String value) {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MemorySegment n = arena.allocateFrom(name);
            MemorySegment v = arena.allocateFrom(value);
            return (int) setenv.invokeExact(n, v, 0) == 0;
        } catch (Throwable e) {
            return false;
        }
    }
}
