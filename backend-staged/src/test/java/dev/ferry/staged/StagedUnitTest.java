// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** Settings, the wire format and the memcpy engine, without MPI. */
class StagedUnitTest {

    private static StagedSettings settings(Map<String, String> m) {
        return StagedSettings.read(dev.ferry.Settings.of(m));
    }

    @Test
    void defaultsAndSizes() {
        StagedSettings s = settings(Map.of());
        assertEquals(4L << 20, s.chunk());
        assertEquals(4, s.depth());
        assertEquals(1L << 20, s.threshold());
        assertEquals(16 * 1024, s.eager());
        assertEquals(8, s.poolChunks());
        assertTrue(s.ipc() && !s.contextSync() && !s.stageHostBuffers() && s.progressThread());
        assertEquals(65536, StagedSettings.parseSize("k", "64k"));
        assertEquals(3L << 30, StagedSettings.parseSize("k", "3 GiB"));
        assertEquals(1000, StagedSettings.parseSize("k", "1000"));
        assertEquals("4 MiB", StagedSettings.bytes(4L << 20));
        assertEquals("1027 B", StagedSettings.bytes(1027));
    }

    @Test
    void nodeGroupsCountConsecutiveWorldRanksAsNodes() {
        StagedSettings real = settings(Map.of()), pairs = settings(Map.of("ferry.staged.test.nodeGroup", "2"));
        assertEquals(0, real.nodeGroup());
        assertEquals(Peers.NODE, Peers.nodeOf(real, 5), "0: the real node, whatever the rank");
        assertEquals(Peers.nodeOf(pairs, 0), Peers.nodeOf(pairs, 1));
        assertEquals(Peers.nodeOf(pairs, 2), Peers.nodeOf(pairs, 3));
        assertTrue(Peers.nodeOf(pairs, 1) != Peers.nodeOf(pairs, 2) && Peers.nodeOf(pairs, 0) != Peers.NODE, "groups 0 and 1 are other nodes");
        assertEquals(Peers.nodeOf(pairs, 0), Peers.nodeOf(pairs, -1), "unknown rank (a singleton): group 0");
        assertThrows(InvalidArgumentException.class, () -> settings(Map.of("ferry.staged.test.nodeGroup", "-1")));
    }

    @Test
    void badSettingsNameTheSetting() {
        for (Map<String, String> bad : java.util.List.of(
                Map.of("ferry.staged.chunk", "12x"),
                Map.of("ferry.staged.chunk", "1000"),
                Map.of("ferry.staged.chunk", "2g"),
                Map.of("ferry.staged.depth", "0"),
                Map.of("ferry.staged.threshold", "8m"),
                Map.of("ferry.staged.eager", "100"),
                Map.of("ferry.staged.eager", "2m"),
                Map.of("ferry.ipc", "maybe"))) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> settings(bad), bad.toString());
            String key = bad.keySet().iterator().next();
            assertTrue(e.getMessage().contains(key), e.getMessage());
        }
        StagedSettings small = settings(Map.of("ferry.staged.chunk", "64k", "ferry.staged.threshold", "1k", "ferry.staged.eager", "256"));
        assertEquals(256, small.eager());
        assertEquals(256, settings(Map.of("ferry.staged.threshold", "100")).eager(), "eager is at least 256 even below the threshold");
    }

    @Test
    void adaptiveChunksCutAMessageInAboutTwiceTheDepth() {
        Tuning t = Tuning.of(settings(Map.of()));
        assertEquals(1024 * 1024, t.chunkFor(1_100_000), "small pipelined messages: the smallest chunk");
        assertEquals(1024 * 1024, t.chunkFor(4 << 20), "4 MiB in 4 chunks of 1 MiB (the smallest chunk)");
        assertEquals(1 << 20, t.chunkFor(8 << 20), "8 MiB in 8 chunks of 1 MiB");
        assertEquals(4 << 20, t.chunkFor(1L << 30), "large messages: the largest chunk");
        assertEquals(0, t.chunkFor(3 << 20) % Tuning.ALIGN);
        Tuning fixed = Tuning.of(settings(Map.of("ferry.staged.minChunk", "4m")));
        assertEquals(4 << 20, fixed.chunkFor(1_100_000));
        assertThrows(InvalidArgumentException.class, () -> new Tuning(8 << 20, 1 << 20, 1 << 20, 4).checked(4 << 20));
        assertThrows(InvalidArgumentException.class, () -> settings(Map.of("ferry.staged.minChunk", "8m")));
    }

    @Test
    void headerAndOfferRoundTrip() {
        try (HostBuffer b = HostBuffer.allocate(Wire.slot(256))) {
            Wire.Header h = new Wire.Header(Wire.FLAG_IPC_OFFER, 123456789L, 0, 4 << 20, 77);
            h.write(b.segment());
            byte[] handle = new byte[64];
            for (int i = 0; i < 64; i++) handle[i] = (byte) (i * 3);
            dev.ferry.collectives.ipc.IpcOffer o = new dev.ferry.collectives.ipc.IpcOffer(handle, 0x7f0000001000L, 1L << 30, 4096, 42, 1);
            o.write(b.segment(), Wire.HEADER);
            Wire.Header h2 = Wire.Header.read(b.segment(), 3);
            assertEquals(h, h2);
            assertTrue(h2.ipcOffer());
            dev.ferry.collectives.ipc.IpcOffer o2 = dev.ferry.collectives.ipc.IpcOffer.read(b.segment(), Wire.HEADER);
            assertArrayEquals(handle, o2.handle());
            assertEquals(o.base(), o2.base());
            assertEquals(o.size(), o2.size());
            assertEquals(o.offset(), o2.offset());
            assertEquals(o.generation(), o2.generation());
            assertEquals(o.device(), o2.device());
            assertTrue(Wire.HEADER + dev.ferry.collectives.ipc.IpcOffer.BYTES <= Wire.firstPiece(StagedSettings.MIN_EAGER), "an offer fits in the smallest first piece");
            b.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 0);
            FerryException e = assertThrows(FerryException.class, () -> Wire.Header.read(b.segment(), 3));
            assertTrue(e.getMessage().contains("eager"), e.getMessage());
        }
        assertEquals(0, Wire.chunks(100, 100, 64));
        assertEquals(1, Wire.chunks(101, 100, 64));
        assertEquals(2, Wire.chunks(228, 100, 64));
        assertEquals(3, Wire.chunks(229, 100, 64));
        assertEquals(2 * 5 + 1, Wire.replyTag(5));
        assertEquals(10, Wire.dataTag(5));
    }

    @Test
    void threadedMemcpyEngineCopiesInOrderBehindFences() throws Exception {
        MemcpyCopyEngine e = new MemcpyCopyEngine(true);
        try (HostBuffer src = HostBuffer.allocate(1 << 20); HostBuffer staging = HostBuffer.allocate(1 << 20); HostBuffer dst = HostBuffer.allocate(1 << 20)) {
            for (int i = 0; i < src.byteSize(); i++) src.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i);
            CopyEngine.Fence a = e.toStaging(staging, 0, src, 0, 1 << 19);
            CopyEngine.Fence b = e.toStaging(staging, 1 << 19, src, 1 << 19, 1 << 19);
            b.await();
            assertTrue(a.isDone(), "one direction runs in order");
            e.fromStaging(dst, 0, staging, 0, 1 << 20).await();
            assertEquals(-1L, src.segment().mismatch(dst.segment()));
            assertTrue(CopyEngine.Fence.DONE.isDone());
            assertTrue(e.toStaging(staging, 0, src, 0, 0).isDone(), "empty copies are done at once");
        }
        e.close();
        MemcpyCopyEngine inline = new MemcpyCopyEngine(false);
        try (HostBuffer a = HostBuffer.allocate(8); HostBuffer b = HostBuffer.allocate(8)) {
            a.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 42);
            assertTrue(inline.toStaging(b, 0, a, 0, 8).isDone());
            assertEquals(42, b.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        }
        inline.close();
    }

    @Test
    void theRuntimeLivesWhileACommunicatorHoldsItAndFreesEverythingAfter() {
        StagedSettings s = settings(Map.of("ferry.staged.stageHostBuffers", "true"));
        for (int round = 0; round < 3; round++) {
            StagedRuntime a = StagedRuntime.acquire(s, "ompi");
            StagedRuntime b = StagedRuntime.acquire(s, "ompi");
            org.junit.jupiter.api.Assertions.assertSame(a, b, "one runtime per process");
            HostBuffer x = a.chunks.acquire(100_000, true);
            HostBuffer slot = a.slots.acquire(a.slots.maxBytes(), true);
            a.chunks.release(x);
            a.slots.release(slot);
            a.release();
            org.junit.jupiter.api.Assertions.assertSame(a, StagedRuntime.currentOrNull(), "still held by the second communicator");
            assertTrue(x.isAlive(), "kept for reuse");
            b.release();
            org.junit.jupiter.api.Assertions.assertNull(StagedRuntime.currentOrNull(), "released with the last communicator");
            assertTrue(a.isClosed());
            assertTrue(!x.isAlive() && !slot.isAlive(), "pooled memory freed");
            assertEquals(0, a.chunks.allocatedBytes());
        }
    }

    @Test
    void progressCompletesFailsAndCleansUpOnce() {
        Progress p = new Progress();
        CountDownLatch cleaned = new CountDownLatch(2);
        int[] steps = {0};
        Progress.Op ok = new Progress.Op() {
            @Override void post() { }
            @Override boolean advance() {
                if (++steps[0] == 3) complete(new dev.ferry.Status(1, 2, 3));
                return true;
            }
            @Override void cleanup(boolean failed) { cleaned.countDown(); }
            @Override String describe() { return "ok"; }
        };
        p.start(ok);
        assertEquals(3, p.await(ok).byteCount());
        Progress.Op bad = new Progress.Op() {
            int n;
            @Override void post() { }
            @Override boolean advance() {
                if (++n == 2) throw new IllegalStateException("boom");
                return false;
            }
            @Override void cleanup(boolean failed) {
                assertTrue(failed);
                cleaned.countDown();
            }
            @Override String describe() { return "bad"; }
        };
        p.start(bad);
        FerryException e = assertThrows(FerryException.class, () -> p.await(bad));
        assertTrue(e.getMessage().contains("bad failed") && e.getMessage().contains("boom"), e.getMessage());
        assertEquals(0, cleaned.getCount());
        assertEquals(0, p.inFlight());
    }
}
