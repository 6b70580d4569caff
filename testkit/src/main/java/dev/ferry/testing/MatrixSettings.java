// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import net.jqwik.api.AfterFailureMode;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.GenerationMode;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * Makes a jqwik property safe to run in lockstep on every rank of an MPI job, and accountable:
 * <ul>
 *   <li>the seed comes from {@code -Dferry.test.seed} (default {@value #DEFAULT_SEED}), the same on
 *       every rank, so that cases that reach MPI are generated identically everywhere;</li>
 *   <li>tries are the annotation's, times {@code -Dferry.test.matrix.scale} (default 1);</li>
 *   <li>no shrinking and no replay of earlier failures (a rank that re-ran a case alone would leave
 *       its peers waiting), randomized generation with edge cases mixed in;</li>
 *   <li>the number of cases tried is printed and must reach the number asked for: a property
 *       that stopped early or generated too little fails even if no case failed.</li>
 * </ul>
 */
public final class MatrixSettings implements AroundPropertyHook {
    /** The seed when {@code ferry.test.seed} is not given. */
    public static final String DEFAULT_SEED = "20261123";

    /** The seed every rank uses. */
    public static String seed() {
        return System.getProperty("ferry.test.seed", DEFAULT_SEED).trim();
    }

    @Override
    public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
        double scale = Double.parseDouble(System.getProperty("ferry.test.matrix.scale", "1"));
        int tries = Math.max(1, (int) Math.round(context.attributes().tries().orElse(1000) * scale));
        context.attributes().setSeed(seed());
        context.attributes().setTries(tries);
        context.attributes().setShrinking(ShrinkingMode.OFF);
        context.attributes().setAfterFailure(AfterFailureMode.RANDOM_SEED);
        context.attributes().setGeneration(GenerationMode.RANDOMIZED);
        context.attributes().setEdgeCases(EdgeCasesMode.MIXIN);
        long t0 = System.nanoTime();
        PropertyExecutionResult r = property.execute();
        String line = "[ferry-matrix] " + context.extendedLabel() + ": " + r.countChecks() + " cases checked of " + r.countTries()
                + " tried (asked " + tries + "), seed " + r.seed().orElse(seed()) + ", " + (System.nanoTime() - t0) / 1_000_000 + " ms, "
                + r.status();
        System.out.println(line);
        if (r.status() == PropertyExecutionResult.Status.SUCCESSFUL && r.countChecks() < tries) {
            return r.mapToFailed(line + ": fewer cases than asked for");
        }
        return r;
    }
}
