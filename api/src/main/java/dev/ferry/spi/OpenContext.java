// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/** What a provider may use while opening a communicator. */
public interface OpenContext extends ProbeContext {
    /** This provider's own probe result (available). */
    Probe self();

    /** Opens the world transport of another provider (decorators wrap one and call its primitives). */
    Transport open(String provider);
}
