// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.lang.foreign.ValueLayout;

/** The world communicator of a rank running tests under {@link RankRunner}. */
public final class TestWorld {
    private static Communicator world;

    private TestWorld() {
    }

    static void set(Communicator c) {
        world = c;
    }

    /** The world communicator opened by the runner (fails outside a rank job). */
    public static Communicator world() {
        if (world == null) {
            throw new IllegalStateException("not running under RankRunner: launch the suite with mpirun (see MpiJob)");
        }
        return world;
    }

    /** True on every rank iff {@code mine} is true on every rank (an allReduce MIN). */
    public static boolean allAgree(Communicator c, boolean mine) {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
            c.allReduce(in, out, 1, DataType.INT, ReduceOp.MIN);
            return out.segment().get(ValueLayout.JAVA_INT, 0) == 1;
        }
    }
}
