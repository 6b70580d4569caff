// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.LoadedLibraries;
import dev.ferry.spi.Probe;
import java.lang.foreign.ValueLayout;

/**
 * One rank program, unchanged under any launcher: opens Ferry with {@code ferry.backend=auto},
 * sums the ranks, and prints one line per rank for {@link SameProgramUnderBothLaunchersIT}:
 * {@code same-program rank=R size=S backend=B sum=X libmpich=yes|no libmpi40=yes|no mvapich=...|ompi=...}.
 */
public final class SameProgram {
    private SameProgram() {
    }

    public static void main(String[] args) {
        try (Communicator world = Ferry.open(); HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, world.rank() + 1);
            world.allReduce(in, out, 1, DataType.INT, ReduceOp.SUM);
            StringBuilder sb = new StringBuilder("same-program rank=" + world.rank() + " size=" + world.size() + " backend=" + world.backend()
                    + " sum=" + out.segment().get(ValueLayout.JAVA_INT, 0)
                    + " libmpich=" + (LoadedLibraries.find("libmpich.so").isPresent() || LoadedLibraries.find("libmpi.so.12").isPresent() ? "yes" : "no")
                    + " libmpi40=" + (LoadedLibraries.find("libmpi.so.40").isPresent() ? "yes" : "no"));
            for (Probe p : Ferry.lastReport().probes()) {
                sb.append(" | ").append(p.provider()).append('=').append(p.isAvailable() ? "available" : "unavailable: " + p.reason());
            }
            world.barrier();
            System.out.println(sb);
        }
    }
}
