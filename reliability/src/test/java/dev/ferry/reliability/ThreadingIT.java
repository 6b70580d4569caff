// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import dev.ferry.reliability.ranks.ThreadingContract;
import dev.ferry.reliability.ranks.WaitTimeouts;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link ThreadingContract} per (backend, launcher) pair, at each thread level Ferry can ask for:
 * MULTIPLE (threads sharing a communicator, collectives on per-thread duplicates, overlapping
 * collectives refused), SERIALIZED and FUNNELED (refusals instead of undefined behaviour).
 * The MULTIPLE job also runs {@link WaitTimeouts} (Request.waitFor with a timeout).
 */
class ThreadingIT {
    @TestFactory
    List<DynamicNode> threads() {
        List<DynamicNode> out = new ArrayList<>();
        for (String level : List.of("MULTIPLE", "SERIALIZED", "FUNNELED")) {
            List<DynamicNode> pairs = new ArrayList<>();
            for (Pair pair : Pair.selected()) {
                Class<?>[] classes = level.equals("MULTIPLE") ? new Class<?>[] {ThreadingContract.class, WaitTimeouts.class} : new Class<?>[] {ThreadingContract.class};
                pairs.add(pair.tests(() -> pair.job("threads-" + level.toLowerCase(java.util.Locale.ROOT), 2).classes(classes)
                        .property("ferry.threads", level.toLowerCase(java.util.Locale.ROOT))
                        .property("ferry.test.expectThreads", level)
                        .property("ferry.timeout", "120")));
            }
            out.add(DynamicContainer.dynamicContainer(level, pairs));
        }
        return out;
    }
}
