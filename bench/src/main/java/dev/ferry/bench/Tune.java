// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidSettingException;
import dev.ferry.ReduceOp;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.collectives.CostTable;
import dev.ferry.collectives.Planner;
import dev.ferry.collectives.Topology;
import dev.ferry.cuda.Cuda;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Measures every collective on every algorithm of the planner that can run it, on this machine and
 * placement of ranks, and writes the times as a cost table ({@link CostTable}'s format) that
 * {@code ferry.collectives.table} reads; then times each collective as the planner runs it, with the
 * tables built into Ferry (no setting given) and from the new table, each in batches alternating
 * with the fastest algorithm measured, forced, so the report shows what planning costs.
 *
 * <p>Run under the launcher, every rank alike ({@code ferry bench --tune} does):
 * {@code mpirun -np N java -cp ... dev.ferry.bench.Tune --out DIR [--quick] [--sizes 8,1M,...]
 * [--collectives allReduce,broadcast,...]}. Buffers are device memory of each rank's GPU where
 * CUDA is available, host memory otherwise. Each time is the slowest rank's mean per call in a
 * batch, the median of the batches, in the second of two passes over every point (the first runs
 * while the JIT compiles the paths, and is discarded); an algorithm more than {@value #PRUNE}x slower than the
 * fastest at one size, and slower than {@value #PRUNE_MICROS} us, is not measured at larger sizes. Writes {@code DIR/costs.tsv} and
 * {@code DIR/tune.md}.
 */
public final class Tune {
    private static final long KIB = 1024, MIB = 1024 * KIB;
    private static final long[] FULL = {8, 64, KIB, 8 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB};
    private static final long[] QUICK = {8, KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB};
    private static final List<String> COLLECTIVES = List.of("allReduce", "broadcast", "reduce", "reduceScatter", "allGather", "allToAll", "gather", "scatter");
    private static final int PRUNE = 8;
    /** ... and slower than this, in microseconds. */
    private static final double PRUNE_MICROS = 2000;
    private static final int BATCHES = 7;
    /** Passes over every point; only the last is kept. */
    private static final int PASSES = 2;
    /** Each batch lasts about this long (calls per batch from the warm-up). */
    private static final double BATCH_SECONDS = 0.004;
    /** Warm-up calls last about this long (at most 20000 calls). */
    private static final double WARM_SECONDS = 0.02;
    /** ... and at a collective's first size, where every algorithm's path is compiled first. */
    private static final double WARM_PASS_SECONDS = 0.3;

    private final Communicator comm;
    /** The measurement's own messages (batch sizes, the slowest rank's time): apart from the forced algorithms of {@link #comm}. */
    private final Communicator ctl;
    private final boolean device;
    private final boolean zero;
    private final HostBuffer flag = HostBuffer.allocate(8);
    private final HostBuffer flagMax = HostBuffer.allocate(8);

    private Tune(Communicator comm, boolean device) {
        this.comm = comm;
        this.ctl = comm.duplicate();
        this.device = device;
        this.zero = comm.rank() == 0;
    }

    public static void main(String[] args) throws IOException {
        Path out = null;
        long[] sizes = FULL;
        List<String> collectives = COLLECTIVES;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--quick" -> sizes = QUICK;
                case "--sizes" -> sizes = Arrays.stream(args[++i].split(",")).mapToLong(Tune::parseSize).toArray();
                case "--collectives" -> collectives = List.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("Tune: unknown option " + args[i]
                        + " (--out DIR, --quick, --sizes 8,64k,1M, --collectives " + String.join(",", COLLECTIVES) + ")");
            }
        }
        if (out == null) throw new IllegalArgumentException("Tune: --out DIR is required");
        for (String c : collectives) {
            if (!COLLECTIVES.contains(c)) throw new IllegalArgumentException("Tune: --collectives takes " + String.join(",", COLLECTIVES) + "; not " + c);
        }
        boolean device = Cuda.isAvailable();
        try (Communicator comm = Ferry.open()) {
            Tune t = new Tune(comm, device);
            try {
                t.run(out, sizes, collectives);
            } finally {
                t.ctl.close();
            }
        }
    }

    private static long parseSize(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long m = t.endsWith("k") ? KIB : t.endsWith("m") ? MIB : t.endsWith("g") ? 1024 * MIB : 1;
        return Long.parseLong(m == 1 ? t : t.substring(0, t.length() - 1)) * m;
    }

    /** One measured point: the median of the batches of the slowest rank's mean per call, and the spread. */
    private record Point(double median, double min, double max) {
    }

    private void run(Path out, long[] sizes, List<String> collectives) throws IOException {
        Planner planner = CollectivesDiagnostics.planner(comm);
        Topology topo = planner.topology();
        String backend = comm.backend();
        String setting = topo.gpu() + "\t" + topo.placement().label() + "\t" + comm.size() + "\t" + backend;
        List<String> rows = new ArrayList<>();
        StringBuilder md = new StringBuilder();
        if (zero) {
            Files.createDirectories(out);
            System.out.println("[tune] " + comm.size() + " ranks, backend " + backend + ", " + topo.describe() + ", " + (device ? "device" : "host") + " buffers");
            System.out.println("[tune] algorithms: " + planner.names());
            md.append("# Collectives tuned: ").append(topo.gpu()).append(", ").append(topo.placement().label()).append(", ").append(comm.size())
                    .append(" ranks, backend ").append(backend).append("\n\n");
            md.append("- topology: ").append(topo.describe()).append('\n');
            md.append("- buffers: ").append(device ? "device memory of each rank's GPU" : "host memory").append('\n');
            md.append("- launch: `").append(System.getenv().getOrDefault("FERRY_TUNE_LAUNCH", "(not given)")).append("`\n");
            md.append("- commit: ").append(System.getenv().getOrDefault("FERRY_COMMIT", "(not given)")).append(", date ").append(Instant.now()).append('\n');
            md.append("- each time: the slowest rank's mean per call in a batch, median (min-max) of ").append(BATCHES).append(" batches, us\n");
        }
        String header = "# gpu\tplacement\tranks\tbackend\tcollective\talgorithm\tbytes\tmicros\n# measured by dev.ferry.bench.Tune on "
                + topo.describe() + ", commit " + System.getenv().getOrDefault("FERRY_COMMIT", "(not given)") + ", " + Instant.now() + "\n";
        // per collective: size -> algorithm -> point
        Map<String, Map<Long, Map<String, Point>>> measured = new LinkedHashMap<>();
        List<String> algorithms = CollectivesDiagnostics.algorithms(comm);
        for (String c : collectives) {
            // every point twice, the first pass discarded: a path's first calls run while the JIT compiles it
            // (the first sizes of the first collective read several times too slow in one pass)
            for (int pass = 1; pass <= PASSES; pass++) {
                measured.put(c, sweep(c, sizes, algorithms, setting, pass == PASSES ? rows : new ArrayList<>(), pass == PASSES));
            }
            // after each collective, so that a run stopped early keeps what it measured
            if (zero) Files.writeString(out.resolve("costs.tsv"), header + String.join("\n", rows) + "\n", StandardCharsets.UTF_8);
        }

        // as planned: from the tables before (built in) and from this measurement
        Map<String, Map<Long, String[]>> before = planned(measured, null);
        Map<String, Map<Long, String[]>> after = planned(measured, CostTable.of("this measurement", rows));
        if (zero) {
            md.append("\nColumns: the fastest algorithm measured; the planner's choice and time with the tables built into Ferry (before: "
                    + "what a program gets with no setting given) and with this table (after). Each is timed beside the fastest algorithm forced "
                    + "again, their batches alternating, each first in every other pair (so that both see the machine alike), with the ratio of "
                    + "the two. The log names the algorithms each side's batches ran.\n");
            for (String c : collectives) {
                md.append("\n## ").append(c).append("\n\n| bytes | fastest | us | before | us | fastest beside it | before / fastest "
                        + "| after | us | fastest beside it | after / fastest |\n|---:|---|---:|---|---:|---:|---:|---|---:|---:|---:|\n");
                for (Map.Entry<Long, Map<String, Point>> e : measured.get(c).entrySet()) {
                    Map.Entry<String, Point> best = fastest(e.getValue());
                    if (best == null) continue;
                    String[] b = before.get(c).get(e.getKey()), a = after.get(c).get(e.getKey());
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %.2f |%n", label(e.getKey()), best.getKey(),
                            fmt(best.getValue()), b[0], b[1], b[3], Double.parseDouble(b[2]) / Double.parseDouble(b[4]),
                            a[0], a[1], a[3], Double.parseDouble(a[2]) / Double.parseDouble(a[4])));
                }
            }
            md.append("\n## Every algorithm measured\n\n");
            for (String c : collectives) {
                md.append("\n### ").append(c).append("\n\n");
                List<String> names = new ArrayList<>();
                measured.get(c).values().forEach(m -> m.keySet().forEach(n -> { if (!names.contains(n)) names.add(n); }));
                md.append("| bytes |");
                names.forEach(n -> md.append(' ').append(n).append(" |"));
                md.append("\n|---:|");
                names.forEach(n -> md.append("---:|"));
                md.append('\n');
                measured.get(c).forEach((bytes, m) -> {
                    md.append("| ").append(label(bytes)).append(" |");
                    names.forEach(n -> md.append(' ').append(m.containsKey(n) ? fmt(m.get(n)) : "").append(" |"));
                    md.append('\n');
                });
            }
            Files.writeString(out.resolve("tune.md"), md.toString(), StandardCharsets.UTF_8);
            System.out.println("[tune] wrote " + out.resolve("costs.tsv") + " and " + out.resolve("tune.md"));
        }
    }

    /**
     * One pass over the sizes of collective {@code c}: every algorithm forced one by one (pruned as the
     * class comment says); the points, with a row each in {@code rows}; printed when {@code report}.
     */
    private Map<Long, Map<String, Point>> sweep(String c, long[] sizes, List<String> algorithms, String setting, List<String> rows, boolean report) {
        Map<Long, Map<String, Point>> bySize = new LinkedHashMap<>();
        List<String> alive = new ArrayList<>(algorithms);
        java.util.Set<String> told = new java.util.HashSet<>();
        boolean warmed = false;
        for (long bytes : sizes) {
            if (!fits(c, bytes)) continue;
            if (!warmed) {
                // a pass of every algorithm at the first size, discarded: the first calls of a path compile it
                warmed = true;
                try (Buffers b = new Buffers(c, bytes)) {
                    for (String a : List.copyOf(alive)) {
                        try {
                            CollectivesDiagnostics.force(comm, c + ":" + a);
                            time(b, WARM_PASS_SECONDS);
                        } catch (InvalidSettingException e) {
                            if (e.getMessage().contains("does not run " + c)) alive.remove(a);
                        } finally {
                            CollectivesDiagnostics.force(comm, null);
                        }
                    }
                }
            }
            Map<String, Point> here = new LinkedHashMap<>();
            try (Buffers b = new Buffers(c, bytes)) {
                for (String a : List.copyOf(alive)) {
                    Point p;
                    try {
                        CollectivesDiagnostics.force(comm, c + ":" + a);
                        p = time(b);
                    } catch (InvalidSettingException e) {
                        // the algorithm does not run this collective, or not this shape here: the same answer on every rank
                        if (e.getMessage().contains("does not run " + c)) {
                            alive.remove(a);
                            continue;
                        }
                        String why = e.getMessage().replaceAll(".*?: ", "");
                        if (zero && report && told.add(c + " " + a + " " + why)) System.out.println("[tune] " + c + " " + label(bytes) + " " + a + ": " + e.getMessage());
                        continue;
                    } finally {
                        CollectivesDiagnostics.force(comm, null);
                    }
                    here.put(a, p);
                    rows.add(setting + "\t" + c + "\t" + a + "\t" + bytes + "\t" + String.format(Locale.ROOT, "%.2f", p.median()));
                }
            }
            bySize.put(bytes, here);
            double best = here.values().stream().mapToDouble(Point::median).min().orElse(Double.NaN);
            for (Map.Entry<String, Point> e : here.entrySet()) {
                // only where it saves time: a slow algorithm at small sizes costs little to keep measuring
                if (e.getValue().median() > PRUNE * best && e.getValue().median() > PRUNE_MICROS) alive.remove(e.getKey());
            }
            if (zero && report) {
                System.out.printf(Locale.ROOT, "[tune] %-13s %8s:", c, label(bytes));
                here.forEach((a, p) -> System.out.printf(Locale.ROOT, " %s %.1f", a, p.median()));
                System.out.println();
            }
        }
        return bySize;
    }

    private static Map.Entry<String, Point> fastest(Map<String, Point> bySize) {
        return bySize.entrySet().stream().min((x, y) -> Double.compare(x.getValue().median(), y.getValue().median())).orElse(null);
    }

    /**
     * Times each collective at each measured size as the planner runs it (from {@code table} first, when
     * not null; else from the tables built in), in batches alternating with the sweep's fastest
     * algorithm forced: the planner's algorithm, time and median, then the forced one's time and median.
     */
    private Map<String, Map<Long, String[]>> planned(Map<String, Map<Long, Map<String, Point>>> measured, CostTable table) {
        if (table != null) CollectivesDiagnostics.useTable(comm, table);
        Map<String, Map<Long, String[]>> out = new LinkedHashMap<>();
        measured.forEach((c, bySize) -> {
            Map<Long, String[]> m = new LinkedHashMap<>();
            out.put(c, m);
            for (Map.Entry<Long, Map<String, Point>> e : bySize.entrySet()) {
                try (Buffers b = new Buffers(c, e.getKey())) {
                    b.call();
                    String name = String.valueOf(CollectivesDiagnostics.lastAlgorithm());
                    Map.Entry<String, Point> best = fastest(e.getValue());
                    if (best == null) {
                        Point p = time(b);
                        m.put(e.getKey(), new String[] {name, fmt(p), String.valueOf(p.median())});
                    } else {
                        Point[] p = alternating(b, c + ":" + best.getKey(), table == null ? "built in" : "measured");
                        m.put(e.getKey(), new String[] {name, fmt(p[0]), String.valueOf(p[0].median()), fmt(p[1]), String.valueOf(p[1].median())});
                    }
                }
            }
        });
        return out;
    }

    /** The planner's calls and those of {@code forced} ({@code ferry.collectives}' form), timed as {@link #time} times them, their batches alternating. */
    private Point[] alternating(Buffers b, String forced, String tables) {
        Point warm = time(b, WARM_SECONDS); // the planner's path warm, and its time per call for the batch size
        double perCall = warm.median() / 1e6;
        int calls = callsPerBatch(perCall), batches = batches(perCall);
        double[][] t = new double[2][batches], first = new double[2][batches];
        List<Map<String, Long>> ran = List.of(new LinkedHashMap<>(), new LinkedHashMap<>()); // the algorithms each side's batches ran
        try {
            CollectivesDiagnostics.force(comm, forced);
            for (int k = 0; k < calls; k++) b.call(); // the forced path warm
            for (int i = 0; i < batches; i++) {
                for (int turn = 0; turn < 2; turn++) {
                    int which = turn ^ (i & 1); // planned first in even pairs, forced first in odd ones: no side always goes first
                    CollectivesDiagnostics.force(comm, which == 0 ? null : forced);
                    // the first call after a change of plan decides the plan again: apart, so that the batch times calls as a program runs them
                    ctl.barrier();
                    long t0 = System.nanoTime();
                    b.call();
                    first[which][i] = (System.nanoTime() - t0) / 1e3;
                    Map<String, Long> before = CollectivesDiagnostics.runs(comm);
                    t[which][i] = batch(b, calls);
                    Map<String, Long> side = ran.get(which);
                    CollectivesDiagnostics.runs(comm).forEach((a, n) -> {
                        long more = n - before.getOrDefault(a, 0L);
                        if (more > 0) side.merge(a, more, Long::sum);
                    });
                }
            }
        } finally {
            CollectivesDiagnostics.force(comm, null);
        }
        if (zero) {
            System.out.printf(Locale.ROOT, "[tune] alternating %s %s: planned (tables %s) %s us (first call after planning %s), ran %s; forced %s %s us (first %s), ran %s%n",
                    b.collective, label(b.bytes), tables, Arrays.toString(t[0]), Arrays.toString(first[0]), ran.get(0), forced, Arrays.toString(t[1]),
                    Arrays.toString(first[1]), ran.get(1));
        }
        Point[] p = new Point[2];
        for (int which = 0; which < 2; which++) {
            Arrays.sort(t[which]);
            p[which] = new Point(t[which][batches / 2], t[which][0], t[which][batches - 1]);
        }
        return p;
    }

    /** One batch of {@code calls} calls after a barrier: the slowest rank's mean per call, us. */
    private double batch(Buffers b, int calls) {
        return CollectiveBatch.slowestMeanMicros(ctl, flag, flagMax, calls, b::call);
    }

    /** Rank 0's {@code n}, on every rank. */
    private int agreed(long n) {
        flag.segment().set(ValueLayout.JAVA_LONG, 0, n);
        ctl.broadcast(flag, 1, DataType.LONG, 0);
        return (int) flag.segment().get(ValueLayout.JAVA_LONG, 0);
    }

    private static String label(long bytes) {
        if (bytes >= MIB && bytes % MIB == 0) return bytes / MIB + " MiB";
        if (bytes >= KIB && bytes % KIB == 0) return bytes / KIB + " KiB";
        return bytes + " B";
    }

    private static String fmt(Point p) {
        return String.format(Locale.ROOT, "%.1f (%.1f-%.1f)", p.median(), p.min(), p.max());
    }

    /** Whether {@code c} of {@code bytes} makes a call here (a reduce-scatter needs an element per rank). */
    private boolean fits(String c, long bytes) {
        return !c.equals("reduceScatter") || bytes >= 4L * comm.size();
    }

    /** The buffers of one collective of one size: count elements of FLOAT, blocks of {@code bytes} per rank where the collective has blocks. */
    private final class Buffers implements AutoCloseable {
        final String collective;
        /** The size measured (a point of the table). */
        final long bytes;
        final long count;
        final Buffer send;
        final Buffer recv;

        Buffers(String collective, long bytes) {
            this.collective = collective;
            this.bytes = bytes;
            long n = comm.size();
            long elements = Math.max(bytes / 4, 1);
            long sendBytes, recvBytes;
            switch (collective) {
                case "allGather", "gather" -> { sendBytes = elements * 4; recvBytes = elements * 4 * n; }
                case "scatter" -> { sendBytes = elements * 4 * n; recvBytes = elements * 4; }
                case "allToAll" -> { sendBytes = elements * 4 * n; recvBytes = elements * 4 * n; }
                case "reduceScatter" -> { elements = Math.max(elements / n, 1); sendBytes = elements * 4 * n; recvBytes = elements * 4; }
                case "broadcast" -> { sendBytes = elements * 4; recvBytes = 0; }
                default -> { sendBytes = elements * 4; recvBytes = elements * 4; }
            }
            this.count = elements;
            this.send = allocate(sendBytes);
            this.recv = recvBytes == 0 ? null : allocate(recvBytes);
        }

        private Buffer allocate(long bytes) {
            if (device) {
                var d = Cuda.allocate(bytes);
                Cuda.fill(d, (byte) 0);
                return d;
            }
            HostBuffer h = HostBuffer.allocate(bytes);
            h.segment().fill((byte) 0);
            return h;
        }

        void call() {
            switch (collective) {
                case "allReduce" -> comm.allReduce(send, recv, count, DataType.FLOAT, ReduceOp.SUM);
                case "reduce" -> comm.reduce(send, recv, count, DataType.FLOAT, ReduceOp.SUM, 0);
                case "broadcast" -> comm.broadcast(send, count, DataType.FLOAT, 0);
                case "reduceScatter" -> comm.reduceScatterBlock(send, recv, count, DataType.FLOAT, ReduceOp.SUM);
                case "allGather" -> comm.allGather(send, recv, count, DataType.FLOAT);
                case "allToAll" -> comm.allToAll(send, recv, count, DataType.FLOAT);
                case "gather" -> comm.gather(send, recv, count, DataType.FLOAT, 0);
                case "scatter" -> comm.scatter(send, recv, count, DataType.FLOAT, 0);
                default -> throw new IllegalArgumentException(collective);
            }
        }

        @Override
        public void close() {
            free(send);
            free(recv);
        }

        private void free(Buffer b) {
            if (b instanceof HostBuffer h) h.close();
            else if (b instanceof dev.ferry.DeviceBuffer d) d.close();
        }
    }

    /**
     * Warm-up (two calls, then about {@link #WARM_SECONDS} more of them, so that the path is compiled),
     * then {@value #BATCHES} batches of calls, as many per batch as rank 0's warm-up says fill
     * {@link #BATCH_SECONDS}.
     */
    private Point time(Buffers b) {
        return time(b, WARM_SECONDS);
    }

    private Point time(Buffers b, double warmSeconds) {
        long t0 = System.nanoTime();
        b.call();
        b.call();
        double warm = (System.nanoTime() - t0) / 2e9;
        int more = agreed((long) Math.min(20_000, warmSeconds / Math.max(warm, 1e-7)));
        if (more > 0) {
            t0 = System.nanoTime();
            for (int i = 0; i < more; i++) b.call();
            warm = (System.nanoTime() - t0) / 1e9 / more;
        }
        int calls = callsPerBatch(warm), batches = batches(warm);
        double[] t = new double[batches];
        for (int i = 0; i < batches; i++) t[i] = batch(b, calls);
        Arrays.sort(t);
        return new Point(t[batches / 2], t[0], t[batches - 1]);
    }

    /** Calls per batch for a call of {@code perCallSeconds} (rank 0's): a batch lasts about {@link #BATCH_SECONDS}. */
    private int callsPerBatch(double perCallSeconds) {
        return agreed((long) Math.max(1, Math.min(5000, BATCH_SECONDS / Math.max(perCallSeconds, 1e-7))));
    }

    /** Batches per point: 3 for calls longer than 50 ms, else {@value #BATCHES} (rank 0's count). */
    private int batches(double perCallSeconds) {
        return agreed(perCallSeconds > 0.05 ? 3 : BATCHES);
    }
}
