// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The one CSV reader of the native programs' files, and StagedCheck's views of them, without MPI. */
class CsvTest {

    @Test
    void commentsAndBlankLinesSkippedHeaderNamesColumnsShortRowsLeftOut(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("x.csv");
        Files.writeString(f, """
                # a comment before the header

                a,b,c
                1,x,2.5
                # a comment between rows
                2,y
                3,z,0.125
                """);
        List<Csv.Row> rows = Csv.read(f);
        assertEquals(2, rows.size(), "the row cut short (2,y) is left out");
        assertEquals(1, rows.get(0).getLong("a"));
        assertEquals("x", rows.get(0).get("b"));
        assertEquals(2.5, rows.get(0).getDouble("c"));
        assertEquals(3, rows.get(1).getInt("a"));
        assertEquals("z", rows.get(1).get("b"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> rows.get(0).get("d"));
        assertTrue(e.getMessage().contains("'d'"), e.getMessage());
    }

    @Test
    void emptyFileHasNoRows(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("empty.csv");
        Files.writeString(f, "# only a comment\n");
        assertEquals(List.of(), Csv.read(f));
    }

    @Test
    void deviceCopyRowsRoundTripAndOtherRowsAreLeftOut(@TempDir Path dir) throws Exception {
        Path f = DeviceCopy.file(dir, "openmpi");
        assertEquals("d2dcopy-openmpi.csv", f.getFileName().toString());
        assertEquals("openmpi", DeviceCopy.tagOf("d2dcopy-openmpi.csv"));
        assertEquals(null, DeviceCopy.tagOf("native-openmpi.csv"));
        DeviceCopy.write(f, 4, "rank 0's GPU 0 (test)", new java.util.TreeMap<>(Map.of(8L, new Stats(51, 5.5, 5, 7, 5.1, 6.5),
                1024L, new Stats(51, 6.25, 6, 8, 6.1, 7.5))));
        String text = Files.readString(f);
        assertTrue(text.startsWith("# d2dcopy: one cuMemcpyAsync device-to-device copy + stream synchronize on rank 0's GPU 0 (test)"), text);
        assertTrue(text.contains("\njava,d2dcopy,cuda,device,8,4,1,1,51,5.5,5,7,5.1,6.5\n"), text);
        Files.writeString(f, text + "java,other,cuda,device,16,4,1,1,51,1,1,1,1,1\n");
        Map<Long, Stats> read = DeviceCopy.read(f);
        assertEquals(List.of(8L, 1024L), List.copyOf(read.keySet()), "the other bench's row is left out");
        assertEquals(new Stats(51, 6.25, 6, 8, 6.1, 7.5), read.get(1024L));
    }

    @Test
    void deviceCopyCountsAbout64MiBOfCopiesBetween3And51() {
        assertEquals(51, DeviceCopy.copies(8));
        assertEquals(16, DeviceCopy.copies(4 << 20));
        assertEquals(3, DeviceCopy.copies(256L << 20));
    }

    @Test
    void stagedCheckReadsFerryOsuPinnedLatencyAndWindowBandwidth(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("native.csv");
        Files.writeString(f, """
                # ferry-osu: Open MPI v4.1.6; 2 ranks
                impl,bench,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us
                c,latency,pinned,8,2,1,500,10,2.5,2.4,2.7,2.4,2.6
                c,latency,pageable,8,2,1,500,10,9.0,9.0,9.0,9.0,9.0
                c,bw,pinned,1048576,2,64,10,10,2000,1900,2100,1950,2050
                """);
        Map<Long, Double> latency = StagedCheck.readNative(f, Question.LATENCY);
        assertEquals(Map.of(8L, 2.5), latency, "pinned rows only, one-way microseconds");
        Map<Long, Double> bw = StagedCheck.readNative(f, Question.BANDWIDTH);
        assertEquals(1, bw.size());
        assertEquals(64 * 1048576 / 2000e-6 / 1e9, bw.get(1048576L), 1e-9, "window x size / median time, GB/s");
    }

    @Test
    void stagedCheckReadsTheFirstStagedConfigOfTheCPipelineLeavingFailedChecksOut(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("cstaged.csv");
        Files.writeString(f, """
                # staged-pipeline: Open MPI v4.1.6; CPU x
                bench,config,mem,chunk,depth,ring,size,window,median_GBps,min_GBps,max_GBps,check
                pingpong,host,host,0,0,0,1048576,1,20.00,19.00,21.00,ok
                pingpong,staged:auto:4:8,staged,4194304,4,8,1048576,1,10.50,10.00,11.00,ok
                window,staged:auto:4:8,staged,4194304,4,8,1048576,64,12.25,12.00,12.50,ok
                window,staged:auto:4:8,staged,4194304,4,8,2097152,64,13.00,12.00,14.00,WRONG
                pingpong,staged:4m:4:8,staged,4194304,4,8,1048576,1,99.00,99.00,99.00,ok
                """);
        StagedCheck.CStaged c = StagedCheck.readCStaged(f);
        assertEquals("staged:auto:4:8", c.config());
        assertEquals(Map.of(1048576L, 10.5), c.pingPong());
        assertEquals(Map.of(1048576L, 12.25), c.window(), "the failed check at 2 MiB is left out");
    }
}
