// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidSettingException;
import dev.ferry.ReduceOp;
import dev.ferry.Settings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The planner's decisions from cost tables, topologies and settings, and its runs on a one-rank
 * mover. The algorithms' own behaviour on real ranks is the conformance suites' (the test kit's
 * {@code CollectiveAlgorithmsContract}).
 */
class PlannerTest {
    private static final Topology TWO_GPUS = new Topology(2, new int[] {0, 0}, 1, 2, 2, Topology.Placement.ONE_PER_RANK, true, "H200",
            new long[] {1, 2}, new long[] {7, 7});
    private static final Topology CPUS = new Topology(4, new int[] {0, 0, 1, 1}, 2, 0, 0, Topology.Placement.NONE, false, "none",
            new long[] {1, 2, 3, 4}, new long[] {7, 7, 8, 8});

    /** An algorithm that only carries allReduce, with a fixed agreement and preference (unfit where {@code unfit} says). */
    private record Fixed(String name, Algorithm.Agreement agreement, int preference, String unfitWhy) implements Algorithm {
        @Override
        public String description() {
            return name;
        }

        @Override
        public boolean carries(Collective c) {
            return c == Collective.ALL_REDUCE;
        }

        @Override
        public String unfit(Shape s, Topology t) {
            return unfitWhy;
        }

        @Override
        public boolean run(CollectiveCall call) {
            return true;
        }
    }

    private static Planner planner(Topology t, CostTable table, Map<String, String> choice, Algorithm... algorithms) {
        Group g = new Group(new OneRankHostTransport(new ArrayList<>()), t);
        return new Planner(g, List.of(algorithms), table, "ompi", choice, choice == null ? null : choice.toString(), false);
    }

    private static Shape allReduce(long bytes) {
        return new Shape(Collective.ALL_REDUCE, DataType.DOUBLE, ReduceOp.SUM, bytes, -1);
    }

    private static final CostTable TABLE = CostTable.of("test", List.of(
            "# made up for the test",
            "H200\tone-per-rank\t2\tompi\tallReduce\tfast-small\t8\t5",
            "H200\tone-per-rank\t2\tompi\tallReduce\tfast-small\t1048576\t500",
            "H200\tone-per-rank\t2\tompi\tallReduce\tfast-large\t8\t20",
            "H200\tone-per-rank\t2\tompi\tallReduce\tfast-large\t1048576\t100",
            "H100\tone-per-rank\t2\tompi\tallReduce\tfast-large\t8\t1"));

    @Test
    void theCheapestMeasuredAlgorithmWinsAndThePlanEndsWithOneThatTakesAnyBuffers() {
        Algorithm small = new Fixed("fast-small", Algorithm.Agreement.WITHIN, 40, null);
        Algorithm large = new Fixed("fast-large", Algorithm.Agreement.VOTE, 41, null);
        Algorithm any = new Fixed("native", Algorithm.Agreement.NONE, 0, null);
        Planner p = planner(TWO_GPUS, TABLE, null, any, small, large);
        assertEquals("H200 one-per-rank 2 ranks ompi", p.setting().toString(), "the table of this GPU model, not the H100's");
        assertArrayEquals(new Algorithm[] {small, large, any}, p.plan(allReduce(8)), "8 B: fast-small, then the fallbacks");
        assertArrayEquals(new Algorithm[] {large, small, any}, p.plan(allReduce(1 << 20)));
        // between the measured sizes: log-log interpolation; 64 KiB: fast-small 5 * (65536/8)^(log(100)/log(131072)), fast-large 20 * ...
        assertEquals(5 * Math.pow(65536 / 8.0, Math.log(100) / Math.log(131072)), p.cost(small, allReduce(65536)), 1e-9);
        assertEquals(500.0 * 4, p.cost(small, allReduce(4 << 20)), 1e-9, "beyond the largest: in proportion to the bytes");
        assertEquals(5.0, p.cost(small, allReduce(1)), 1e-9, "below the smallest: the smallest's");
        assertTrue(Double.isNaN(p.cost(any, allReduce(8))), "native has no row here");
    }

    @Test
    void withoutATableThePreferenceDecidesAndUnfitAlgorithmsAreLeftOut() {
        Algorithm any = new Fixed("native", Algorithm.Agreement.NONE, 0, null);
        Algorithm gpu = new Fixed("gpu", Algorithm.Agreement.VOTE, 30, "not every rank has a GPU");
        Algorithm p2p = new Fixed("p2p", Algorithm.Agreement.NONE, 10, null);
        Planner p = planner(CPUS, TABLE, null, gpu, p2p, any);
        assertEquals(null, p.setting(), "no table for ranks without GPUs");
        assertArrayEquals(new Algorithm[] {any}, p.plan(allReduce(65536)), "native first, nothing after an algorithm that takes any buffers");
    }

    @Test
    void theSettingNamesOneAndRefusesWhatCannotServe() {
        Algorithm any = new Fixed("native", Algorithm.Agreement.NONE, 0, null);
        Algorithm gpu = new Fixed("gpu", Algorithm.Agreement.VOTE, 30, "not every rank has a GPU");
        Planner p = planner(CPUS, TABLE, Map.of("allReduce", "native"), gpu, any);
        assertArrayEquals(new Algorithm[] {any}, p.plan(allReduce(8)));
        InvalidSettingException unknown = assertThrows(InvalidSettingException.class, () -> planner(CPUS, TABLE, Map.of("*", "warp"), gpu, any));
        assertTrue(unknown.getMessage().contains("names no algorithm 'warp'") && unknown.getMessage().contains("gpu, native"), unknown.getMessage());
        Planner forced = planner(CPUS, TABLE, Map.of("*", "gpu"), gpu, any);
        InvalidSettingException unfit = assertThrows(InvalidSettingException.class, () -> forced.plan(allReduce(8)));
        assertTrue(unfit.getMessage().contains("gpu cannot run allReduce 8 B DOUBLE SUM") && unfit.getMessage().contains("not every rank has a GPU"),
                unfit.getMessage());
        assertEquals("ferry.collectives", unfit.key());
    }

    @Test
    void theChoiceIsParsedPerCollective() {
        assertEquals(Map.of("*", "ipc-short"), CollectivesSettings.parseChoice("IPC-short"));
        assertEquals(Map.of("allReduce", "nccl", "broadcast", "native"), CollectivesSettings.parseChoice("allreduce:nccl, broadcast:native"));
        for (String bad : new String[] {"", "a,b", "teleport:native", "allReduce:", "allReduce:a:b"}) {
            assertThrows(IllegalArgumentException.class, () -> CollectivesSettings.parseChoice(bad), bad);
        }
        InvalidSettingException e = assertThrows(InvalidSettingException.class,
                () -> Settings.of(Map.of("ferry.collectives", "teleport:native")).get(CollectivesSettings.COLLECTIVES));
        assertTrue(e.getMessage().contains("op:NAME"), e.getMessage());
    }

    @Test
    void aOneRankCommunicatorRunsEveryCollectiveThroughThePlanner() {
        List<String> calls = new ArrayList<>();
        try (PlannedTransport t = new PlannedTransport(new OneRankHostTransport(calls), Settings.of(Map.of()));
             HostBuffer in = HostBuffer.allocate(16); HostBuffer out = HostBuffer.allocate(16)) {
            assertEquals(Topology.Placement.NONE, t.planner().topology().placement());
            in.segment().set(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0, 2.5);
            t.allReduce(in, out, 1, DataType.DOUBLE, ReduceOp.SUM);
            assertEquals("native", Planner.lastAlgorithm());
            assertEquals(2.5, out.segment().get(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0));
            t.allReduce(in, out, 2, DataType.FLOAT16, ReduceOp.SUM);
            assertEquals("host-fold", Planner.lastAlgorithm(), "FLOAT16: the backend does not reduce it");
        }
    }

    @Test
    void slicesOfTheIpcPathCoverTheBufferInAlignedPieces() {
        for (DataType t : DataType.values()) {
            for (int n = 1; n <= 5; n++) {
                for (long count : new long[] {1, 7, 64, 1001, 300_007}) {
                    long next = 0;
                    for (int r = 0; r < n; r++) {
                        long[] s = IpcCollectives.slice(count, t, r, n);
                        if (s[1] > 0) {
                            assertEquals(next, s[0], t + " slice " + r + " of " + n + " starts where the last ended");
                            assertEquals(0, t.bytes(s[0]) % 16, "slice starts at a 16-byte boundary");
                        }
                        next = s[0] + s[1];
                    }
                    assertEquals(count, next, "slices of " + count + " " + t + " over " + n + " ranks cover it");
                }
            }
        }
    }
}
