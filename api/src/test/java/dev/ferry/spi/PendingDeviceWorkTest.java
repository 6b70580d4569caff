// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.ferry.DeviceStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link PendingDeviceWork}'s bookkeeping: which order a collective's code waits for, once, on
 * which thread (the waits themselves are the GPU runtime's, tested with device buffers by
 * ApplicationPatterns on the GPU machine).
 */
class PendingDeviceWorkTest {

    /** What was asked of an order, in turn. */
    private static final class Recorded implements DeviceSupport.DeferredOrder {
        final List<String> asked = new ArrayList<>();

        @Override
        public void complete() {
            asked.add("complete");
        }

        @Override
        public void before(DeviceStream stream) {
            asked.add("before " + stream.streamHandle());
        }

        @Override
        public void close() {
            asked.add("close");
        }
    }

    private static DeviceStream stream(long handle) {
        return new DeviceStream() {
            @Override
            public long streamHandle() {
                return handle;
            }

            @Override
            public int deviceOrdinal() {
                return 0;
            }
        };
    }

    @AfterEach
    void nothingLeft() {
        PendingDeviceWork.swap(null);
    }

    @Test
    void nothingPendingAsksNothing() {
        PendingDeviceWork.complete();
        PendingDeviceWork.before(stream(7));
        assertNull(PendingDeviceWork.swap(null));
    }

    @Test
    void aStreamWaitsOnTheGpuAndTheHostStillWaitsOnceWhenAskedLater() {
        Recorded order = new Recorded();
        PendingDeviceWork.swap(order);
        PendingDeviceWork.before(stream(7));
        PendingDeviceWork.before(stream(9));
        PendingDeviceWork.complete();
        PendingDeviceWork.complete();
        PendingDeviceWork.before(stream(11));
        assertEquals(List.of("before 7", "before 9", "complete"), order.asked);
    }

    @Test
    void aNestedCallsOrderGivesBackTheOuterOne() throws Exception {
        Recorded outer = new Recorded(), inner = new Recorded();
        assertNull(PendingDeviceWork.swap(outer));
        DeviceSupport.DeferredOrder previous = PendingDeviceWork.swap(inner);
        assertSame(outer, previous);
        PendingDeviceWork.complete();
        assertSame(null, PendingDeviceWork.swap(previous));
        PendingDeviceWork.complete();
        assertEquals(List.of("complete"), inner.asked);
        assertEquals(List.of("complete"), outer.asked);
    }

    @Test
    void anotherThreadHasNothingPending() throws Exception {
        Recorded order = new Recorded();
        PendingDeviceWork.swap(order);
        Thread t = new Thread(() -> {
            PendingDeviceWork.complete();
            PendingDeviceWork.before(stream(3));
        });
        t.start();
        t.join();
        assertEquals(List.of(), order.asked);
    }
}
