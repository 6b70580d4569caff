// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.FerryException;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The answer of a {@link TransportProvider} to "can you run here?": available or not, the reason
 * in one human line, the underlying exception, the capabilities as separate yes/no questions, a
 * priority for auto-selection and details (library path, version, CUDA support) for the report.
 */
public final class Probe {
    private final String provider;
    private final boolean available;
    private final String reason;
    private final Throwable cause;
    private final Set<Capability> capabilities;
    private final int priority;
    private final Map<String, String> details;

    private Probe(String provider, boolean available, String reason, Throwable cause,
                  Set<Capability> capabilities, int priority, Map<String, String> details) {
        this.provider = Objects.requireNonNull(provider);
        this.available = available;
        this.reason = Objects.requireNonNull(reason);
        this.cause = cause;
        this.capabilities = Collections.unmodifiableSet(capabilities.isEmpty() ? EnumSet.noneOf(Capability.class) : EnumSet.copyOf(capabilities));
        this.priority = priority;
        this.details = Collections.unmodifiableMap(new LinkedHashMap<>(details));
    }

    /** A provider that can run, with its capabilities and priority. */
    public static Probe available(String provider, int priority, Set<Capability> capabilities, String reason, Map<String, String> details) {
        return new Probe(provider, true, reason, null, capabilities, priority, details);
    }

    /** A provider that cannot run here, and why. */
    public static Probe unavailable(String provider, String reason, Throwable cause) {
        return unavailable(provider, reason, cause, Map.of());
    }

    /** A provider that cannot run here, why, and what it found on the way. */
    public static Probe unavailable(String provider, String reason, Throwable cause, Map<String, String> details) {
        return new Probe(provider, false, reason, cause, EnumSet.noneOf(Capability.class), Integer.MIN_VALUE, details);
    }

    public String provider() {
        return provider;
    }

    public boolean isAvailable() {
        return available;
    }

    /** One line: what was found, or why the provider cannot run. */
    public String reason() {
        return reason;
    }

    /** The exception behind unavailability, or null. */
    public Throwable unavailabilityCause() {
        return cause;
    }

    /** Throws with the reason and cause when unavailable. */
    public void ensureAvailable() {
        if (!available) {
            throw new FerryException("backend " + provider + " is unavailable: " + reason, cause);
        }
    }

    public Set<Capability> capabilities() {
        return capabilities;
    }

    public boolean has(Capability c) {
        return capabilities.contains(c);
    }

    /** Higher wins in auto-selection; meaningless when unavailable. */
    public int priority() {
        return priority;
    }

    /** Facts for the report, in insertion order (e.g. "library" -> path, "cuda" -> "yes"). */
    public Map<String, String> details() {
        return details;
    }

    @Override
    public String toString() {
        return provider + (available ? " available (priority " + priority + ", " + capabilities + "): " : " unavailable: ") + reason;
    }
}
