// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.DeviceBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The yardstick of collectives on device buffers: one device-to-device copy of the same size on
 * the same GPU, measured in the same run. How it is timed (here, once, for {@link BenchMain} and
 * {@link DeviceCollectivesVsCopy}) and how the suite records it (the rows of
 * {@code d2dcopy-TAG.csv}, read by {@link Report}).
 *
 * <p>Timing: {@code cuMemcpyAsync} of {@code bytes} from one device buffer to another on a stream,
 * then a synchronize of that stream, timed with {@link System#nanoTime()} around both; 3 copies
 * thrown away, then {@link #copies(long)} single copies measured; the result is their
 * {@link Stats}. The caller runs it on one rank (rank 0) while the others wait, so that nothing
 * else uses the GPU.
 *
 * <p>File: the columns of the C reference's CSV plus {@code backend}:
 * {@code impl,bench,backend,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us},
 * one row per size: {@code java,d2dcopy,cuda,device,SIZE,RANKS,1,1,COPIES,...} (a pseudo-benchmark
 * {@value #BENCH} of backend {@value #BACKEND}: every measurement is one copy).
 */
final class DeviceCopy {
    /** The pseudo-benchmark's name in the CSV (and the file name's prefix). */
    static final String BENCH = "d2dcopy";
    /** The backend column of its rows. */
    static final String BACKEND = "cuda";
    /** Copies thrown away before measuring. */
    static final int WARMUP = 3;

    private DeviceCopy() {
    }

    /** Measured copies of {@code bytes}: about 64 MiB copied in all, at least 3, at most 51. */
    static int copies(long bytes) {
        return (int) Math.min(51, Math.max(3, (64L << 20) / Math.max(1, bytes)));
    }

    /**
     * Time of single device-to-device copies of {@code bytes} from {@code src} to {@code dst} on
     * {@code stream} (copy, then stream synchronize), in microseconds, over {@link #copies(long)}
     * copies after {@value #WARMUP} thrown away. The buffers must hold {@code bytes}.
     */
    static Stats time(DeviceBuffer dst, DeviceBuffer src, long bytes, CudaStream stream) {
        return time(() -> Cuda.copyAsync(dst.address(), src.address(), bytes, stream), bytes, stream);
    }

    /** The same timing for any copy of {@code bytes} that {@code enqueue} puts on {@code stream} (a peer copy, for one). */
    static Stats time(Runnable enqueue, long bytes, CudaStream stream) {
        double[] us = new double[copies(bytes)];
        for (int i = -WARMUP; i < us.length; i++) {
            long t0 = System.nanoTime();
            enqueue.run();
            stream.synchronize();
            if (i >= 0) {
                us[i] = (System.nanoTime() - t0) / 1e3;
            }
        }
        return Stats.of(us);
    }

    /**
     * Times a copy of every size in {@code sizes} on this process's GPU (two zeroed device buffers
     * of the largest size, a stream of its own, all freed before returning); by size, ascending.
     */
    static Map<Long, Stats> timeAll(Iterable<Long> sizes) {
        long max = 1;
        for (long s : sizes) {
            max = Math.max(max, s);
        }
        Map<Long, Stats> out = new TreeMap<>();
        Cuda.defaultDevice();
        try (DeviceBuffer src = Cuda.allocate(max); DeviceBuffer dst = Cuda.allocate(max); CudaStream stream = Cuda.newStream()) {
            Cuda.fill(src, (byte) 0);
            Cuda.fill(dst, (byte) 0);
            for (long s : sizes) {
                out.put(s, time(dst, src, s, stream));
            }
        }
        return out;
    }

    /** The file of run {@code tag} in a results folder. */
    static Path file(Path folder, String tag) {
        return folder.resolve(BENCH + "-" + tag + ".csv");
    }

    /** The tag of a results folder's file name {@code d2dcopy-TAG.csv}, or null for another file. */
    static String tagOf(String fileName) {
        String prefix = BENCH + "-";
        return fileName.startsWith(prefix) && fileName.endsWith(".csv") ? fileName.substring(prefix.length(), fileName.length() - 4) : null;
    }

    /** Writes {@code bySize} to {@code csv} (see the class comment), under a comment line that says what was timed where. */
    static void write(Path csv, int ranks, String where, Map<Long, Stats> bySize) throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append("# ").append(BENCH).append(": one cuMemcpyAsync device-to-device copy + stream synchronize on ").append(where)
                .append(" while the other ranks wait; median of single copies\n");
        sb.append("impl,bench,backend,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us\n");
        for (Map.Entry<Long, Stats> e : bySize.entrySet()) {
            Stats s = e.getValue();
            sb.append(String.join(",", "java", BENCH, BACKEND, Memory.DEVICE.id(), Long.toString(e.getKey()), Integer.toString(ranks), "1", "1",
                    Integer.toString(s.n()), g6(s.median()), g6(s.min()), g6(s.max()), g6(s.p10()), g6(s.p90()))).append('\n');
        }
        Files.writeString(csv, sb.toString(), StandardCharsets.UTF_8);
    }

    /** Six significant digits without trailing zeros, as C's {@code %.6g} in ferry-osu's rows (plain notation). */
    static String g6(double v) {
        if (!Double.isFinite(v)) {
            return "NaN";
        }
        return new java.math.BigDecimal(v).round(new java.math.MathContext(6)).stripTrailingZeros().toPlainString();
    }

    /** The copy times in {@code csv} by size (its {@value #BENCH} rows; others left out). */
    static Map<Long, Stats> read(Path csv) throws IOException {
        Map<Long, Stats> out = new TreeMap<>();
        for (Csv.Row r : Csv.read(csv)) {
            if (r.get("bench").equals(BENCH)) {
                out.put(r.getLong("size"), new Stats(r.getInt("iterations"), r.getDouble("median_us"), r.getDouble("min_us"),
                        r.getDouble("max_us"), r.getDouble("p10_us"), r.getDouble("p90_us")));
            }
        }
        return out;
    }
}
