// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Settings;
import dev.ferry.spi.CollectivePlanning;
import dev.ferry.spi.Transport;

/** Puts the {@link Planner} over every backend's world transport ({@link PlannedTransport}). */
public final class Planning implements CollectivePlanning {
    /** For {@link java.util.ServiceLoader}. */
    public Planning() {
    }

    @Override
    public Transport plan(Transport world, Settings settings) {
        return new PlannedTransport(world, settings);
    }

    /** The ladder of sizes {@code ferry doctor} shows: 8 B to 256 MiB, by factors of 8 and the 1 GiB mark. */
    static final long[] LADDER = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20, 128 << 20, 256 << 20};

    @Override
    public java.util.List<String> describe(dev.ferry.Communicator c) {
        java.util.List<String> out = new java.util.ArrayList<>();
        Planner p = CollectivesDiagnostics.planner(c);
        out.add("algorithms: " + p.names());
        out.addAll(p.describe(LADDER, dev.ferry.DataType.FLOAT));
        return out;
    }

    @Override
    public java.util.List<String> describeTables() {
        CostTable t = PlannedTransport.builtIn();
        java.util.List<String> out = new java.util.ArrayList<>();
        for (CostTable.Setting s : t.settings()) {
            out.add(s + " (" + t.origin(s) + ")");
        }
        if (out.isEmpty()) out.add("none: every choice by preference");
        return out;
    }
}
