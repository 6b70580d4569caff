package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        BufferedImage png = ImageIO.read(out[1].toFile());
        assertEquals(1800, png.getWidth());
    }

    @Test
    void numbersKeepThreeSignificantDigits() {
        assertEquals("0.00123", Report.num(0.0012345));
        assertEquals("1.23", Report.num(1.2345));
        assertEquals("12.3", Report.num(12.345));
        assertEquals("1235", Report.num(1234.5));
    }
}
