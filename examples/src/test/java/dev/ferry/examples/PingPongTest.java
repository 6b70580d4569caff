// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class PingPongTest {

    @Test
    void fewerRoundTripsForLargeMessages() {
        assertEquals(200, PingPong.repsFor(8, 200));
        assertEquals(200, PingPong.repsFor(64 << 10, 200));
        assertEquals(20, PingPong.repsFor(4 << 20, 200));
        assertEquals(5, PingPong.repsFor(64 << 20, 200));
        assertEquals(3, PingPong.repsFor(64 << 20, 10));
    }

    @Test
    void summaryShowsLatencyForSmallAndBandwidthForLargeMessages() {
        List<PingPong.Measurement> m = List.of(
                new PingPong.Measurement("host", 8, 100, 4_000),                // 2 us one way
                new PingPong.Measurement("host", 4 << 20, 10, 2_000_000),       // 4 MiB in 1 ms
                new PingPong.Measurement("device", 8, 100, 40_000));
        assertEquals("host 8 B 2.00 us, 4 MiB 4.19 GB/s; device 8 B 20.0 us", PingPong.summary(m));
        String table = PingPong.table("ompi", m);
        assertTrue(table.lines().anyMatch(l -> l.matches("\\s+device\\s+8 B\\s+100\\s+20.0 us\\s+0.40 MB/s")), table);
    }
}
