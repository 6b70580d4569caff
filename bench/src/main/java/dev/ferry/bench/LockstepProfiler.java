// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * Keeps the ranks' JMH iterations in step: a barrier before every iteration (warmup and measured),
 * and after it the slowest rank's time per operation, as the secondary metric
 * {@value #SLOWEST_RANK}. JMH calls it on every rank at the same points, so the collectives match.
 *
 * <p>A rank whose iteration failed cannot take part in the collective (its peers may be blocked in
 * a receive that will never complete): it arms a watchdog that aborts the job, and
 * {@link BenchMain} aborts it sooner with the failure's message once JMH returns.
 */
public final class LockstepProfiler implements InternalProfiler {
    /** Name of the secondary metric: the largest time per operation over all ranks, per iteration. */
    public static final String SLOWEST_RANK = "slowestRank";

    /** For JMH, which instantiates profilers by class. */
    public LockstepProfiler() {
    }

    @Override
    public String getDescription() {
        return "Ferry lockstep: barrier before each iteration, slowest rank's time after it";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        Lockstep.barrier();
    }

    @Override
    @SuppressWarnings("rawtypes") // JMH's interface declares the raw type
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        if (result.getRawPrimaryResults().isEmpty()) {
            BenchMain.abortSoon("rank " + Lockstep.rank() + ": " + benchmarkParams.getBenchmark() + " " + benchmarkParams.getParam("size")
                    + " B failed in an iteration (see its JMH log)", 20_000);
            return List.of();
        }
        Result<?> primary = result.getPrimaryResult();
        double slowest = Lockstep.max(primary.getScore());
        return List.of(new ScalarResult(SLOWEST_RANK, slowest, primary.getScoreUnit(), AggregationPolicy.AVG));
    }
}
