// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * What the flight recorder costs a call: the 8-byte allReduce (one double, SUM, host buffers), the
 * slowest rank's time per call, with Ferry's JFR events off (the ring is kept, as always) and on (a
 * JFR recording of {@code dev.ferry.Collective}, {@code dev.ferry.PointToPoint} and
 * {@code dev.ferry.Wait}, started in this JVM, as {@code -XX:StartFlightRecording} would). Its
 * yardsticks come from other runs of the same program: with {@code -Dferry.flight.ring=0} (the
 * recorder skipped at a test of a constant), and on a build of the code before the recorder
 * (whose JFR knows no Ferry event: it runs {@code off} only). {@code bench/flight-cost.sh} runs
 * all of them in one go, alternating, and prints the table.
 *
 * <p>Beside it, {@link #frontAlone} times the same call on a communicator over
 * {@link NoOpTransport}: the checked front's own cost, recorder included, without MPI's time and
 * its noise (on a machine shared with other work, MPI's time per call varies by more than the
 * recorder costs).
 *
 * <p>Run under the launcher, every rank alike: {@code mpirun -np 2 java -cp ...
 * dev.ferry.bench.FlightRecorderCost [--backend ompi] [--events off,on] [--label NAME]}. Rank 0
 * prints one line per setting and benchmark: {@code flight-cost LABEL events=E METHOD: MEDIAN us
 * (P10-P90) slowest rank, N batches of REPS calls}. The events are measured in the order given: {@code off} before
 * {@code on}, since JFR, once started, stays in the JVM.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(0)
public class FlightRecorderCost {
    static final int REPS = 20_000;
    static final int WARMUP = 10;
    static final int ITERATIONS = 30;

    /** The buffers, and the JFR recording while events are on. */
    @State(Scope.Benchmark)
    public static class Call extends JobState {
        /** {@code off}: no recording; {@code on}: a recording of Ferry's events. */
        @Param("off")
        public String events;

        Buffer send;
        Buffer recv;
        Communicator alone;
        Recording recording;

        /** Opens the job, allocates the buffers, starts the recording when events are on. */
        @Setup(Level.Trial)
        public void setUp() {
            open();
            send = HostBuffer.allocate(8);
            recv = HostBuffer.allocate(8);
            alone = new dev.ferry.spi.CheckedCommunicator(new NoOpTransport());
            if (events.equals("on")) {
                recording = new Recording();
                for (String e : List.of("dev.ferry.Collective", "dev.ferry.PointToPoint", "dev.ferry.Wait")) {
                    recording.enable(e).withThreshold(Duration.ZERO).withoutStackTrace();
                }
                recording.setToDisk(false);
                recording.start();
            }
        }

        /** Stops the recording, frees the buffers. */
        @TearDown(Level.Trial)
        public void tearDown() {
            if (recording != null) {
                recording.stop();
                recording.close();
            }
            alone.close();
            Memory.free(send);
            Memory.free(recv);
        }
    }

    /** One call. */
    @Benchmark
    public void allReduce(Call c, Blackhole hole) {
        c.comm.allReduce(c.send, c.recv, 1, DataType.DOUBLE, ReduceOp.SUM);
        hole.consume(c.recv);
    }

    /** The same call on a communicator whose transport does nothing: the checked front alone, this rank's own time. */
    @Benchmark
    public void frontAlone(Call c, Blackhole hole) {
        c.alone.allReduce(c.send, c.recv, 1, DataType.DOUBLE, ReduceOp.SUM);
        hole.consume(c.recv);
    }

    public static void main(String[] args) throws RunnerException {
        String backend = "ompi";
        List<String> events = List.of("off", "on");
        String label = "this build";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--backend" -> backend = args[++i];
                case "--events" -> events = List.of(args[++i].split(","));
                case "--label" -> label = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; usage: FlightRecorderCost [--backend NAME] [--events off,on] [--label NAME]");
            }
        }
        BenchMain.configureJmh();
        Lockstep.start(Ferry.open(backend));
        Communicator measured = Ferry.open(backend);
        Lockstep.register(backend, measured);
        boolean lead = Lockstep.rank() == 0;
        for (String e : events) {
            Collection<RunResult> rr = new Runner(new OptionsBuilder()
                    .include("^" + java.util.regex.Pattern.quote(FlightRecorderCost.class.getName()) + "\\.")
                    .mode(Mode.SingleShotTime).timeUnit(TimeUnit.MICROSECONDS).forks(0).threads(1).syncIterations(false).shouldDoGC(false)
                    .shouldFailOnError(true).warmupIterations(WARMUP).warmupBatchSize(REPS).measurementIterations(ITERATIONS)
                    .measurementBatchSize(REPS).operationsPerInvocation(REPS).timeout(TimeValue.minutes(10))
                    .param("backend", backend).param("mem", "pageable").param("size", "8").param("ranks", Integer.toString(Lockstep.size()))
                    .param("events", e).addProfiler(LockstepProfiler.class).verbosity(VerboseMode.SILENT).build()).run();
            for (RunResult r : rr) {
                String method = r.getParams().getBenchmark().substring(r.getParams().getBenchmark().lastIndexOf('.') + 1);
                boolean alone = method.equals("frontAlone");
                List<Double> times = new ArrayList<>();
                for (BenchmarkResult br : r.getBenchmarkResults()) {
                    for (IterationResult ir : br.getIterationResults()) {
                        Result<?> m = alone ? ir.getPrimaryResult() : ir.getSecondaryResults().get(LockstepProfiler.SLOWEST_RANK);
                        if (m != null) times.add(m.getScore());
                    }
                }
                Stats s = Stats.of(times.stream().mapToDouble(Double::doubleValue).toArray());
                if (lead) {
                    System.out.printf(Locale.ROOT, "flight-cost %s events=%s %s: %.4f us (%.4f-%.4f) %s, %d batches of %d calls%n", label, e, method,
                            s.median(), s.p10(), s.p90(), alone ? "rank 0" : "slowest rank", s.n(), REPS);
                }
            }
        }
        Lockstep.barrier();
        Lockstep.close();
        Ferry.shutdown();
    }
}
