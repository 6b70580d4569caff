// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * What a test run requires: {@code FERRY_TEST_REQUIRE} (or {@code -Dferry.test.require}), a
 * comma-separated list of backend names and {@code cuda}. A test that needs something missing is
 * skipped with the reason, unless the run requires it: then it fails with that reason, so that a
 * backend or a GPU that should be there and is not never turns into a green run of skips.
 * {@code .ci/run} requires what CI installs, {@code scripts/device-run.sh} adds {@code cuda}.
 */
public final class Required {
    private Required() {
    }

    /** The required names, lower case. */
    public static Set<String> names() {
        String v = System.getProperty("ferry.test.require");
        if (v == null || v.isBlank()) v = System.getenv("FERRY_TEST_REQUIRE");
        if (v == null || v.isBlank()) return Set.of();
        return Arrays.stream(v.split(",")).map(s -> s.trim().toLowerCase(Locale.ROOT)).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    }

    /** True when {@code name} (a backend, or "cuda") is required. */
    public static boolean isRequired(String name) {
        return names().contains(name.toLowerCase(Locale.ROOT));
    }

    /**
     * Continues when {@code available}; otherwise skips the test with {@code why}, or fails it when
     * {@code name} is required.
     */
    public static void assume(String name, boolean available, Supplier<String> why) {
        if (available) return;
        if (isRequired(name)) {
            Assertions.fail(name + " is required here (FERRY_TEST_REQUIRE=" + String.join(",", names()) + ") but unavailable: " + why.get());
        }
        Assumptions.assumeTrue(false, why);
    }
}
