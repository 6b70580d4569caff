// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.SelectionReport;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Launch;
import dev.ferry.spi.Probe;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatFactory;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.format.OutputFormat;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Runs the Ferry benchmark suite on every rank of an MPI job, in lockstep. Launch it on every rank
 * with the same arguments ({@code mpirun -np 2 java ... dev.ferry.bench.BenchMain --suite quick});
 * {@code bench/run.sh} does that, runs the native C reference beside it and makes the report.
 *
 * <p>How the ranks stay in step: MPI is initialized once, a control communicator is opened, and
 * every rank builds the same plan from its arguments (checked: a rank whose plan differs aborts
 * the job). Each plan entry is one in-process JMH run ({@code forks = 0}) of one benchmark with
 * every {@code @Param} fixed to one value, in {@code SingleShotTime} mode: a fixed number of
 * warmup and measured batches of a fixed number of invocations, so that every rank performs the
 * same operations in the same order. JMH runs the benchmark on the calling thread
 * ({@link CallerRunsExecutor}), so MPI and CUDA are used from the main thread only, and
 * {@link LockstepProfiler} puts a barrier before every batch. Which backends and memory kinds can
 * be measured is agreed by all ranks before anything runs; what is skipped is printed with the
 * reason.
 *
 * <p>Output: rank 0 prints one progress line per run and writes, under {@code --out}:
 * {@code jmh-TAG.json} (JMH's JSON, rewritten after every run), {@code jmh-TAG.log} (JMH's own
 * output) and {@code run-TAG.properties} (what ran where: library versions, nodes, cores,
 * oversubscription, skips). Other ranks print nothing (JMH's output of rank N goes to
 * {@code logs/jmh-rank-N.log} with {@code --rank-logs}). TAG is the launcher's MPI family
 * ({@code openmpi}, {@code mpich}) unless {@code --tag} says otherwise. {@link Report} turns
 * the folder into a table and a plot.
 *
 * <p>{@code --print-native-args} prints the arguments that give the native C reference the same
 * sizes, benchmarks, memory kinds and iteration policy, without starting MPI.
 */
public final class BenchMain {
    private static final String USAGE = """
            usage: mpirun -np N java -cp CLASSPATH dev.ferry.bench.BenchMain [options]
              --suite quick|full|tiny     sizes and iteration policy (default quick)
              --benchmarks LIST           latency,bw,bibw,bcast,allreduce,reducescatter,allgather,alltoall
                                          (default all; reducescatter and allgather skip the sizes too
                                          small to give every rank one element)
              --backends LIST|all         backends to measure (default all: every available one)
              --mem LIST|auto             pageable,pinned,device (default auto: all three, skipping what
                                          this machine cannot do, with the reason)
              --sizes LIST                message sizes instead of the suite's (8,4k,1M,...)
              --warmup N --iterations N   batches per run instead of the suite's
              --out DIR                   output folder (default bench-results)
              --tag NAME                  file name tag (default: the launcher's MPI family)
              --time-limit SECONDS        stop cleanly (results kept) once this much time has passed
              --rank-logs                 keep JMH's output of every rank in DIR/logs/
              --print-native-args         print the C reference's arguments for these options and exit
            """;

    private static volatile boolean aborting;

    private BenchMain() {
    }

    /** The options of one invocation. */
    record Options(Suite suite, List<Question> questions, List<String> backends, List<Memory> memories, boolean memAuto,
                   Path out, String tag, long timeLimitSeconds, boolean rankLogs, boolean printNativeArgs) {

        static Options parse(String[] args) {
            String suiteName = "quick";
            String benchmarks = "all";
            String backends = "all";
            String mem = "auto";
            String sizes = null;
            Integer warmup = null;
            Integer iterations = null;
            Path out = Path.of("bench-results");
            String tag = null;
            long limit = 0;
            boolean rankLogs = false;
            boolean nativeArgs = false;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--suite" -> suiteName = value(args, ++i, a);
                    case "--benchmarks", "--bench" -> benchmarks = value(args, ++i, a);
                    case "--backends", "--backend" -> backends = value(args, ++i, a);
                    case "--mem" -> mem = value(args, ++i, a);
                    case "--sizes" -> sizes = value(args, ++i, a);
                    case "--warmup" -> warmup = Integer.parseInt(value(args, ++i, a));
                    case "--iterations" -> iterations = Integer.parseInt(value(args, ++i, a));
                    case "--out" -> out = Path.of(value(args, ++i, a));
                    case "--tag" -> tag = value(args, ++i, a);
                    case "--time-limit" -> limit = Long.parseLong(value(args, ++i, a));
                    case "--rank-logs" -> rankLogs = true;
                    case "--print-native-args" -> nativeArgs = true;
                    case "-h", "--help" -> {
                        System.out.print(USAGE);
                        System.exit(0);
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + a + "'\n" + USAGE);
                }
            }
            Suite suite = Suite.named(suiteName);
            if (sizes != null) {
                suite = suite.withSizes(split(sizes).stream().map(Suite::parseSize).sorted().toList());
            }
            if (warmup != null || iterations != null) {
                suite = suite.withIterations(warmup != null ? warmup : suite.warmup(), iterations != null ? iterations : suite.iterations());
            }
            List<Question> qs = benchmarks.equals("all") ? List.of(Question.values()) : split(benchmarks).stream().map(Question::parse).toList();
            boolean auto = mem.equals("auto") || mem.equals("all");
            List<Memory> ms = auto ? List.of(Memory.values()) : split(mem).stream().map(Memory::parse).distinct().toList();
            List<String> bs = backends.equals("all") ? List.of() : split(backends).stream().map(s -> s.toLowerCase(Locale.ROOT)).distinct().toList();
            return new Options(suite, qs, bs, ms, auto, out, tag, limit, rankLogs, nativeArgs);
        }

        private static String value(String[] args, int i, String option) {
            if (i >= args.length) {
                throw new IllegalArgumentException(option + " needs a value\n" + USAGE);
            }
            return args[i];
        }

        private static List<String> split(String s) {
            return List.of(s.split(",")).stream().map(String::trim).filter(x -> !x.isEmpty()).toList();
        }

        /** The C reference's arguments: suite policy, benchmarks it has, memory kinds. */
        List<String> nativeArguments() {
            List<String> a = new ArrayList<>(suite.nativeArguments());
            a.add("--bench");
            a.add(String.join(",", questions.stream().map(Question::id).toList()));
            a.add("--mem");
            a.add(String.join(",", memories.stream().map(Memory::id).toList()));
            return a;
        }
    }

    /** One JMH run of the plan. */
    record Run(Question question, String backend, Memory memory, long size, int ranks, int window, int reps, int warmup) {
        String label() {
            return question.id() + " " + backend + "/" + memory.id() + " " + Suite.formatSize(size);
        }
    }

    /**
     * Runs the suite; see the class comment. Exits with a message on bad arguments; aborts the MPI
     * job if a benchmark fails on any rank.
     */
    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("bench: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (o.printNativeArgs()) {
            System.out.println(String.join(" ", o.nativeArguments()));
            return;
        }
        configureJmh();
        new BenchMain().run(o, args);
    }

    /** JMH settings for running inside MPI: several JMH instances at once, benchmarks on the calling thread. */
    static void configureJmh() {
        System.setProperty("java.awt.headless", "true");
        System.setProperty("jmh.ignoreLock", "true"); // one JMH per rank, several ranks per node
        System.setProperty("jmh.executor", "CUSTOM");
        System.setProperty("jmh.executor.class", CallerRunsExecutor.class.getName());
    }

    private void run(Options o, String[] args) throws IOException {
        long start = System.nanoTime();
        SelectionReport report = Ferry.report(); // probes every provider: initializes MPI
        List<String> wanted = o.backends().isEmpty()
                ? report.probes().stream().filter(Probe::isAvailable).map(Probe::provider).toList()
                : o.backends();
        String controlBackend = wanted.stream().filter(b -> report.probe(b) != null && report.probe(b).isAvailable()).findFirst()
                .orElse(null);
        if (controlBackend == null) {
            if (report.launch().rank() > 0) {
                System.exit(3); // rank 0 says why
            }
            System.err.println("bench: none of the backends " + (wanted.isEmpty() ? "(none available)" : wanted) + " can run here:\n" + report.table());
            System.exit(3);
        }
        Lockstep.start(Ferry.open(controlBackend));
        int rank = Lockstep.rank();
        int ranks = Lockstep.size();
        boolean lead = rank == 0;
        PrintStream say = lead ? System.out : new PrintStream(OutputStream.nullOutputStream());

        if (!Lockstep.same(String.join(" ", args))) {
            abort("rank " + rank + ": the ranks were started with different arguments; every rank must run the same plan");
        }
        String tag = o.tag() != null ? o.tag() : switch (report.launch().family()) {
            case OPEN_MPI -> "openmpi";
            case MPICH -> "mpich";
            case NONE -> "singleton";
        };
        Files.createDirectories(o.out());
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("date", ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        meta.put("tag", tag);
        meta.put("arguments", String.join(" ", args));
        meta.put("launcher", System.getenv().getOrDefault("FERRY_BENCH_LAUNCH", "(started directly)"));
        meta.put("suite", o.suite().name());
        meta.put("sizes", String.join(",", o.suite().sizes().stream().map(String::valueOf).toList()));
        meta.put("warmup", Integer.toString(o.suite().warmup()));
        meta.put("iterations", Integer.toString(o.suite().iterations()));
        meta.put("ranks", Integer.toString(ranks));
        meta.putAll(placement(say, ranks));
        meta.put("java", System.getProperty("java.vm.name") + " " + Runtime.version());
        meta.put("cuda", Cuda.describe());

        // backends: open the ones available on every rank, in the same order everywhere
        Map<String, Communicator> comms = new LinkedHashMap<>();
        List<String> skipped = new ArrayList<>();
        for (String b : wanted) {
            Probe p = report.probe(b);
            boolean here = p != null && p.isAvailable();
            if (Lockstep.all(here)) {
                Communicator c = Ferry.open(b);
                comms.put(b, c);
                Lockstep.register(b, c);
                meta.put("backend." + b, p.reason());
                p.details().forEach((k, v) -> meta.put("backend." + b + "." + k.replace(' ', '-'), v));
            } else {
                String why = p == null ? "no provider named " + b + " on the class path (known: "
                        + String.join(", ", report.probes().stream().map(Probe::provider).toList()) + ")"
                        : !here ? p.reason() : "unavailable on another rank";
                skipped.add("backend " + b + ": " + why);
            }
        }
        // memory kinds: measurable with a backend only when every rank can
        Map<String, List<Memory>> kinds = new LinkedHashMap<>();
        String noDevice = o.memories().contains(Memory.DEVICE) ? comms.isEmpty() ? "no backend opened" : null
                : "device memory not asked for (--mem)";
        for (Map.Entry<String, Communicator> e : comms.entrySet()) {
            List<Memory> ok = new ArrayList<>();
            for (Memory m : o.memories()) {
                String why = m.unavailableReason(e.getValue());
                if (Lockstep.all(why == null)) {
                    ok.add(m);
                } else {
                    String skip = e.getKey() + "/" + m.id() + ": " + (why != null ? why : "unavailable on another rank");
                    skipped.add(skip);
                    if (m == Memory.DEVICE && noDevice == null) {
                        noDevice = "device memory not measured (" + skip + ")";
                    }
                }
            }
            kinds.put(e.getKey(), ok);
        }
        boolean deviceMeasured = kinds.values().stream().anyMatch(k -> k.contains(Memory.DEVICE));
        for (String s : skipped) {
            say.println("[bench] skip " + s);
        }

        List<Run> plan = new ArrayList<>();
        for (Question q : o.questions()) {
            if (!q.isCollective() && ranks < 2) {
                skipped.add(q.id() + ": needs at least 2 ranks");
                say.println("[bench] skip " + q.id() + ": point-to-point benchmarks need at least 2 ranks");
                continue;
            }
            List<String> unsplit = o.suite().sizes().stream().filter(size -> !q.runs(size, ranks)).map(Suite::formatSize).toList();
            if (!unsplit.isEmpty() && !comms.isEmpty()) {
                String why = q.id() + " at " + String.join(", ", unsplit) + ": too small to give each of " + ranks + " ranks one element";
                skipped.add(why);
                say.println("[bench] skip " + why);
            }
            for (String b : comms.keySet()) {
                for (Memory m : kinds.get(b)) {
                    boolean first = true;
                    for (long size : o.suite().sizes()) {
                        if (!q.runs(size, ranks)) {
                            continue;
                        }
                        int window = q.hasWindow() ? o.suite().window(size) : 1;
                        int reps = o.suite().reps(q, size, ranks);
                        plan.add(new Run(q, b, m, size, ranks, window, reps, o.suite().warmup(size, reps, first)));
                        first = false;
                    }
                }
            }
        }
        if (!Lockstep.same(plan.toString())) {
            abort("rank " + rank + ": the ranks built different plans (different backends or memory kinds available?)");
        }
        meta.put("skipped", String.join(" | ", skipped));
        meta.put("runs", Integer.toString(plan.size()));
        // the yardstick of the device collectives: one device-to-device copy of each size, rank 0 alone, in this run
        if (deviceMeasured) {
            meta.put("d2dcopy", timeDeviceCopies(o, tag, lead, say));
        } else {
            meta.put("d2dcopy", "not measured: " + (noDevice != null ? noDevice : "no backend measures device memory here"));
            say.println("[bench] no device-to-device copy reference: " + meta.get("d2dcopy").substring("not measured: ".length()));
        }

        Path json = o.out().resolve("jmh-" + tag + ".json");
        Path log = o.out().resolve("jmh-" + tag + ".log");
        Path props = o.out().resolve("run-" + tag + ".properties");
        PrintStream jmhOut = jmhOutput(o, rank, log);
        say.println("[bench] suite " + o.suite().name() + ": " + plan.size() + " runs on " + ranks + " ranks, backends " + comms.keySet()
                + "; JMH output in " + (lead ? log : "(rank 0)"));
        writeMeta(lead, props, meta);

        List<RunResult> results = new ArrayList<>();
        int done = 0;
        for (Run r : plan) {
            long elapsed = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            if (Lockstep.any(lead && o.timeLimitSeconds() > 0 && elapsed >= o.timeLimitSeconds())) {
                say.println("[bench] time limit of " + o.timeLimitSeconds() + " s reached after " + done + " of " + plan.size()
                        + " runs; stopping here (results so far are kept)");
                meta.put("stopped", "time limit after " + done + " of " + plan.size() + " runs");
                break;
            }
            say.printf("[bench %d/%d] %s ...", done + 1, plan.size(), r.label());
            say.flush();
            long t0 = System.nanoTime();
            Collection<RunResult> rr = runOne(o, r, jmhOut);
            results.addAll(rr);
            done++;
            say.println(" " + summary(r, rr) + String.format(Locale.ROOT, "  [%.1f s]", (System.nanoTime() - t0) / 1e9));
            if (lead) {
                writeJson(json, results);
            }
        }
        meta.put("completed", Integer.toString(done));
        meta.put("seconds", Long.toString(Duration.ofNanos(System.nanoTime() - start).toSeconds()));
        writeMeta(lead, props, meta);
        jmhOut.flush();
        Lockstep.barrier();
        Lockstep.close();
        say.println("[bench] done: " + done + " runs in " + meta.get("seconds") + " s; results: " + json);
        if (jmhOut != System.out) {
            jmhOut.close();
        }
        Ferry.shutdown();
    }

    /**
     * Times one device-to-device copy of every size of the suite on rank 0's GPU while the other
     * ranks wait ({@link DeviceCopy}), writes {@code d2dcopy-TAG.csv} (rank 0) and returns the
     * run's note about it; aborts the job when the copy fails. Collective.
     */
    private static String timeDeviceCopies(Options o, String tag, boolean lead, PrintStream say) {
        Path csv = DeviceCopy.file(o.out(), tag);
        String note = "";
        if (lead) {
            try {
                String where = "rank 0's GPU " + Cuda.defaultDevice();
                java.util.Map<Long, Stats> copies = DeviceCopy.timeAll(o.suite().sizes());
                DeviceCopy.write(csv, Lockstep.size(), where, copies);
                for (Map.Entry<Long, Stats> e : copies.entrySet()) {
                    say.printf(Locale.ROOT, "[bench] %s %s/%s %s: %.3g us (%.3g-%.3g)%n", DeviceCopy.BENCH, DeviceCopy.BACKEND, Memory.DEVICE.id(),
                            Suite.formatSize(e.getKey()), e.getValue().median(), e.getValue().min(), e.getValue().max());
                }
                note = "one device-to-device copy per size on " + where + ", " + csv.getFileName();
            } catch (IOException | RuntimeException e) {
                abort("rank 0: timing the device-to-device copy reference failed: " + e);
            }
        }
        Lockstep.barrier();
        return note;
    }

    /** Nodes, ranks per node, cores per node; warns about oversubscription. */
    private static Map<String, String> placement(PrintStream say, int ranks) {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
        int cores = onlineCpus();
        List<String> all = Lockstep.allGather(host + " " + cores);
        Map<String, int[]> perNode = new TreeMap<>();
        for (String s : all) {
            int sp = s.lastIndexOf(' ');
            int[] v = perNode.computeIfAbsent(s.substring(0, sp), k -> new int[2]);
            v[0]++;
            v[1] = Integer.parseInt(s.substring(sp + 1));
        }
        Map<String, String> m = new LinkedHashMap<>();
        List<String> desc = new ArrayList<>();
        boolean over = false;
        for (Map.Entry<String, int[]> e : perNode.entrySet()) {
            desc.add(e.getKey() + ": " + e.getValue()[0] + " ranks, " + e.getValue()[1] + " cores");
            over |= e.getValue()[0] > e.getValue()[1];
        }
        boolean flagged = "1".equals(System.getenv("FERRY_BENCH_OVERSUBSCRIBED"));
        double load = loadAverage();
        int localCores = onlineCpus();
        boolean busy = Lockstep.any(load > localCores);
        m.put("nodes", Integer.toString(perNode.size()));
        m.put("placement", String.join("; ", desc));
        m.put("oversubscribed", Boolean.toString(over || flagged));
        say.println("[bench] " + ranks + " ranks on " + perNode.size() + " node(s): " + String.join("; ", desc));
        m.put("load", String.format(Locale.ROOT, "%.1f on %d cores (rank 0's node)", load, localCores));
        m.put("busy", Boolean.toString(busy));
        if (busy) {
            say.println("[bench] NOTE: a node is busy (load average above its core count; rank 0's node: "
                    + String.format(Locale.ROOT, "%.1f on %d cores", load, localCores) + "): other work competes for the cores, timings are noisy");
        }
        if (over || flagged) {
            say.println("[bench] NOTE: oversubscribed (more ranks than cores, or mpirun --oversubscribe): waiting ranks yield their core, "
                    + "which inflates latency; these timings show that the path works, not how fast it is");
        }
        return m;
    }

    /** The 1-minute load average of this node, or 0 when unknown. */
    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /**
     * CPUs of this node: the online CPUs, not {@code availableProcessors()}, which mpirun's binding
     * (one core per rank by default) shrinks to 1.
     */
    static int onlineCpus() {
        try {
            int n = 0;
            for (String range : Files.readString(Path.of("/sys/devices/system/cpu/online")).trim().split(",")) {
                String[] ab = range.split("-");
                n += ab.length == 1 ? 1 : Integer.parseInt(ab[1]) - Integer.parseInt(ab[0]) + 1;
            }
            return Math.max(n, Runtime.getRuntime().availableProcessors());
        } catch (IOException | RuntimeException e) {
            return Runtime.getRuntime().availableProcessors();
        }
    }

    private static PrintStream jmhOutput(Options o, int rank, Path log) throws IOException {
        if (rank == 0) {
            return new PrintStream(Files.newOutputStream(log), true, StandardCharsets.UTF_8);
        }
        if (o.rankLogs()) {
            Path dir = o.out().resolve("logs");
            Files.createDirectories(dir);
            return new PrintStream(Files.newOutputStream(dir.resolve("jmh-rank-" + rank + ".log")), true, StandardCharsets.UTF_8);
        }
        return new PrintStream(OutputStream.nullOutputStream());
    }

    private static Collection<RunResult> runOne(Options o, Run r, PrintStream jmhOut) {
        ChainedOptionsBuilder b = new OptionsBuilder()
                .include("^" + Pattern.quote(r.question().benchmark().getName()) + "\\.")
                .mode(org.openjdk.jmh.annotations.Mode.SingleShotTime)
                .timeUnit(TimeUnit.MICROSECONDS)
                .forks(0)
                .threads(1)
                .syncIterations(false)
                .shouldDoGC(false)
                .shouldFailOnError(true)
                .warmupIterations(r.warmup())
                .warmupBatchSize(r.reps())
                .measurementIterations(o.suite().iterations())
                .measurementBatchSize(r.reps())
                .operationsPerInvocation(r.reps() * r.question().opsPerInvocation())
                .timeout(TimeValue.minutes(30))
                .param("backend", r.backend())
                .param("mem", r.memory().id())
                .param("size", Long.toString(r.size()))
                .param("ranks", Integer.toString(r.ranks()))
                .addProfiler(LockstepProfiler.class)
                .verbosity(VerboseMode.NORMAL);
        if (r.question().hasWindow()) {
            b.param("window", Integer.toString(r.window()));
        }
        OutputFormat format = OutputFormatFactory.createFormatInstance(jmhOut, VerboseMode.NORMAL);
        try {
            Collection<RunResult> rr = new Runner(b.build(), format).run();
            if (rr.isEmpty()) {
                abort("rank " + Lockstep.rank() + ": JMH ran nothing for " + r.label() + " (is the benchmark list in the jar?)");
            }
            return rr;
        } catch (RunnerException | RuntimeException e) {
            StringBuilder sb = new StringBuilder("rank " + Lockstep.rank() + ": " + r.label() + " failed: " + e);
            for (Throwable t = e; t != null; t = t.getCause()) {
                for (Throwable s : t.getSuppressed()) {
                    sb.append("\n  caused by ").append(s);
                    for (Throwable c = s.getCause(); c != null; c = c.getCause()) {
                        sb.append("\n  caused by ").append(c);
                    }
                }
            }
            abort(sb.toString());
            throw new IllegalStateException("unreachable");
        }
    }

    /** The progress line's result: median and spread of the measured batches. */
    static String summary(Run r, Collection<RunResult> rr) {
        List<Double> values = new ArrayList<>();
        for (RunResult res : rr) {
            for (BenchmarkResult br : res.getBenchmarkResults()) {
                for (IterationResult ir : br.getIterationResults()) {
                    Result<?> m = r.question().isCollective() ? ir.getSecondaryResults().get(LockstepProfiler.SLOWEST_RANK) : ir.getPrimaryResult();
                    if (m != null) {
                        values.add(m.getScore());
                    }
                }
            }
        }
        if (values.isEmpty()) {
            return "(no result)";
        }
        Stats s = Stats.of(values.stream().mapToDouble(Double::doubleValue).toArray());
        if (r.question().isBandwidth()) {
            long bytes = r.question().bytesPerOperation(r.size(), r.window());
            Stats g = s.mapDecreasing(us -> bytes / (us * 1e3));
            return String.format(Locale.ROOT, "%.3g GB/s (%.3g-%.3g)", g.median(), g.min(), g.max());
        }
        return String.format(Locale.ROOT, "%.3g us (%.3g-%.3g)%s", s.median(), s.min(), s.max(), r.question().isCollective() ? " slowest rank" : "");
    }

    private static void writeJson(Path json, List<RunResult> results) {
        try {
            Path tmp = json.resolveSibling(json.getFileName() + ".tmp");
            try (PrintStream ps = new PrintStream(Files.newOutputStream(tmp), false, StandardCharsets.UTF_8)) {
                ResultFormatFactory.getInstance(ResultFormatType.JSON, ps).writeOut(results);
            }
            Files.move(tmp, json, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeMeta(boolean lead, Path props, Map<String, String> meta) throws IOException {
        if (!lead) {
            return;
        }
        StringBuilder sb = new StringBuilder("# Ferry benchmark run (written by dev.ferry.bench.BenchMain)\n");
        meta.forEach((k, v) -> sb.append(k).append('=').append(v.replace("\\", "\\\\").replace("\n", "\\n")).append('\n'));
        Files.writeString(props, sb.toString(), StandardCharsets.UTF_8);
    }

    /** Aborts the whole MPI job with {@code message}, through Ferry's uncaught-exception handler (MPI_Abort). */
    static void abort(String message) {
        aborting = true;
        System.err.println("[bench] " + message + "\n[bench] aborting the MPI job");
        System.err.flush();
        Thread t = new Thread(() -> {
            throw new IllegalStateException("ferry bench: " + message);
        }, "ferry-bench-abort");
        t.start();
        try {
            t.join(10_000);
            Thread.sleep(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(4); // MPI_Abort did not end the process: the launcher sees a rank die without MPI_Finalize
    }

    /** Aborts the job after {@code delayMillis} unless the main thread aborts it sooner with a better message. */
    static void abortSoon(String message, long delayMillis) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(delayMillis);
            } catch (InterruptedException e) {
                return;
            }
            if (!aborting) {
                abort(message);
            }
        }, "ferry-bench-watchdog");
        t.setDaemon(true);
        t.start();
    }
}
