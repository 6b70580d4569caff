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
}
