// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.Request;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The native-call budget of one staged message, without a GPU or MPI: a one-rank loopback inner
 * communicator, host buffers staged by the inline memcpy engine, which counts the CUDA calls its
 * CUDA twin would make for the same steps (see {@link Calls}). Default settings otherwise, so the
 * message cutting is the GPU's. A change that adds a driver call per message or per chunk fails here.
 */
class StagedCallCountTest {
    private static StagedTransport comm;
    private static StagedRuntime rt;

    @BeforeAll
    static void open() {
        // staged's own context sync on (it is counted below) and no assistant thread (its polls would add to the counts)
        Map<String, String> m = Map.of("ferry.staged.stageHostBuffers", "true", "ferry.staged.memcpyThreads", "0",
                "ferry.staged.contextSync", "true", "ferry.staged.progressThread", "false");
        StagedSettings s = StagedSettings.read(dev.ferry.Settings.of(m));
        rt = StagedRuntime.acquire(s, "loopback");
        comm = new StagedTransport(new LoopbackTransport(), rt);
    }

    @AfterAll
    static void close() {
        comm.close();
    }

    /** Calls of one message to self (its send and its receive), after a warm-up that fills the pools. */
    private static Calls.Snapshot oneMessage(long n) {
        try (HostBuffer s = HostBuffer.allocate(n); HostBuffer r = HostBuffer.allocate(n)) {
            for (long i = 0; i < n; i++) s.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            Calls.Snapshot d = null;
            for (int round = 0; round < 2; round++) {
                r.segment().fill((byte) 0);
                Calls.Snapshot before = rt.calls.snapshot();
                Request rr = comm.irecv(r, n, DataType.BYTE, 0, 5);
                comm.send(s, n, DataType.BYTE, 0, 5);
                assertEquals(n, rr.waitFor().byteCount());
                d = rt.calls.snapshot().since(before);
                assertEquals(-1L, s.segment().mismatch(r.segment()), "the bytes arrived");
            }
            assertEquals(0, rt.progress.inFlight());
            assertEquals(0, rt.chunks.outstanding());
            assertEquals(0, rt.slots.outstanding());
            System.out.println("staged calls for one " + n + "-byte message (send + receive): " + d + ", CUDA calls " + d.cudaCalls());
            return d;
        }
    }

    @Test
    void eightBytes() {
        Calls.Snapshot d = oneMessage(8);
        // sender: cuCtxSynchronize + cuMemcpy D2H into a cached slot; receiver: cuCtxSynchronize + cuMemcpy H2D
        assertEquals(2, d.count(Calls.Kind.CTX_SYNC));
        assertEquals(1, d.count(Calls.Kind.D2H_SYNC));
        assertEquals(1, d.count(Calls.Kind.H2D_SYNC));
        assertEquals(4, d.cudaCalls(), "no async copy, no event record, query or wait: " + d);
        assertEquals(2, d.count(Calls.Kind.MPI_POST), "one message, one receive: " + d);
        assertTrue(d.count(Calls.Kind.MPI_TEST) <= 3, d.toString());
    }

    @Test
    void fourMebibytes() {
        long n = 4L << 20;
        Calls.Snapshot d = oneMessage(n);
        long chunks = n / Tuning.of(rt.settings).chunkFor(n); // no data in the first piece
        assertEquals(4, chunks, "4 MiB is cut in 4 chunks of 1 MiB by default");
        assertEquals(2, d.count(Calls.Kind.CTX_SYNC));
        assertEquals(0, d.count(Calls.Kind.D2H_SYNC) + d.count(Calls.Kind.H2D_SYNC), "no small synchronous copy of inline bytes: " + d);
        assertEquals(chunks, d.count(Calls.Kind.D2H_ASYNC));
        assertEquals(chunks, d.count(Calls.Kind.H2D_ASYNC));
        assertEquals(2 * chunks, d.count(Calls.Kind.EVENT_RECORD));
        assertEquals(2 * chunks, d.count(Calls.Kind.EVENT_QUERY), "one query per chunk and side when the copy is done: " + d);
        assertEquals(0, d.count(Calls.Kind.EVENT_SYNC) + d.count(Calls.Kind.EVENT_CREATE) + d.count(Calls.Kind.STREAM_CREATE), d.toString());
        assertEquals(2 + 6 * chunks, d.cudaCalls(), d.toString());
        assertEquals(2 * (1 + chunks), d.count(Calls.Kind.MPI_POST), "a first piece and the chunks, each way: " + d);
        assertTrue(d.count(Calls.Kind.MPI_TEST) <= 4 * (1 + chunks), d.toString());
    }

    @Test
    void aMessageJustAboveEager() {
        long n = rt.settings.eager() + 1;
        Calls.Snapshot d = oneMessage(n);
        assertEquals(2, d.count(Calls.Kind.CTX_SYNC));
        assertEquals(1, d.count(Calls.Kind.D2H_ASYNC) + d.count(Calls.Kind.D2H_SYNC), d.toString());
        assertEquals(1, d.count(Calls.Kind.H2D_ASYNC) + d.count(Calls.Kind.H2D_SYNC), d.toString());
        assertEquals(4, d.count(Calls.Kind.MPI_POST), d.toString());
    }
}
