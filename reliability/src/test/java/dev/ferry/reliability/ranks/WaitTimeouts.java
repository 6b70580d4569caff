// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.OperationTimeoutException;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.testing.TestWorld;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@link Request#waitFor(Duration)}: a timeout is an exception, and the request stays usable. */
public class WaitTimeouts {
    @Test
    void waitForWithATimeoutIsRecoverable() {
        try (Communicator c = TestWorld.world().duplicate(); HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            int rank = c.rank(), size = c.size();
            int next = (rank + 1) % size, prev = (rank + size - 1) % size;
            Request r = c.irecv(in, 1, DataType.LONG, prev, 12);
            long t0 = System.nanoTime();
            OperationTimeoutException e = assertThrows(OperationTimeoutException.class, () -> r.waitFor(Duration.ofMillis(300)));
            long waited = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(waited >= 300 && waited < 10_000, "waited " + waited + " ms");
            assertTrue(e.getMessage().contains("irecv(source " + prev + ", tag 12") && e.getMessage().contains("still in flight"), e.getMessage());
            assertTrue(r.test().isEmpty(), "nothing was sent yet");
            c.barrier(); // every rank has timed out once: now send
            out.segment().set(ValueLayout.JAVA_LONG, 0, 1000L + rank);
            c.send(out, 1, DataType.LONG, next, 12);
            Status s = r.waitFor(Duration.ofSeconds(60));
            assertEquals(prev, s.source());
            assertEquals(1000L + prev, in.segment().get(ValueLayout.JAVA_LONG, 0));
            System.out.println("[ferry-wait] rank " + rank + ": " + e.getMessage());
        }
    }
}
