// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Ferry's benchmarks: JMH suites that compare the backends under mpirun, a native C reference
 * ({@code src/main/c/ferry_osu.c}) and a report (markdown table and PNG plot).
 *
 * <p>One benchmark class per question ({@link dev.ferry.bench.PingPongLatency},
 * {@link dev.ferry.bench.UnidirectionalBandwidth}, {@link dev.ferry.bench.BidirectionalBandwidth},
 * {@link dev.ferry.bench.Broadcast}, {@link dev.ferry.bench.AllReduce},
 * {@link dev.ferry.bench.AllToAll}); {@link dev.ferry.bench.BenchMain} runs them on every rank in
 * lockstep ({@link dev.ferry.bench.Lockstep}, {@link dev.ferry.bench.LockstepProfiler}) and
 * {@link dev.ferry.bench.Report} makes the table and the plot. See {@code bench/README.md}.
 */
package dev.ferry.bench;
