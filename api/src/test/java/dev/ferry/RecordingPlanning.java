// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.spi.CollectivePlanning;
import dev.ferry.spi.ForwardingTransport;
import dev.ferry.spi.Transport;
import java.util.ArrayList;
import java.util.List;

/** A collectives planner for {@link BackendSelectionTest} (set on the selection, not found by ServiceLoader: test jars lie on GPU runs' class path): wraps and records what it wrapped. */
public final class RecordingPlanning implements CollectivePlanning {
    /** The backends planned so far. */
    static final List<String> PLANNED = new ArrayList<>();

    /** The wrapper's type, so that a test can tell a planned transport. */
    static final class Planned extends ForwardingTransport {
        Planned(Transport inner) {
            super(inner);
        }
    }

    @Override
    public Transport plan(Transport world, Settings settings) {
        PLANNED.add(world.backend());
        return new Planned(world);
    }
}
