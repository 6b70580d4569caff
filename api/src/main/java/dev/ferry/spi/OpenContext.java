package dev.ferry.spi;

import dev.ferry.Communicator;

/** What a provider may use while opening a communicator. */
public interface OpenContext extends ProbeContext {
    /** This provider's own probe result (available). */
    Probe self();

    /** Opens a world communicator of another provider (decorators wrap one). */
    Communicator open(String provider);
}
