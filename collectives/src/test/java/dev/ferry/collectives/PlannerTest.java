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

    /**
     * An algorithm that only carries allReduce, with a fixed agreement and preference (unfit where
     * {@code unfit} says); its times depend on the backend unless {@code timedWithBackend} is false;
     * the ranks' calls are compared before it runs where {@code compares} says.
     */
    private record Fixed(String name, Algorithm.Agreement agreement, int preference, String unfitWhy, boolean timedWithBackend, boolean compares)
            implements Algorithm {
        Fixed(String name, Algorithm.Agreement agreement, int preference, String unfitWhy) {
            this(name, agreement, preference, unfitWhy, true, false);
        }

        Fixed(String name, Algorithm.Agreement agreement, int preference, String unfitWhy, boolean timedWithBackend) {
            this(name, agreement, preference, unfitWhy, timedWithBackend, false);
        }

        @Override
        public boolean comparesCalls(Collective c) {
            return compares;
        }

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
    void aTimeOfTheBackendsOwnCollectiveAppliesOnlyUnderTheBackendThatMeasuredIt() {
        // as the table of 4 ranks sharing an H200 under ompi at 64 MiB: the CUDA-aware MPI's own collective a little ahead of IPC;
        // under staged, native is the host-staged pipeline, which took 20 times as long there
        CostTable t = CostTable.of("test", List.of(
                "H200\tone-per-rank\t2\tompi\tallReduce\tnative\t67108864\t524",
                "H200\tone-per-rank\t2\tompi\tallReduce\tipc\t67108864\t531"));
        Algorithm nat = new Fixed("native", Algorithm.Agreement.NONE, 0, null);
        Algorithm ipc = new Fixed("ipc", Algorithm.Agreement.WITHIN, 40, null, false); // moves the data by itself, as CUDA IPC does
        Group g = new Group(new OneRankHostTransport(new ArrayList<>()), TWO_GPUS);
        Planner underOmpi = new Planner(g, List.of(nat, ipc), t, "ompi", null, null, false);
        assertArrayEquals(new Algorithm[] {nat}, underOmpi.plan(allReduce(64 << 20)), "measured under ompi: its own collective is the cheapest");
        Planner underStaged = new Planner(g, List.of(nat, ipc), t, "staged", null, null, false);
        assertEquals("H200 one-per-rank 2 ranks ompi", underStaged.setting().toString(), "the closest table is still ompi's");
        assertTrue(Double.isNaN(underStaged.cost(nat, allReduce(64 << 20))), "ompi's time of native says nothing of staged's");
        assertEquals(531.0, underStaged.cost(ipc, allReduce(64 << 20)), 1e-9, "IPC's time holds under every backend");
        assertArrayEquals(new Algorithm[] {ipc, nat}, underStaged.plan(allReduce(64 << 20)), "the measured IPC first, then the unmeasured native");
        assertTrue(underStaged.describe(new long[] {64 << 20}, DataType.DOUBLE).stream().anyMatch(l -> l.startsWith("allReduce") && l.endsWith(" 64M:ipc")),
                "doctor's plan names ipc");
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

    @Test
    void theTablesThatComeWithFerryAreReadAndCostTheGpuPlacementsTheyMeasured() {
        CostTable t = CostTable.builtIn();
        java.util.List<String> settings = t.settings().stream().map(CostTable.Setting::toString).toList();
        assertTrue(settings.contains("H200 one-per-rank 2 ranks ompi"), settings.toString());
        assertTrue(settings.contains("H100 shared 2 ranks ompi") && settings.contains("H100 shared 4 ranks ompi"), settings.toString());
        CostTable.Setting s = t.closest(TWO_GPUS, "ompi");
        assertEquals("H200 one-per-rank 2 ranks ompi", s.toString());
        Shape big = new Shape(Collective.ALL_REDUCE, DataType.FLOAT, ReduceOp.SUM, 256L << 20, 0);
        assertTrue(t.micros(s, "ipc-sliced", big) < t.micros(s, "native", new Shape(Collective.ALL_REDUCE, DataType.FLOAT, ReduceOp.SUM, 16L << 20, 0)),
                "measured: the IPC allReduce of 256 MiB is faster than the MPI's of 16 MiB");
        assertEquals(null, t.closest(CPUS, "ompi"), "ranks without GPUs take no GPU table");
        // times never fall as sizes grow, whatever the measurement's noise
        for (CostTable.Setting x : t.settings()) {
            for (String a : java.util.List.of("ipc-short", "ipc-fold", "native", "nccl")) {
                double last = 0;
                for (long b = 8; b <= (256L << 20); b *= 8) {
                    double m = t.micros(x, a, new Shape(Collective.ALL_REDUCE, DataType.FLOAT, ReduceOp.SUM, b, 0));
                    if (Double.isNaN(m)) continue;
                    assertTrue(m >= last * (1 - 1e-9), x + " " + a + " at " + b + " B: " + m + " after " + last);
                    last = m;
                }
            }
        }
    }

    /** A device-only algorithm for {@link #hostMemoryPassesOverEveryDeviceOnlyAlgorithmAfterOneAgreement}: counts its votes and runs. */
    private static final class DeviceOnly implements Algorithm {
        final String name;
        int votes, runs;

        DeviceOnly(String name) {
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }

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
            return null;
        }

        @Override
        public Agreement agreement() {
            return Agreement.VOTE;
        }

        @Override
        public boolean needsDevice() {
            return true;
        }

        @Override
        public boolean takes(CollectiveCall call) {
            votes++;
            return call.send().kind().needsCuda();
        }

        @Override
        public int preference() {
            return 1;
        }

        @Override
        public boolean run(CollectiveCall call) {
            runs++;
            return true;
        }
    }

    @Test
    void hostMemoryPassesOverEveryDeviceOnlyAlgorithmAfterOneAgreement() {
        DeviceOnly first = new DeviceOnly("first"), second = new DeviceOnly("second");
        Fixed fallback = new Fixed("fallback", Algorithm.Agreement.NONE, 9, null);
        CostTable table = CostTable.of("test", List.of(
                "H200\tone-per-rank\t2\tompi\tallReduce\tfirst\t8\t1",
                "H200\tone-per-rank\t2\tompi\tallReduce\tsecond\t8\t2",
                "H200\tone-per-rank\t2\tompi\tallReduce\tfallback\t8\t3"));
        Group g = new Group(new OneRankHostTransport(new ArrayList<>()), TWO_GPUS);
        Planner p = new Planner(g, List.of(first, second, fallback), table, "ompi", null, null, false);
        assertEquals(List.of("first", "second", "fallback"), java.util.Arrays.stream(p.plan(allReduce(8))).map(Algorithm::name).toList());
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            long before = g.agreements();
            p.run(CollectiveCall.of(Collective.ALL_REDUCE, in, out, 1, DataType.DOUBLE, ReduceOp.SUM, -1));
            assertEquals("fallback", Planner.lastAlgorithm());
            assertEquals(1, g.agreements() - before, "one agreement: it found host memory, so the second device-only algorithm was passed over");
            assertEquals(1, first.votes);
            assertEquals(0, second.votes);
            assertEquals(0, first.runs + second.runs);
        }
    }

    /** The ranks' calls are compared in the round of a vote where one runs, else in a round of their own; never twice, never without need. */
    @Test
    void callsAreComparedInTheVotesRoundOrInOneOfTheirOwn() {
        record Case(Algorithm a, boolean uniform, int rounds) {
        }
        for (Case c : new Case[] {
                new Case(new Fixed("votes", Algorithm.Agreement.VOTE, 1, null, true, true), false, 1),
                new Case(new Fixed("votes", Algorithm.Agreement.VOTE, 1, null, true, true), true, 1),
                new Case(new Fixed("alone", Algorithm.Agreement.NONE, 1, null, true, true), false, 1),
                new Case(new Fixed("votes-only", Algorithm.Agreement.VOTE, 1, null), false, 1),
                new Case(new Fixed("votes-only", Algorithm.Agreement.VOTE, 1, null), true, 0),
                new Case(new Fixed("neither", Algorithm.Agreement.NONE, 1, null), false, 0)}) {
            Group g = new Group(new OneRankHostTransport(new ArrayList<>()), TWO_GPUS);
            Planner p = new Planner(g, List.of(c.a(), new Fixed("native", Algorithm.Agreement.NONE, 9, null)), CostTable.of("test", List.of()), "ompi", null, null,
                    c.uniform());
            try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
                p.run(CollectiveCall.of(Collective.ALL_REDUCE, in, out, 1, DataType.DOUBLE, ReduceOp.SUM, -1));
            }
            assertEquals(c.a().name(), Planner.lastAlgorithm());
            assertEquals(c.rounds(), g.agreements(), c.a().name() + (c.uniform() ? ", uniform buffers" : "") + ": rounds of agreement");
        }
    }

    /** A repeated shape reuses its plan; a forced algorithm or a new table replaces it from the next call on. */
    @Test
    void aRepeatedShapeFollowsForceAndNewTables() {
        Fixed first = new Fixed("first", Algorithm.Agreement.NONE, 0, null), second = new Fixed("second", Algorithm.Agreement.NONE, 1, null);
        Planner p = planner(TWO_GPUS, CostTable.of("test", List.of()), null, first, second);
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Runnable call = () -> p.run(CollectiveCall.of(Collective.ALL_REDUCE, in, out, 1, DataType.DOUBLE, ReduceOp.SUM, -1));
            call.run();
            call.run();
            assertEquals("first", Planner.lastAlgorithm(), "by preference");
            p.force(Map.of("allReduce", "second"), "allReduce:second");
            call.run();
            assertEquals("second", Planner.lastAlgorithm(), "forced");
            p.force(null, null);
            call.run();
            assertEquals("first", Planner.lastAlgorithm(), "no longer forced");
            p.useTable(CostTable.of("test", List.of("H200\tone-per-rank\t2\tompi\tallReduce\tsecond\t8\t1")));
            call.run();
            assertEquals("second", Planner.lastAlgorithm(), "measured, the only one with a cost");
        }
    }
}
