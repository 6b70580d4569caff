// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Turns a results folder into {@code results.md} (a summary table, then one table per question) and
 * {@code results.png} (one log-log chart per question, one line per backend and memory kind, the
 * native C reference beside them, physical limits as horizontal lines).
 *
 * <p>Reads, from the folder: {@code jmh-TAG.json} (JMH's JSON from {@link BenchMain}),
 * {@code run-TAG.properties} (its notes), {@code native-TAG.csv} (the C reference) and
 * {@code d2dcopy-TAG.csv} (one device-to-device copy per size, {@link DeviceCopy}: where it is
 * there, each collective table gets a column with the copy's time and, for every device series,
 * the ratio of the collective's time to the copy's of the same size; where it is not, the report
 * says so and has no such columns). TAG is the launcher's MPI family; a folder may hold several
 * (an Open MPI and an MPICH job).
 *
 * <pre>java -cp CLASSPATH dev.ferry.bench.Report DIR [--out DIR] [--limits auto|gpu|none]</pre>
 *
 * <p>Needs the {@code java.desktop} module for the plot; without it (a jlinked runtime that leaves
 * it out) or without fonts, the table is still written and the reason printed.
 */
public final class Report {
    private final List<Measurement> data;
    private final Map<String, Properties> runs;
    private final Map<String, List<String>> nativeNotes;
    /** The device-to-device copy reference by tag, then by size ({@link DeviceCopy}); no entry for a run without one. */
    private final Map<String, Map<Long, Stats>> copies;
    private final boolean withTag;
    private final String limits;

    private Report(List<Measurement> data, Map<String, Properties> runs, Map<String, List<String>> nativeNotes,
                   Map<String, Map<Long, Stats>> copies, String limits) {
        this.data = data;
        this.runs = runs;
        this.nativeNotes = nativeNotes;
        this.copies = copies;
        this.withTag = data.stream().map(Measurement::tag).distinct().count() > 1;
        this.limits = limits;
    }

    /** {@code Report DIR [--out DIR] [--limits auto|gpu|none]}. */
    public static void main(String[] args) throws IOException {
        Path in = null;
        Path out = null;
        String limits = "auto";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--limits" -> limits = args[++i];
                case "-h", "--help" -> {
                    System.out.println("usage: java -cp CLASSPATH dev.ferry.bench.Report DIR [--out DIR] [--limits auto|gpu|none]");
                    return;
                }
                default -> in = Path.of(args[i]);
            }
        }
        if (in == null) {
            System.err.println("usage: java -cp CLASSPATH dev.ferry.bench.Report DIR [--out DIR] [--limits auto|gpu|none]");
            System.exit(2);
        }
        Path[] written = write(in, out == null ? in : out, limits);
        System.out.println("[report] table: " + written[0]);
        System.out.println("[report] plot:  " + (written[1] != null ? written[1] : "(not drawn, see above)"));
    }

    /** Reads {@code in}, writes results.md and results.png into {@code out}; returns their paths (the plot's null if it could not be drawn). */
    public static Path[] write(Path in, Path out, String limits) throws IOException {
        List<Measurement> data = new ArrayList<>();
        Map<String, Properties> runs = new TreeMap<>();
        Map<String, List<String>> notes = new TreeMap<>();
        Map<String, Map<Long, Stats>> copies = new TreeMap<>();
        try (Stream<Path> files = Files.list(in)) {
            for (Path f : files.sorted().toList()) {
                String n = f.getFileName().toString();
                if (DeviceCopy.tagOf(n) != null) {
                    Map<Long, Stats> c = DeviceCopy.read(f);
                    if (!c.isEmpty()) {
                        copies.put(DeviceCopy.tagOf(n), c);
                    }
                } else if (n.startsWith("jmh-") && n.endsWith(".json")) {
                    data.addAll(Measurement.readJmh(f, n.substring(4, n.length() - 5)));
                } else if (n.startsWith("native-") && n.endsWith(".csv")) {
                    String tag = n.substring(7, n.length() - 4);
                    data.addAll(Measurement.readNative(f, tag));
                    notes.put(tag, Files.readAllLines(f).stream().filter(l -> l.startsWith("#")).map(l -> l.substring(1).trim()).toList());
                } else if (n.startsWith("run-") && n.endsWith(".properties")) {
                    Properties p = new Properties();
                    try (Reader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                        p.load(r);
                    }
                    runs.put(n.substring(4, n.length() - 11), p);
                }
            }
        }
        if (data.isEmpty() && runs.isEmpty() && notes.isEmpty()) {
            throw new IOException("no results in " + in + " (expected jmh-*.json from BenchMain and/or native-*.csv from ferry-osu)");
        }
        Files.createDirectories(out);
        Report r = new Report(data, runs, notes, copies, limits);
        Path md = out.resolve("results.md");
        Path png = out.resolve("results.png");
        String plotProblem = null;
        try {
            if (!data.isEmpty()) {
                r.plot(png);
            } else {
                plotProblem = "nothing was measured: everything asked for was skipped (reasons above)";
                System.err.println("[report] " + plotProblem);
                png = null;
            }
        } catch (IOException | RuntimeException | LinkageError e) {
            plotProblem = "the plot could not be drawn here (" + e + "); run Report on a machine with a full JDK "
                    + "(module java.desktop and fonts): java -cp CLASSPATH dev.ferry.bench.Report " + in;
            System.err.println("[report] " + plotProblem);
            png = null;
        }
        Files.writeString(md, r.markdown(png != null ? png.getFileName().toString() : null, plotProblem), StandardCharsets.UTF_8);
        return new Path[] {md, png};
    }

    // ---- series ------------------------------------------------------------------------------

    private String series(Measurement m) {
        return m.series(withTag);
    }

    /** Series in a stable order: Java backends as first seen, by memory kind, then the C reference. */
    List<String> seriesOrder(List<Measurement> ms) {
        Comparator<Measurement> order = Comparator.comparing(Measurement::isNative)
                .thenComparing(Measurement::tag)
                .thenComparing(m -> backendRank(m.backend()))
                .thenComparing(Measurement::memory);
        Set<String> s = new LinkedHashSet<>();
        ms.stream().sorted(order).forEach(m -> s.add(series(m)));
        return new ArrayList<>(s);
    }

    private int backendRank(String b) {
        List<String> known = List.of("ompi", "mvapich", "staged");
        int i = known.indexOf(b);
        return i < 0 ? known.size() : i;
    }

    private List<Measurement> of(Question q) {
        return data.stream().filter(m -> m.question() == q).toList();
    }

    private boolean gpuLimits() {
        return switch (limits) {
            case "gpu" -> true;
            case "none" -> false;
            default -> data.stream().anyMatch(m -> m.memory() != Memory.PAGEABLE);
        };
    }

    // ---- plot (all of java.desktop stays in Charts, so that this class loads without it) -------

    private void plot(Path png) throws IOException {
        Charts.draw(png, data, seriesOrder(data), this::series, gpuLimits(), subtitle(), copies, withTag);
    }

    private List<String> subtitle() {
        List<String> sub = new ArrayList<>();
        sub.add(context());
        sub.add("lines: median of the measured batches; whiskers: min to max; dashed: native C reference (ferry-osu) on the same MPI");
        if (oversubscribed()) {
            sub.add("OVERSUBSCRIBED (more ranks than cores or mpirun --oversubscribe): latency is inflated; these numbers show the path works, not its speed");
        }
        if (busy()) {
            sub.add("BUSY MACHINE (load above the core count while measuring): timings are noisy");
        }
        return sub;
    }

    static String title(Question q) {
        return switch (q) {
            case LATENCY -> "Ping-pong latency (one way)";
            case BANDWIDTH -> "Unidirectional bandwidth (window)";
            case BIBANDWIDTH -> "Bi-directional bandwidth";
            case BROADCAST -> "Broadcast from rank 0";
            case ALLREDUCE -> "Allreduce (SUM, doubles)";
            case REDUCE_SCATTER -> "Reduce-scatter (SUM, doubles, size sent per rank)";
            case ALLGATHER -> "All-gather (size received per rank)";
            case ALLTOALL -> "All-to-all (size per pair)";
        };
    }

    private boolean busy() {
        return runs.values().stream().anyMatch(p -> "true".equals(p.getProperty("busy")));
    }

    private boolean oversubscribed() {
        return runs.values().stream().anyMatch(p -> "true".equals(p.getProperty("oversubscribed")));
    }

    /** One line: suite, ranks, nodes, MPI library, date. */
    private String context() {
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Properties> e : runs.entrySet()) {
            Properties p = e.getValue();
            String lib = p.stringPropertyNames().stream().filter(k -> k.endsWith(".library")).sorted().map(p::getProperty)
                    .map(v -> v.replaceAll(" at .*", "")).findFirst().orElse(e.getKey());
            parts.add(p.getProperty("suite", "?") + " suite, " + p.getProperty("ranks", "?") + " ranks on " + p.getProperty("nodes", "?")
                    + " node(s), " + lib + ", " + p.getProperty("date", "").replaceAll("T(\\d\\d:\\d\\d).*", " $1"));
        }
        if (parts.isEmpty() && !data.isEmpty()) {
            parts.add(data.get(0).ranks() + " ranks (native reference only)");
        }
        return String.join("; ", parts);
    }

    // ---- markdown ----------------------------------------------------------------------------

    private String markdown(String pngName, String plotProblem) {
        StringBuilder sb = new StringBuilder();
        sb.append("# Ferry benchmark results\n\n");
        sb.append(context()).append(".\n\n");
        if (oversubscribed()) {
            sb.append("> **Oversubscribed**: more ranks than cores on a node, or `mpirun --oversubscribe`. Waiting ranks yield their core, "
                    + "which inflates latency; these numbers show that the paths work, not how fast they are.\n\n");
        }
        if (busy()) {
            sb.append("> **Busy machine**: the load average was above the core count while the suite ran "
                    + "(other work competed for the cores); expect noisy timings and wide spreads.\n\n");
        }
        for (Map.Entry<String, Properties> e : runs.entrySet()) {
            Properties p = e.getValue();
            sb.append("**Java suite (").append(e.getKey()).append(")**\n\n");
            sb.append("- command: `").append(p.getProperty("launcher", "?")).append("`\n");
            sb.append("- placement: ").append(p.getProperty("placement", "?")).append("; load ").append(p.getProperty("load", "?")).append('\n');
            sb.append("- ").append(p.getProperty("java", "Java ?")).append("; CUDA: ").append(p.getProperty("cuda", "?")).append('\n');
            sb.append("- device-to-device copy reference: ").append(p.getProperty("d2dcopy", "(not recorded by this run)")).append('\n');
            for (String k : new TreeSet<>(p.stringPropertyNames())) {
                if (k.startsWith("backend.") && k.chars().filter(c -> c == '.').count() == 1) {
                    sb.append("- backend ").append(k.substring(8)).append(": ").append(p.getProperty(k));
                    String threads = p.getProperty(k + ".threads");
                    sb.append(threads != null ? " (" + threads + ")" : "").append('\n');
                }
            }
            for (String skip : p.getProperty("skipped", "").split(" \\| ")) {
                if (!skip.isBlank()) {
                    sb.append("- skipped ").append(skip).append('\n');
                }
            }
            if (p.getProperty("stopped") != null) {
                sb.append("- **stopped early**: ").append(p.getProperty("stopped")).append('\n');
            }
            sb.append('\n');
        }
        for (Map.Entry<String, List<String>> e : nativeNotes.entrySet()) {
            sb.append("**Native C reference (").append(e.getKey()).append(")**\n\n");
            e.getValue().forEach(n -> sb.append("- ").append(n).append('\n'));
            sb.append('\n');
        }
        sb.append("How to read: each cell is the **median** over the measured batches, with the spread (min-max) in brackets. "
                + "A batch is many back-to-back operations timed as one (JMH `SingleShotTime`), after a barrier. "
                + "Latency is one way (half the ping-pong round trip), in microseconds. Bandwidth is payload bytes per second "
                + "in GB/s (10^9 B/s): window x size / time of one window (both directions counted for bi-directional). "
                + "Collectives show the time per call of the slowest rank. `C` columns are the native reference (`ferry-osu`) "
                + "with the same sizes and batches on the same MPI library: the gap between a Java column and the C column "
                + "of the same memory kind is Ferry's (and the JVM's) cost.\n\n");
        sb.append(copyNote()).append("\n\n");

        sb.append("## Summary\n\n");
        summary(sb);
        if (pngName != null) {
            sb.append("\n![benchmark plot](").append(pngName).append(")\n");
        } else if (plotProblem != null) {
            sb.append("\n(").append(plotProblem).append(")\n");
        }
        for (Question q : Question.values()) {
            List<Measurement> ms = of(q);
            if (ms.isEmpty()) {
                continue;
            }
            sb.append("\n## ").append(title(q)).append(q.isBandwidth() ? " [GB/s]" : " [us]").append("\n\n");
            sb.append(Character.toUpperCase(q.title().charAt(0))).append(q.title().substring(1)).append(". ");
            Measurement any = ms.get(0);
            sb.append(any.time().n()).append(" measured batches per cell");
            if (q.hasWindow()) {
                sb.append("; window (messages in flight) by size: ").append(windows(ms));
            }
            sb.append(".\n\n");
            List<String> cols = seriesOrder(ms);
            // device series of a collective beside the copy of their run: the copy's time once per run, a ratio per series
            List<String> ratioCols = q.isCollective()
                    ? cols.stream().filter(c -> copyOf(ms.stream().filter(m -> series(m).equals(c)).findFirst().orElseThrow()) != null).toList()
                    : List.of();
            List<String> copyTags = ratioCols.stream().map(c -> ms.stream().filter(m -> series(m).equals(c)).findFirst().orElseThrow().tag())
                    .distinct().toList();
            sb.append("| size |");
            cols.forEach(c -> sb.append(' ').append(c).append(" |"));
            copyTags.forEach(t -> sb.append(" d2d copy").append(withTag ? " [" + t + "]" : "").append(" |"));
            ratioCols.forEach(c -> sb.append(' ').append(c).append(" / copy |"));
            sb.append("\n|---:|");
            for (int i = 0; i < cols.size() + copyTags.size() + ratioCols.size(); i++) {
                sb.append("---:|");
            }
            sb.append('\n');
            TreeSet<Long> sizes = new TreeSet<>();
            ms.forEach(m -> sizes.add(m.size()));
            for (long size : sizes) {
                sb.append("| ").append(Suite.formatSize(size)).append(" |");
                for (String c : cols) {
                    Measurement m = ms.stream().filter(x -> x.size() == size && series(x).equals(c)).findFirst().orElse(null);
                    sb.append(' ').append(m == null ? "" : cell(m.shown())).append(" |");
                }
                for (String t : copyTags) {
                    Stats copy = copies.get(t).get(size);
                    sb.append(' ').append(copy == null ? "" : cell(copy)).append(" |");
                }
                for (String c : ratioCols) {
                    Measurement m = ms.stream().filter(x -> x.size() == size && series(x).equals(c)).findFirst().orElse(null);
                    Stats copy = m == null ? null : copyOf(m).get(size);
                    sb.append(' ').append(copy == null ? "" : ratio(m.time().median() / copy.median())).append(" |");
                }
                sb.append('\n');
            }
        }
        return sb.toString();
    }

    /** The copy times of {@code m}'s run when {@code m} is on device memory and its run timed the copy, else null. */
    private Map<Long, Stats> copyOf(Measurement m) {
        return m.memory() == Memory.DEVICE ? copies.get(m.tag()) : null;
    }

    /** What the copy columns are, or why there are none. */
    private String copyNote() {
        if (copies.isEmpty()) {
            boolean device = data.stream().anyMatch(m -> m.memory() == Memory.DEVICE && m.question().isCollective());
            return "**No device-to-device copy reference** in this folder (no `" + DeviceCopy.BENCH + "-*.csv`): "
                    + (device ? "the run that measured device collectives did not time the copy"
                            : "device memory was not measured by the Java suite (without CUDA, or not asked for with `--mem`)")
                    + ", so the collective tables have no copy or ratio columns.";
        }
        return "**Device collectives beside one device-to-device copy**: the `d2d copy` column of each collective table is one "
                + "`cuMemcpyAsync` device-to-device copy of `size` bytes on rank 0's GPU followed by a stream synchronize, "
                + "median of single copies (min-max), timed by the Java suite in the same run while the other ranks waited "
                + "(`" + DeviceCopy.BENCH + "-TAG.csv`, backend `" + DeviceCopy.BACKEND + "`); `SERIES / copy` is the collective's median "
                + "time over the copy's at the same size (1.00x: as fast as copying the data once on one GPU). Sizes as in each table: "
                + "what each rank sends (bcast, allreduce, reducescatter), receives (allgather), or sends to each rank (alltoall: "
                + "the buffers hold size x ranks).";
    }

    private static String windows(List<Measurement> ms) {
        Map<Long, Integer> w = new TreeMap<>();
        ms.forEach(m -> w.put(m.size(), m.window()));
        List<String> parts = new ArrayList<>();
        Integer last = null;
        for (Map.Entry<Long, Integer> e : w.entrySet()) {
            if (!Objects.equals(e.getValue(), last)) {
                parts.add(e.getValue() + " from " + Suite.formatSize(e.getKey()));
                last = e.getValue();
            }
        }
        return String.join(", ", parts);
    }

    /** Per series: smallest-size latency, best and largest-size bandwidth, and the ratio to C of the same memory kind. */
    private void summary(StringBuilder sb) {
        List<Measurement> lat = of(Question.LATENCY);
        List<Measurement> bw = of(Question.BANDWIDTH);
        if (lat.isEmpty() && bw.isEmpty()) {
            sb.append("(no point-to-point results)\n");
            return;
        }
        List<Measurement> both = new ArrayList<>(lat);
        both.addAll(bw);
        long minSize = both.stream().mapToLong(Measurement::size).min().orElse(0);
        long maxSize = both.stream().mapToLong(Measurement::size).max().orElse(0);
        sb.append("| series | latency at ").append(Suite.formatSize(minSize)).append(" [us] | best bandwidth [GB/s] | bandwidth at ")
                .append(Suite.formatSize(maxSize)).append(" [GB/s] | latency / C | best bandwidth / C |\n");
        sb.append("|---|---:|---:|---:|---:|---:|\n");
        for (String s : seriesOrder(both)) {
            Measurement l = find(lat, s, minSize);
            List<Measurement> b = bw.stream().filter(m -> series(m).equals(s)).toList();
            Measurement best = b.stream().max(Comparator.comparingDouble(m -> m.shown().median())).orElse(null);
            Measurement big = find(bw, s, maxSize);
            Measurement any = both.stream().filter(m -> series(m).equals(s)).findFirst().orElseThrow();
            String latRatio = "";
            String bwRatio = "";
            if (!any.isNative()) {
                Measurement cl = lat.stream().filter(m -> m.isNative() && m.memory() == any.memory() && m.tag().equals(any.tag())
                        && m.size() == minSize).findFirst().orElse(null);
                // C's best over the sizes both sides measured: a C run stopped early by its time limit
                // must not be compared at sizes it never reached
                java.util.Set<Long> javaSizes = b.stream().map(Measurement::size).collect(java.util.stream.Collectors.toSet());
                List<Measurement> cAll = bw.stream().filter(m -> m.isNative() && m.memory() == any.memory() && m.tag().equals(any.tag())).toList();
                Measurement cb = cAll.stream().max(Comparator.comparingDouble(Measurement::size)).map(Measurement::size).orElse(-1L)
                        < b.stream().mapToLong(Measurement::size).max().orElse(0) ? null
                        : cAll.stream().filter(m -> javaSizes.contains(m.size())).max(Comparator.comparingDouble(m -> m.shown().median())).orElse(null);
                if (l != null && cl != null) latRatio = ratio(l.shown().median() / cl.shown().median());
                if (best != null && cb != null) bwRatio = ratio(best.shown().median() / cb.shown().median());
            }
            sb.append("| ").append(s).append(" | ")
                    .append(l == null ? "" : num(l.shown().median())).append(" | ")
                    .append(best == null ? "" : num(best.shown().median()) + " (" + Suite.formatSize(best.size()) + ")").append(" | ")
                    .append(big == null ? "" : num(big.shown().median())).append(" | ")
                    .append(latRatio).append(" | ").append(bwRatio).append(" |\n");
        }
    }

    private Measurement find(List<Measurement> ms, String s, long size) {
        return ms.stream().filter(m -> series(m).equals(s) && m.size() == size).findFirst().orElse(null);
    }

    private static String ratio(double r) {
        return Double.isFinite(r) ? String.format(Locale.ROOT, "%.2fx", r) : "";
    }

    private static String cell(Stats s) {
        return num(s.median()) + " (" + num(s.min()) + "-" + num(s.max()) + ")";
    }

    /** Three significant digits without exponents: 0.00123, 1.23, 12.3, 123, 1234. */
    static String num(double v) {
        if (!Double.isFinite(v)) return "n/a";
        double a = Math.abs(v);
        if (a >= 100) return String.format(Locale.ROOT, "%.0f", v);
        if (a >= 10) return String.format(Locale.ROOT, "%.1f", v);
        if (a >= 1) return String.format(Locale.ROOT, "%.2f", v);
        if (a == 0) return "0";
        int digits = (int) Math.ceil(-Math.log10(a)) + 2;
        return String.format(Locale.ROOT, "%." + digits + "f", v);
    }
}
