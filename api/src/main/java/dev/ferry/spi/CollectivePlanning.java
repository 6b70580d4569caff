// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Settings;

/**
 * The collectives planner, found with {@link java.util.ServiceLoader} ({@code ferry-collectives}
 * provides it): it takes the world transport a backend opened and returns one whose collectives it
 * plans, each call on the algorithm its cost tables time fastest. Without one on the class path,
 * collectives are the backend's own.
 */
public interface CollectivePlanning {
    /**
     * {@code world} with planned collectives, taking ownership (closing it when this fails).
     * Collective over {@code world}: every rank calls it.
     */
    Transport plan(Transport world, Settings settings);

    /**
     * {@code world} with planned collectives by the first planner on the class path of
     * {@code loader}, or {@code world} itself when there is none: what a backend's {@code wrap} of a
     * foreign MPI communicator uses, so that wrapped communicators plan as opened ones do.
     */
    static Transport planned(Transport world, Settings settings, ClassLoader loader) {
        for (CollectivePlanning p : java.util.ServiceLoader.load(CollectivePlanning.class, loader)) {
            return p.plan(world, settings);
        }
        return world;
    }

    /** How the collectives of {@code c} run, one line per collective at a ladder of sizes (for {@code ferry doctor}); empty when it has no planner. */
    default java.util.List<String> describe(dev.ferry.Communicator c) {
        return java.util.List.of();
    }

    /** The measured cost tables the planner has, one line each (for {@code ferry doctor}). */
    default java.util.List<String> describeTables() {
        return java.util.List.of();
    }
}
