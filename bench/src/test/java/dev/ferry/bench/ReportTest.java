// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report from hand-made inputs in JMH's JSON shape and the C reference's CSV, without MPI. */
class ReportTest {

    private static String entry(String bench, String mem, long size, String metric, double... raw) {
        StringBuilder r = new StringBuilder();
        for (double v : raw) r.append(r.isEmpty() ? "" : ",").append(v);
        String m = "{\"score\":1.0,\"scoreUnit\":\"us/op\",\"rawData\":[[" + r + "]]}";
        return "{\"benchmark\":\"dev.ferry.bench." + bench + "\",\"mode\":\"ss\",\"measurementBatchSize\":10,"
                + "\"params\":{\"backend\":\"ompi\",\"mem\":\"" + mem + "\",\"size\":\"" + size + "\",\"ranks\":\"2\""
                + (bench.contains("Bandwidth") ? ",\"window\":\"64\"" : "") + "},"
                + (metric.equals("primary") ? "\"primaryMetric\":" + m + ",\"secondaryMetrics\":{}"
                        : "\"primaryMetric\":{\"score\":\"NaN\",\"scoreUnit\":\"us/op\",\"rawData\":[[1]]},\"secondaryMetrics\":{\"slowestRank\":" + m + "}")
                + "}";
    }

    @Test
    void tableAndPlotFromJmhJsonAndNativeCsv(@TempDir Path dir) throws Exception {
        String json = "[" + String.join(",",
                entry("PingPongLatency.roundTrip", "device", 8, "primary", 20, 21, 22),
                entry("PingPongLatency.roundTrip", "device", 1 << 20, "primary", 500, 510, 490),
                entry("UnidirectionalBandwidth.window", "device", 1 << 20, "primary", 30000, 31000, 29000),
                entry("UnidirectionalBandwidth.window", "pageable", 1 << 20, "primary", 6000, 6100, 5900),
                entry("AllReduce.allReduce", "device", 8, "secondary", 40, 41, 42)) + "]";
        Files.writeString(dir.resolve("jmh-openmpi.json"), json);
        Files.writeString(dir.resolve("native-openmpi.csv"), """
                # ferry-osu: Open MPI v5.0.7; 2 ranks; CUDA driver loaded
                impl,bench,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us
                c,latency,device,8,2,1,500,10,17.9,17.5,18.5,17.6,18.4
                c,bw,device,1048576,2,64,2,10,30000,29000,31000,29100,30900
                c,bw,device,2097152
                """);
        Files.writeString(dir.resolve("run-openmpi.properties"), "suite=full\nranks=2\nnodes=1\noversubscribed=false\n");

        Path[] out = Report.write(dir, dir, "auto");
        String md = Files.readString(out[0]);
        assertTrue(md.contains("| 8 B | 21.0 (20.0-22.0) | 17.9 (17.5-18.5) |"), md);
        // 64 x 1 MiB in 30 ms = 2.24 GB/s
        assertTrue(md.contains("| 1 MiB | 11.2 (11.0-11.4) | 2.24 (2.16-2.31) | 2.24 (2.16-2.31) |"), md);
        assertTrue(md.contains("| ompi / device | 21.0 | 2.24 (1 MiB) | 2.24 | 1.17x | 1.00x |"), md);
        assertTrue(md.contains("## Allreduce (SUM, doubles) [us]"), md);
        assertTrue(md.contains("| 8 B | 41.0 (40.0-42.0) |"), md);
        assertTrue(md.contains("**No device-to-device copy reference**"), md);
        assertFalse(md.contains("d2d copy |") || md.contains("/ copy |"), "no copy column without d2dcopy rows:\n" + md);
        BufferedImage png = ImageIO.read(out[1].toFile());
        assertEquals(1800, png.getWidth());
    }

    @Test
    void deviceCollectivesShowTheRatioToTheDeviceCopyOfTheSameSize(@TempDir Path dir) throws Exception {
        String json = "[" + String.join(",",
                entry("AllReduce.allReduce", "device", 8, "secondary", 40, 41, 42),
                entry("AllReduce.allReduce", "device", 1 << 20, "secondary", 90, 100, 110),
                entry("AllReduce.allReduce", "pageable", 1 << 20, "secondary", 300, 300, 300),
                entry("ReduceScatter.reduceScatter", "device", 1 << 20, "secondary", 60, 60, 60),
                entry("AllGather.allGather", "device", 8, "secondary", 15, 15, 15),
                entry("UnidirectionalBandwidth.window", "device", 1 << 20, "primary", 30000, 31000, 29000)) + "]";
        Files.writeString(dir.resolve("jmh-openmpi.json"), json);
        Files.writeString(dir.resolve("native-openmpi.csv"), """
                impl,bench,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us
                c,allreduce,device,8,2,1,500,10,20,19,21,19.5,20.5
                c,reducescatter,device,1048576,2,1,50,10,40,39,41,39.5,40.5
                """);
        // what BenchMain writes: one row per size, the other rows of a CSV ignored
        DeviceCopy.write(dir.resolve("d2dcopy-openmpi.csv"), 2, "rank 0's GPU 0 (test)",
                new java.util.TreeMap<>(java.util.Map.of(8L, new Stats(51, 10, 9, 12, 9.5, 11), (long) (1 << 20), new Stats(51, 20, 19, 22, 19.5, 21))));
        Files.writeString(dir.resolve("run-openmpi.properties"), "suite=full\nranks=2\nnodes=1\nd2dcopy=one device-to-device copy per size on rank 0's GPU\n");
        assertEquals(2, DeviceCopy.read(dir.resolve("d2dcopy-openmpi.csv")).size());

        Path[] out = Report.write(dir, dir, "auto");
        String md = Files.readString(out[0]);
        assertTrue(md.contains("**Device collectives beside one device-to-device copy**"), md);
        assertTrue(md.contains("- device-to-device copy reference: one device-to-device copy per size on rank 0's GPU"), md);
        assertTrue(md.contains("| size | ompi / pageable | ompi / device | C / device | d2d copy | ompi / device / copy | C / device / copy |"), md);
        // allreduce at 8 B: 41 us / 10 us, C 20 / 10; the pageable series gets no ratio
        assertTrue(md.contains("| 8 B |  | 41.0 (40.0-42.0) | 20.0 (19.0-21.0) | 10.0 (9.00-12.0) | 4.10x | 2.00x |"), md);
        assertTrue(md.contains("| 1 MiB | 300 (300-300) | 100 (90.0-110) |  | 20.0 (19.0-22.0) | 5.00x |  |"), md);
        assertTrue(md.contains("## Reduce-scatter (SUM, doubles, size sent per rank) [us]"), md);
        assertTrue(md.contains("| 1 MiB | 60.0 (60.0-60.0) | 40.0 (39.0-41.0) | 20.0 (19.0-22.0) | 3.00x | 2.00x |"), md);
        assertTrue(md.contains("## All-gather (size received per rank) [us]"), md);
        assertTrue(md.contains("| 8 B | 15.0 (15.0-15.0) | 10.0 (9.00-12.0) | 1.50x |"), md);
        // point-to-point tables are not compared with the copy
        String bw = md.substring(md.indexOf("## Unidirectional bandwidth"), md.indexOf("## Allreduce"));
        assertFalse(bw.contains("copy"), bw);
        assertEquals(1800, ImageIO.read(out[1].toFile()).getWidth());
    }

    @Test
    void numbersKeepThreeSignificantDigits() {
        assertEquals("0.00123", Report.num(0.0012345));
        assertEquals("1.23", Report.num(1.2345));
        assertEquals("12.3", Report.num(12.345));
        assertEquals("1235", Report.num(1234.5));
    }
}
