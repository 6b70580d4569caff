// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Measured times of collectives per algorithm, as data: the planner's cost of an algorithm for a
 * call is read from here, interpolated between the measured sizes. One row per measurement, tab
 * separated, {@code #} starts a comment (a table says in comments which command on which machine and
 * commit measured it):
 *
 * <pre>
 * gpu   placement     ranks  backend  collective  algorithm  bytes  micros
 * H200  one-per-rank  2      ompi     allReduce   ipc-short  8      9.8
 * </pre>
 *
 * <p>{@code ferry bench --tune} writes such a table for the machine it runs on; the tables measured
 * for this project are resources of this module ({@code dev/ferry/collectives/costs/}), and
 * {@code ferry.collectives.table} adds one of the user's, which goes first.
 *
 * <p>A call is costed from the rows of the closest measured setting ({@link #closest}): GPU rows
 * for ranks with GPUs, host rows for ranks without; the same placement of ranks on GPUs, GPU model,
 * backend and number of ranks where measured, else the nearest (the planner takes the rows of
 * another backend for the algorithms whose times do not depend on it only:
 * {@link Algorithm#timedWithBackend}). An algorithm's times are made
 * non-decreasing in size as they are read (a point above a larger size's is taken as noise).
 * Between two measured sizes the time is interpolated on a log-log scale; below the smallest it is
 * the smallest's; above the largest it grows in proportion to the bytes.
 */
public final class CostTable {
    /** One measured setting. */
    public record Setting(String gpu, String placement, int ranks, String backend) {
        @Override
        public String toString() {
            return gpu + " " + placement + " " + ranks + " rank" + (ranks == 1 ? "" : "s") + " " + backend;
        }
    }

    private static final String INDEX = "dev/ferry/collectives/costs/index.txt";

    /** setting -> "collective algorithm" -> bytes -> micros */
    private final Map<Setting, Map<String, TreeMap<Long, Double>>> rows = new LinkedHashMap<>();
    private final Map<Setting, String> origin = new LinkedHashMap<>();

    private CostTable() {
    }

    /** An empty table (every cost unknown). */
    public static CostTable empty() {
        return new CostTable();
    }

    /** The tables measured for this project, listed in {@code costs/index.txt}. */
    public static CostTable builtIn() {
        CostTable t = new CostTable();
        ClassLoader cl = CostTable.class.getClassLoader();
        try (InputStream index = cl.getResourceAsStream(INDEX)) {
            if (index == null) {
                return t;
            }
            for (String name : new String(index.readAllBytes(), StandardCharsets.UTF_8).lines().map(String::trim).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList()) {
                try (InputStream in = cl.getResourceAsStream("dev/ferry/collectives/costs/" + name)) {
                    if (in == null) {
                        throw new IllegalStateException("cost table " + name + " is listed in " + INDEX + " but missing");
                    }
                    t.read(new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)), name);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the built-in cost tables", e);
        }
        return t;
    }

    /** A table from a file ({@code ferry bench --tune} writes one). */
    public static CostTable read(Path file) throws IOException {
        CostTable t = new CostTable();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            t.read(r, file.toString());
        }
        return t;
    }

    /** A table of these rows (tests). */
    public static CostTable of(String source, List<String> lines) {
        CostTable t = new CostTable();
        try {
            t.read(new BufferedReader(new java.io.StringReader(String.join("\n", lines))), source);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return t;
    }

    private void read(BufferedReader r, String source) throws IOException {
        String line;
        int n = 0;
        while ((line = r.readLine()) != null) {
            n++;
            String l = line.strip();
            if (l.isEmpty() || l.startsWith("#") || l.startsWith("gpu\t")) {
                continue;
            }
            String[] f = l.split("\t");
            if (f.length != 8) {
                throw new IllegalArgumentException(source + " line " + n + ": expected 8 tab-separated fields (gpu placement ranks backend collective "
                        + "algorithm bytes micros), found " + f.length + ": " + l);
            }
            Setting s = new Setting(f[0], f[1], Integer.parseInt(f[2]), f[3]);
            if (Collective.byLabel(f[4]) == null) {
                throw new IllegalArgumentException(source + " line " + n + ": unknown collective " + f[4]);
            }
            rows.computeIfAbsent(s, k -> new LinkedHashMap<>()).computeIfAbsent(Collective.byLabel(f[4]).label() + " " + f[5], k -> new TreeMap<>())
                    .put(Long.parseLong(f[6]), Double.parseDouble(f[7]));
            origin.putIfAbsent(s, source);
        }
        envelope();
    }

    /**
     * Makes every algorithm's times non-decreasing in size, each point at most the time of any
     * larger size: one algorithm does not get slower as its messages shrink, so a point above a
     * larger one is noise (the first calls of a measured path compile it, the GPU clocks up), and
     * the larger one's time is the better estimate.
     */
    private void envelope() {
        for (Map<String, TreeMap<Long, Double>> byAlgorithm : rows.values()) {
            for (TreeMap<Long, Double> points : byAlgorithm.values()) {
                double least = Double.POSITIVE_INFINITY;
                for (Map.Entry<Long, Double> e : points.descendingMap().entrySet()) {
                    least = Math.min(least, e.getValue());
                    e.setValue(least);
                }
            }
        }
    }

    /** This table with {@code first}'s settings ahead of its own (a user's table before the built-in ones). */
    public CostTable withFirst(CostTable first) {
        CostTable t = new CostTable();
        t.rows.putAll(first.rows);
        t.origin.putAll(first.origin);
        this.rows.forEach(t.rows::putIfAbsent);
        this.origin.forEach(t.origin::putIfAbsent);
        return t;
    }

    /**
     * The measured setting closest to {@code topology} under {@code backend}: ranks without GPUs take
     * only settings without GPUs, ranks with GPUs only settings with GPUs, and among those the
     * same placement counts most, then the GPU model, then the backend, then the nearest number of
     * ranks; null when no setting qualifies.
     */
    public Setting closest(Topology topology, String backend) {
        Setting best = null;
        int bestScore = Integer.MIN_VALUE;
        boolean gpus = topology.placement() != Topology.Placement.NONE;
        for (Setting s : rows.keySet()) {
            if (gpus == s.placement().equals(Topology.Placement.NONE.label())) continue;
            int score = (s.placement().equals(topology.placement().label()) ? 10000 : 0) + (s.gpu().equals(topology.gpu()) ? 1000 : 0)
                    + (s.backend().equals(backend) ? 100 : 0) - Math.min(99, Math.abs(s.ranks() - topology.size()));
            if (score > bestScore) {
                bestScore = score;
                best = s;
            }
        }
        return best;
    }

    /** Where the rows of {@code s} come from (a resource or file name). */
    public String origin(Setting s) {
        return origin.get(s);
    }

    /** The measured time of {@code algorithm} for {@code shape} in setting {@code s}, in microseconds; NaN when not measured. */
    public double micros(Setting s, String algorithm, Shape shape) {
        if (s == null) return Double.NaN;
        TreeMap<Long, Double> points = rows.get(s).get(shape.collective().label() + " " + algorithm);
        if (points == null || points.isEmpty()) return Double.NaN;
        long b = Math.max(shape.bytes(), 1);
        Map.Entry<Long, Double> lo = points.floorEntry(b), hi = points.ceilingEntry(b);
        if (lo == null) return hi.getValue();
        if (hi == null) return lo.getValue() * b / Math.max(lo.getKey(), 1);
        if (lo.getKey().equals(hi.getKey())) return lo.getValue();
        double x0 = Math.log(Math.max(lo.getKey(), 1)), x1 = Math.log(hi.getKey()), y0 = Math.log(lo.getValue()), y1 = Math.log(hi.getValue());
        return Math.exp(y0 + (y1 - y0) * (Math.log(b) - x0) / (x1 - x0));
    }

    /** The settings this table has rows for. */
    public List<Setting> settings() {
        return new ArrayList<>(rows.keySet());
    }
}
