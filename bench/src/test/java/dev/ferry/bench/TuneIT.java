// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.collectives.Collective;
import dev.ferry.collectives.CostTable;
import dev.ferry.collectives.Shape;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.testing.MpiJob;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code ferry bench --tune} end to end under a real {@code mpirun -np 2} on host buffers: {@link Tune}
 * over two collectives at two sizes writes a cost table that {@code ferry.collectives.table} reads
 * (every algorithm it timed, at both sizes, for this machine's setting) and a report with the
 * planner's choice with the built-in tables and with the new one, each beside the fastest algorithm.
 */
class TuneIT {
    @Test
    void tuneWritesATableThePlannerReadsAndTheReport() throws Exception {
        Path out = BenchIT.emptyReportDir("tune-results");
        MpiJob.Result r = MpiJob.of("tune", MpiJob.Family.OPEN_MPI, 2).property("ferry.backend", "ompi")
                .main(Tune.class.getName(), "--out", out.toString(), "--sizes", "8,1k", "--collectives", "allReduce,broadcast")
                .timeout(180).run();
        assertFalse(r.timedOut(), () -> "the tune did not finish in time:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), () -> "the tune failed:\n" + r.tail(40));
        assertTrue(r.output().contains("[tune] wrote "), () -> r.tail(40));

        CostTable table = CostTable.read(out.resolve("costs.tsv"));
        List<CostTable.Setting> settings = table.settings();
        assertEquals(1, settings.size(), "one setting: this machine, " + settings);
        CostTable.Setting s = settings.get(0);
        assertEquals(2, s.ranks());
        assertEquals("ompi", s.backend());
        for (long bytes : new long[] {8, 1024}) {
            double allReduce = table.micros(s, "native", new Shape(Collective.ALL_REDUCE, DataType.DOUBLE, ReduceOp.SUM, bytes, -1));
            double broadcast = table.micros(s, "native", new Shape(Collective.BROADCAST, DataType.BYTE, null, bytes, 0));
            assertTrue(allReduce > 0 && broadcast > 0, "native timed at " + bytes + " B: allReduce " + allReduce + ", broadcast " + broadcast);
        }

        String md = Files.readString(out.resolve("tune.md"));
        assertTrue(md.contains("| bytes | fastest | us | before | us | fastest beside it | before / fastest | after | us | fastest beside it | after / fastest |"), md);
        for (String c : List.of("allReduce", "broadcast")) {
            String section = md.substring(md.indexOf("\n## " + c + "\n"));
            for (String size : List.of("| 8 B |", "| 1 KiB |")) {
                String row = section.lines().filter(l -> l.startsWith(size)).findFirst().orElseThrow(() -> new AssertionError(c + " has no row " + size + ":\n" + md));
                String[] cells = row.split("\\|");
                assertEquals(12, cells.length, row);
                for (int ratio : new int[] {7, 11}) {
                    double v = Double.parseDouble(cells[ratio].trim());
                    assertTrue(v > 0 && Double.isFinite(v), c + " " + size + ": a ratio beside the fastest, not " + cells[ratio] + " in " + row);
                }
            }
        }
    }
}
