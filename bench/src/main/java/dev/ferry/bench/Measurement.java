// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One measured point: a question, an implementation (the Java suite on a backend, or the native C
 * reference), a memory kind and a message size, with the statistics of its measured batches (time
 * per operation in microseconds). Read from JMH's JSON and from the C reference's CSV.
 *
 * @param impl     {@code java} or {@code c}
 * @param tag      the run's tag (the launcher's MPI family: {@code openmpi}, {@code mpich})
 * @param question what was measured
 * @param backend  Ferry backend for Java, {@code C} for the reference
 * @param memory   memory kind of the buffers
 * @param size     message size in bytes
 * @param ranks    ranks in the job
 * @param window   messages per window (bandwidth questions), else 1
 * @param reps     invocations per batch
 * @param time     time per operation over the measured batches, microseconds
 */
public record Measurement(String impl, String tag, Question question, String backend, Memory memory, long size, int ranks, int window,
                          int reps, Stats time) {

    /** True for the native C reference. */
    public boolean isNative() {
        return impl.equals("c");
    }

    /** "ompi / pinned", "C / device"; with the tag when the report mixes several MPI families. */
    public String series(boolean withTag) {
        return backend + " / " + memory.id() + (withTag ? " [" + tag + "]" : "");
    }

    /** What the report shows: latency in microseconds, or bandwidth in GB/s (10^9 bytes per second). */
    public Stats shown() {
        if (!question.isBandwidth()) {
            return time;
        }
        long bytes = question.bytesPerOperation(size, window);
        return time.mapDecreasing(us -> bytes / (us * 1e3));
    }

    /** Every measurement in a JMH JSON result file written by {@link BenchMain}. */
    static List<Measurement> readJmh(Path json, String tag) throws IOException {
        List<Measurement> out = new ArrayList<>();
        for (Object o : Json.array(Json.parse(Files.readString(json)))) {
            Map<String, Object> e = Json.object(o);
            Question q = Question.ofBenchmark(String.valueOf(e.get("benchmark")));
            if (q == null) {
                continue;
            }
            Map<String, Object> params = Json.object(e.get("params"));
            Map<String, Object> metric = q.isCollective()
                    ? Json.object(Json.object(e.get("secondaryMetrics")).get(LockstepProfiler.SLOWEST_RANK))
                    : Json.object(e.get("primaryMetric"));
            List<Double> raw = new ArrayList<>();
            for (Object fork : Json.array(metric.get("rawData"))) {
                for (Object v : Json.array(fork)) {
                    raw.add(Json.number(v));
                }
            }
            double[] values = raw.stream().mapToDouble(Double::doubleValue).toArray();
            String unit = String.valueOf(metric.get("scoreUnit"));
            if (!unit.startsWith("us")) {
                throw new IOException(json + ": unexpected unit " + unit + " for " + e.get("benchmark"));
            }
            out.add(new Measurement("java", tag, q, String.valueOf(params.get("backend")), Memory.parse(String.valueOf(params.get("mem"))),
                    Long.parseLong(String.valueOf(params.get("size"))), Integer.parseInt(String.valueOf(params.get("ranks"))),
                    params.containsKey("window") ? Integer.parseInt(String.valueOf(params.get("window"))) : 1,
                    (int) Json.number(e.get("measurementBatchSize")), Stats.of(values)));
        }
        return out;
    }

    /** Every measurement in a CSV written by the native C reference ({@code ferry-osu}). */
    static List<Measurement> readNative(Path csv, String tag) throws IOException {
        List<Measurement> out = new ArrayList<>();
        for (Csv.Row r : Csv.read(csv)) {
            Stats s = new Stats(r.getInt("iterations"), r.getDouble("median_us"), r.getDouble("min_us"), r.getDouble("max_us"),
                    r.getDouble("p10_us"), r.getDouble("p90_us"));
            out.add(new Measurement("c", tag, Question.parse(r.get("bench")), "C", Memory.parse(r.get("mem")), r.getLong("size"),
                    r.getInt("ranks"), r.getInt("window"), r.getInt("reps"), s));
        }
        return out;
    }
}
