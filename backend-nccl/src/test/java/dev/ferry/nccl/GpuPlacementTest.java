// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.nccl.GpuPlacement.Place;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The decision taken from the start-up allGather, on made-up results. */
class GpuPlacementTest {

    @Test
    void oneGpuPerRankIsAccepted() {
        assertNull(GpuPlacement.refusal(List.of(new Place("a", "0000:17:00.0"), new Place("a", "0000:65:00.0"),
                new Place("b", "0000:17:00.0"), new Place("b", "0000:65:00.0"))), "the same bus id on two hosts is two GPUs");
        assertNull(GpuPlacement.refusal(List.of(new Place("a", "0000:17:00.0"))));
    }

    @Test
    void twoRanksOnOneGpuAreRefusedNamingRanksGpuAndHost() {
        String why = GpuPlacement.refusal(List.of(new Place("a", "0000:17:00.0"), new Place("a", "0000:65:00.0"),
                new Place("a", "0000:17:00.0")));
        assertTrue(why != null && why.contains("ranks 0 and 2") && why.contains("0000:17:00.0") && why.contains(" a"), why);
        assertTrue(why.contains("MPS"), "says that MPS does not help: " + why);
    }

    @Test
    void aRankWithoutGpuIsRefused() {
        String why = GpuPlacement.refusal(List.of(new Place("a", "0000:17:00.0"), new Place("b", GpuPlacement.NO_GPU)));
        assertTrue(why != null && why.contains("rank 1") && why.contains("no usable GPU"), why);
    }

    @Test
    void recordsRoundTripThroughTheAllGatherLayout() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment rec = a.allocate(GpuPlacement.RECORD);
            byte[] b = "node-7.cluster|0000:17:00.0".getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(b, 0, rec, ValueLayout.JAVA_BYTE, 0, b.length);
            assertEquals(new Place("node-7.cluster", "0000:17:00.0"), GpuPlacement.parse(rec));
        }
    }

    @Test
    void thisMachineHasNoGpuSoItsPlaceSaysSo() {
        // CI and the build machine have no CUDA driver
        Place p = GpuPlacement.mine();
        assertEquals(dev.ferry.cuda.Cuda.isAvailable() ? p.busId() : GpuPlacement.NO_GPU, p.busId());
        assertTrue(!p.host().isBlank());
    }
}
