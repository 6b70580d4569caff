// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadingException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The call tracker without MPI: the front over a transport whose operations do nothing (or wait on a latch). */
class CallTrackerTest {
    /** A transport that does nothing; barrier waits for {@code release} once {@code entered} is counted down. */
    static final class Idle implements Transport {
        volatile CountDownLatch entered, release;

        @Override public String backend() { return "idle"; }
        @Override public int rank() { return 0; }
        @Override public int size() { return 2; }
        @Override public int maxTag() { return 32767; }

        @Override public boolean supportsDeviceBuffers() { return false; }
        @Override public void send(Buffer b, long c, DataType t, int d, int g) { }
        @Override public Status recv(Buffer b, long c, DataType t, int s, int g) { return new Status(s, g, 0); }
        @Override public Request isend(Buffer b, long c, DataType t, int d, int g) { return null; }
        @Override public Request irecv(Buffer b, long c, DataType t, int s, int g) { return null; }
        @Override public Status sendRecv(Buffer a, long b, DataType c, int d, int e, Buffer f, long g, DataType h, int i, int j) { return null; }
        @Override public void barrier() {
            CountDownLatch e = entered, r = release;
            if (e != null) {
                e.countDown();
                try {
                    r.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException x) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        @Override public void broadcast(Buffer b, long c, DataType t, int r) { }
        @Override public void scatter(Buffer a, Buffer b, long c, DataType t, int r) { }
        @Override public void gather(Buffer a, Buffer b, long c, DataType t, int r) { }
        @Override public void allGather(Buffer a, Buffer b, long c, DataType t) { }
        @Override public void reduce(Buffer a, Buffer b, long c, DataType t, ReduceOp o, int r) { }
        @Override public void allReduce(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
        @Override public void allToAll(Buffer a, Buffer b, long c, DataType t) { }
        @Override public void scatterV(Buffer a, Blocks ab, Buffer b, long c, DataType t, int r) { }
        @Override public void gatherV(Buffer a, long c, Buffer b, Blocks bb, DataType t, int r) { }
        @Override public void allGatherV(Buffer a, long c, Buffer b, Blocks bb, DataType t) { }
        @Override public void allToAllV(Buffer a, Blocks ab, Buffer b, Blocks bb, DataType t) { }
        @Override public void reduceScatterBlock(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
        @Override public void reduceScatter(Buffer a, Buffer b, Blocks bb, DataType t, ReduceOp o) { }
        @Override public void scan(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
        @Override public void exscan(Buffer a, Buffer b, long c, DataType t, ReduceOp o) { }
        @Override public Transport split(int color, int key) { return null; }
        @Override public Transport duplicate() { return null; }
        @Override public void close() { }
        @Override public Status probe(int s, int g) { return new Status(s, g, 0); }
        @Override public java.util.Optional<Status> iprobe(int s, int g) { return java.util.Optional.empty(); }
        @Override public dev.ferry.MatchedMessage mprobe(int s, int g) { return null; }
        @Override public java.util.Optional<dev.ferry.MatchedMessage> improbe(int s, int g) { return java.util.Optional.empty(); }
    }

    @Test
    void overlappingCollectivesAreRefusedAndTheFirstIsUndisturbed() throws Exception {
        Idle t = new Idle();
        Communicator c = new CheckedCommunicator(t);
        t.entered = new CountDownLatch(1);
        t.release = new CountDownLatch(1);
        Thread first = new Thread(c::barrier, "first");
        first.start();
        assertTrue(t.entered.await(10, TimeUnit.SECONDS));
        ThreadingException e = assertThrows(ThreadingException.class, c::barrier);
        assertTrue(e.getMessage().contains("thread \"first\" is inside barrier()") && e.getMessage().contains("duplicate()"), e.getMessage());
        assertTrue(CallTracker.inFlightElsewhere().contains("\"first\" is inside barrier() on Communicator#"), CallTracker.inFlightElsewhere());
        t.release.countDown();
        first.join();
        t.entered = null;
        c.barrier(); // free again
        assertEquals(null, CallTracker.inFlightElsewhere());
    }

    @Test
    void descriptionsNameOperationPeerAndTag() {
        assertEquals("recv(source any, tag 7, 4 x INT) on X", CallTracker.format(CallTracker.Op.RECV, "X", Communicator.ANY_SOURCE, 7, -2, -2, 4, DataType.INT));
        assertEquals("sendRecv(destination 1, send tag 2, source 3, receive tag any, 5 x BYTE) on X",
                CallTracker.format(CallTracker.Op.SEND_RECV, "X", 1, 2, 3, Communicator.ANY_TAG, 5, DataType.BYTE));
        assertEquals("broadcast(root 2, 9 x LONG) on X", CallTracker.format(CallTracker.Op.BROADCAST, "X", 2, -2, -2, -2, 9, DataType.LONG));
        assertEquals("barrier() on X", CallTracker.format(CallTracker.Op.BARRIER, "X", -2, -2, -2, -2, -1, null));
        assertEquals(3_000_000_000L, CallTracker.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "3"))));
        assertEquals(500_000_000L, CallTracker.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "0.5"))));
        assertEquals(30_000_000_000L, CallTracker.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "30s"))));
        assertEquals(0, CallTracker.timeoutNanos(dev.ferry.Settings.of(java.util.Map.of("ferry.timeout", "soon"))),
                "not accepted: off here (Ferry.open() throws InvalidSettingException for it before any call)");
    }

    /** What tracking costs per call (printed; bounded loosely so that a slow CI machine does not fail it). */
    @Test
    void trackingCostsNanosecondsPerCall() {
        Communicator c = new CheckedCommunicator(new Idle());
        for (int i = 0; i < 2_000_000; i++) c.barrier(); // warm up
        int n = 10_000_000;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) c.barrier();
        double ns = (System.nanoTime() - t0) / (double) n;
        System.out.printf("[ferry-overhead] barrier() on a no-op backend, with call tracking: %.1f ns per call%n", ns);
        assertTrue(ns < 1_000, ns + " ns per call");
        dev.ferry.HostBuffer b = dev.ferry.HostBuffer.allocate(64);
        for (int i = 0; i < 2_000_000; i++) c.send(b, 8, DataType.BYTE, 1, 3);
        t0 = System.nanoTime();
        for (int i = 0; i < n; i++) c.send(b, 8, DataType.BYTE, 1, 3);
        ns = (System.nanoTime() - t0) / (double) n;
        System.out.printf("[ferry-overhead] send() on a no-op backend, with argument checks and call tracking: %.1f ns per call%n", ns);
        t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            CallTracker.Slot s = CallTracker.enter(null, dev.ferry.ThreadLevel.MULTIPLE, CallTracker.Op.SEND, c, 1, 3, -2, -2, 8, DataType.BYTE);
            CallTracker.exit(s);
        }
        ns = (System.nanoTime() - t0) / (double) n;
        System.out.printf("[ferry-overhead] call tracking alone (enter + exit): %.1f ns per call%n", ns);
    }
}
