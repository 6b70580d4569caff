// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/** What a provider may ask while probing. */
public interface ProbeContext {
    /** How this process was launched. */
    Launch launch();

    /** The probe of another provider (memoized): decorators such as staged ask for their inner backend. */
    Probe probe(String provider);

    /**
     * The settings (the process's, read once: system property, else environment variable, else
     * default); a provider reads its settings here, never from system properties itself.
     */
    dev.ferry.Settings settings();
}
