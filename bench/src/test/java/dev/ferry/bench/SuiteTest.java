// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SuiteTest {

    @Test
    void fullSuiteRunsFrom8BytesTo256MiBInStepsOf4() {
        Suite full = Suite.named("full");
        assertEquals(8L, full.sizes().get(0));
        assertEquals(256 * Suite.MI, full.sizes().get(full.sizes().size() - 1));
        assertEquals(14, full.sizes().size());
        assertEquals(32L, full.sizes().get(1));
    }

    @Test
    void windowIs64UnlessThatPutsTooManyBytesInFlight() {
        Suite full = Suite.named("full");
        assertEquals(64, full.window(8));
        assertEquals(64, full.window(4 * Suite.MI));
        assertEquals(8, full.window(32 * Suite.MI));
        assertEquals(1, full.window(256 * Suite.MI));
    }

    @Test
    void repsFillTheBatchWithinBounds() {
        Suite quick = Suite.named("quick");
        assertEquals(500, quick.reps(Question.LATENCY, 8, 2), "capped at maxReps");
        assertEquals(1, quick.reps(Question.LATENCY, 8 * Suite.MI, 2), "at least minReps");
        assertEquals(4, quick.reps(Question.LATENCY, Suite.MI, 2), "8 MiB batch / 2 MiB per round trip");
        assertEquals(2, quick.reps(Question.ALLTOALL, 2 * Suite.MI, 2), "8 MiB / (2 MiB x 2 ranks)");
    }

    @Test
    void firstRunOfASeriesWarmsUpTheJit() {
        Suite quick = Suite.named("quick");
        assertEquals(200, quick.warmup(8, 500, true), "100000 invocations in batches of 500");
        assertEquals(3, quick.warmup(8, 500, false));
        assertEquals(400, quick.warmup(8, 1, true), "at most 400 batches");
        assertEquals(3, quick.warmup(8, 100000, true), "never fewer than the suite's");
        assertEquals(3, quick.warmup(128 * Suite.MI, 1, true), "large messages: the JIT does not matter");
    }

    @Test
    void sizesParseWithUnits() {
        assertEquals(8, Suite.parseSize("8"));
        assertEquals(4096, Suite.parseSize("4k"));
        assertEquals(2 * Suite.MI, Suite.parseSize("2MiB"));
        assertEquals("256 MiB", Suite.formatSize(256 * Suite.MI));
        assertEquals("2 KiB", Suite.formatSize(2048));
        assertEquals("100 B", Suite.formatSize(100));
        assertThrows(IllegalArgumentException.class, () -> Suite.parseSize("0"));
    }

    @Test
    void nativeArgumentsCarryThePolicy() {
        BenchMain.Options o = BenchMain.Options.parse(new String[] {"--suite", "tiny", "--benchmarks", "latency,bw", "--mem", "pageable"});
        assertEquals(List.of("--sizes", "8,4096", "--warmup", "1", "--iterations", "3", "--batch-bytes", "262144", "--min-reps", "2",
                "--max-reps", "50", "--window-bytes", "1048576", "--max-window", "64", "--bench", "latency,bw", "--mem", "pageable"),
                o.nativeArguments());
    }

    @Test
    void reduceScatterAndAllGatherSplitTheSizeOverTheRanksAndSkipWhatDoesNotSplit() {
        assertEquals(List.of("latency", "bw", "bibw", "bcast", "allreduce", "reducescatter", "allgather", "alltoall"),
                List.of(Question.KNOWN.split(",")));
        assertEquals(Question.REDUCE_SCATTER, Question.parse("reducescatter"));
        assertEquals(Question.ALLGATHER, Question.parse("allgather"));
        assertTrue(Question.REDUCE_SCATTER.isCollective() && Question.ALLGATHER.isCollective());
        // reducescatter: size is what each rank sends; its block is size / 8 / ranks doubles
        assertEquals(256, Question.REDUCE_SCATTER.block(4096, 2));
        assertEquals(0, Question.REDUCE_SCATTER.block(8, 2), "8 bytes: less than one double per rank");
        assertEquals(1, Question.REDUCE_SCATTER.block(16, 2));
        assertEquals(1, Question.REDUCE_SCATTER.block(32, 3), "rounded down: 3 doubles sent of the 4 the size holds");
        // allgather: size is what each rank receives; its block is size / ranks bytes
        assertEquals(4, Question.ALLGATHER.block(8, 2));
        assertEquals(0, Question.ALLGATHER.block(8, 16));
        assertFalse(Question.ALLGATHER.runs(8, 16));
        assertTrue(Question.ALLTOALL.runs(8, 16) && Question.ALLREDUCE.runs(8, 16), "the others never skip a size");
        // batches sized by the bytes each rank moves: size, as allreduce
        Suite quick = Suite.named("quick");
        assertEquals(4, quick.reps(Question.REDUCE_SCATTER, 2 * Suite.MI, 4), "8 MiB / 2 MiB");
        assertEquals(4, quick.reps(Question.ALLGATHER, 2 * Suite.MI, 4));
        assertEquals(2 * Suite.MI, Question.ALLGATHER.bytesPerOperation(2 * Suite.MI, 1));
    }

    @Test
    void nativeArgumentsNameTheNewCollectivesAsTheCReferenceDoes() {
        BenchMain.Options o = BenchMain.Options.parse(new String[] {"--suite", "tiny", "--benchmarks", "reducescatter,allgather", "--mem", "device"});
        List<String> a = o.nativeArguments();
        assertEquals(List.of("--bench", "reducescatter,allgather", "--mem", "device"), a.subList(a.size() - 4, a.size()));
        assertEquals(Question.values().length, BenchMain.Options.parse(new String[0]).questions().size(), "all: every question");
    }

    @Test
    void quantilesInterpolateLikeTheCReference() {
        Stats s = Stats.of(new double[] {4, 1, 3, 2});
        assertEquals(2.5, s.median(), 1e-12);
        assertEquals(1, s.min());
        assertEquals(4, s.max());
        assertEquals(1.3, s.p10(), 1e-12);
        assertEquals(3.7, s.p90(), 1e-12);
    }
}
