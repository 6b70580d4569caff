// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class ScatterShiftGatherTest {

    @Test
    void checkPassesForShiftedDataAndNamesTheFirstWrongElement() {
        float[] in = ScatterShiftGather.randomFloats(1000, 7);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(4000, 4);
            for (int i = 0; i < in.length; i++) {
                out.setAtIndex(ValueLayout.JAVA_FLOAT, i, in[i] + 2f);
            }
            Outcome ok = ScatterShiftGather.check(in, out, 2f, 4, Mode.HOST, "test", 5);
            assertEquals(Outcome.Status.OK, ok.status(), ok.summary());
            assertTrue(ok.line().startsWith("[ok] scatter-shift-gather: 4 ranks, 1000 floats, mean 0."), ok.line());
            assertTrue(ok.summary().contains("(shift 2.0), every element checked"), ok.summary());

            out.setAtIndex(ValueLayout.JAVA_FLOAT, 321, in[321] + 2.0001f);
            Outcome bad = ScatterShiftGather.check(in, out, 2f, 4, Mode.HOST, "test", 5);
            assertEquals(Outcome.Status.FAIL, bad.status());
            assertTrue(bad.summary().contains("1 elements wrong, the first at 321"), bad.summary());
        }
    }

    @Test
    void randomFloatsAreReproducibleAndInTheUnitInterval() {
        float[] a = ScatterShiftGather.randomFloats(10_000, 42);
        float[] b = ScatterShiftGather.randomFloats(10_000, 42);
        assertEquals(java.util.Arrays.hashCode(a), java.util.Arrays.hashCode(b));
        for (float f : a) {
            assertTrue(f >= 0 && f <= 1, "value " + f);
        }
    }
}
