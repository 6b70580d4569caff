// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import dev.ferry.reliability.ranks.LeakCycles;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link LeakCycles} per (backend, launcher) pair: thousands of open/close cycles; native memory,
 * open communicators and MPI handles must not grow.
 */
class LeakIT {
    @TestFactory
    List<DynamicNode> leaks() {
        List<DynamicNode> out = new ArrayList<>();
        for (Pair pair : Pair.selected()) {
            out.add(pair.tests(() -> pair.job("leaks", 2).classes(LeakCycles.class)
                    .property("ferry.maxPieceBytes", "4096")
                    .property("ferry.test.perTestTimeout", "300")
                    // a fixed, pre-touched heap: RSS growth is native memory
                    .jvmArgs("-Xms160m", "-Xmx160m", "-XX:+AlwaysPreTouch")));
        }
        return out;
    }
}
