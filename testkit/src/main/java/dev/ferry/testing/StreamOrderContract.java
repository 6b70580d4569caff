// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Buffer;
import dev.ferry.BufferFreedException;
import dev.ferry.BufferTooSmallException;
import dev.ferry.CaptureUnsupportedException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidRankException;
import dev.ferry.ReduceOp;
import dev.ferry.StreamCommunicator;
import dev.ferry.StreamOperationException;
import dev.ferry.TruncationException;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.collectives.Collective;
import dev.ferry.collectives.Shape;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The stream-ordered view ({@link Communicator#onStream}) on real ranks and real GPUs: operations
 * run after the stream's earlier work and before its later work with the host never waiting
 * between them (inputs written and results read by copies on the stream, checked after one
 * synchronize); every collective and point-to-point call; 200 back-to-back in-place allReduces;
 * buffers closed while queued; failures after the call surfacing on the next call; mistakes thrown
 * at the call; and capture into a CUDA graph (replayed and checked where the planner runs the call
 * on NCCL, refused by name elsewhere). Skipped, with the reason, where the ranks have no GPU.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class StreamOrderContract extends RankContract {
    private static final DataType T = DataType.DOUBLE;

    private CudaStream stream() {
        Mem.DEVICE.assume(comm);
        return closeAfter(Cuda.newStream());
    }

    private DeviceBuffer device(long bytes) {
        return (DeviceBuffer) alloc(Mem.DEVICE, bytes);
    }

    private static HostBuffer doubles(double... values) {
        HostBuffer h = Cuda.allocatePinned(8L * values.length);
        for (int i = 0; i < values.length; i++) h.segment().setAtIndex(ValueLayout.JAVA_DOUBLE, i, values[i]);
        return h;
    }

    private static double at(HostBuffer h, int i) {
        return h.segment().getAtIndex(ValueLayout.JAVA_DOUBLE, i);
    }

    @Test
    void a_allReducesRunBetweenTheStreamsEarlierAndLaterWork() {
        CudaStream s = stream();
        int rounds = 20, count = 1003;
        DeviceBuffer in = device(8L * count), out = device(8L * count);
        HostBuffer[] inputs = new HostBuffer[rounds], results = new HostBuffer[rounds];
        try (StreamCommunicator v = comm.onStream(s)) {
            for (int r = 0; r < rounds; r++) {
                double[] x = new double[count];
                for (int i = 0; i < count; i++) x[i] = r * 1000 + rank + i;
                inputs[r] = closeAfter(doubles(x));
                results[r] = closeAfter(Cuda.allocatePinned(8L * count));
                // the input written on the stream before the call, the result read on it after: no host wait between rounds
                Cuda.copyAsync(in, inputs[r], 8L * count, s);
                v.allReduce(in, out, count, T, ReduceOp.SUM);
                Cuda.copyAsync(results[r], out, 8L * count, s);
            }
            v.synchronize();
        }
        int n = size;
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < count; i += 97) {
                double want = (double) n * (r * 1000 + i) + n * (n - 1) / 2.0;
                assertEquals(want, at(results[r], i), "round " + r + " element " + i);
            }
        }
    }

    @Test
    void b_everyCollectiveInStreamOrder() {
        CudaStream s = stream();
        int n = size, root = n - 1, count = 257;
        long bytes = 8L * count;
        DeviceBuffer a = device(bytes * n), b = device(bytes * n);
        try (StreamCommunicator v = comm.onStream(s)) {
            // broadcast
            byte[] data = Data.bytes(5, root, (int) bytes);
            if (rank == root) Mem.write(a, data); else Mem.poison(a);
            v.broadcast(a, count, T, root);
            v.synchronize();
            assertArrayEquals(data, Arrays.copyOf(Mem.read(a), (int) bytes), "broadcast");
            // allGather and gather
            Mem.write(a, Data.bytes(7, rank, (int) bytes));
            Mem.poison(b);
            v.allGather(a, b, count, T);
            v.synchronize();
            byte[] got = Mem.read(b);
            for (int r = 0; r < n; r++) {
                assertArrayEquals(Data.bytes(7, r, (int) bytes), Arrays.copyOfRange(got, (int) (r * bytes), (int) ((r + 1) * bytes)), "allGather block " + r);
            }
            Mem.poison(b);
            v.gather(a, rank == root ? b : null, count, T, root);
            v.synchronize();
            if (rank == root) assertArrayEquals(got, Mem.read(b), "gather");
            // scatter
            if (rank == root) Mem.write(a, got);
            Mem.poison(b);
            v.scatter(rank == root ? a : null, b, count, T, root);
            v.synchronize();
            assertArrayEquals(Data.bytes(7, rank, (int) bytes), Arrays.copyOf(Mem.read(b), (int) bytes), "scatter");
            // allToAll: block r from rank q is seed q*n+r
            byte[] all = new byte[(int) (bytes * n)];
            for (int r = 0; r < n; r++) System.arraycopy(Data.bytes(11, rank * n + r, (int) bytes), 0, all, (int) (r * bytes), (int) bytes);
            Mem.write(a, all);
            Mem.poison(b);
            v.allToAll(a, b, count, T);
            v.synchronize();
            got = Mem.read(b);
            for (int q = 0; q < n; q++) {
                assertArrayEquals(Data.bytes(11, q * n + rank, (int) bytes), Arrays.copyOfRange(got, (int) (q * bytes), (int) ((q + 1) * bytes)), "allToAll from " + q);
            }
            // reduce and reduceScatterBlock of rank-valued inputs
            double[] ones = new double[count * n];
            Arrays.fill(ones, rank + 1);
            try (HostBuffer h = doubles(ones)) {
                Cuda.copy(a, h, bytes * n);
            }
            DeviceBuffer c = device(bytes);
            Mem.poison(b);
            Mem.poison(c);
            v.reduce(a, rank == root ? c : null, count, T, ReduceOp.SUM, root);
            v.reduceScatterBlock(a, b, count, T, ReduceOp.SUM);
            v.barrier();
            v.synchronize();
            double sum = n * (n + 1) / 2.0;
            MemorySegment rs = MemorySegment.ofArray(Mem.read(b)), rd = MemorySegment.ofArray(Mem.read(c));
            assertEquals(sum, rs.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8L * (count - 1)), "reduceScatterBlock");
            if (rank == root) assertEquals(sum, rd.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8L * (count - 1)), "reduce");
        }
    }

    @Test
    void c_sendAndReceiveInStreamOrder() {
        CudaStream s = stream();
        org.junit.jupiter.api.Assumptions.assumeTrue(size >= 2, "needs two ranks");
        int n = size, count = 131072; // 1 MiB: past the eager limit of every MPI
        long bytes = 8L * count;
        int right = (rank + 1) % n, left = (rank + n - 1) % n;
        DeviceBuffer out = device(bytes), in = device(bytes);
        HostBuffer src = closeAfter(HostBuffer.allocate(bytes));
        MemorySegment.copy(MemorySegment.ofArray(Data.bytes(3, rank, (int) bytes)), 0, src.segment(), 0, bytes);
        HostBuffer got = closeAfter(Cuda.allocatePinned(bytes));
        try (StreamCommunicator v = comm.onStream(s)) {
            Cuda.copy(out, src, bytes);
            Mem.poison(in);
            // even ranks send first, odd ranks receive first: a ring of rendezvous sends that cannot all wait
            if (rank % 2 == 0) {
                v.send(out, count, T, right, 5);
                v.recv(in, count, T, left, 5);
            } else {
                v.recv(in, count, T, left, 5);
                v.send(out, count, T, right, 5);
            }
            Cuda.copyAsync(got, in, bytes, s);
            v.synchronize();
        }
        byte[] g = new byte[(int) bytes];
        MemorySegment.copy(got.segment(), 0, MemorySegment.ofArray(g), 0, bytes);
        assertArrayEquals(Data.bytes(3, left, (int) bytes), g, "from rank " + left);
    }

    @Test
    void d_backToBackInPlaceAllReducesAndBuffersClosedWhileQueued() {
        CudaStream s = stream();
        DeviceBuffer x = device(8);
        HostBuffer result = closeAfter(Cuda.allocatePinned(8));
        try (HostBuffer one = doubles(1.0)) {
            Cuda.copy(x, one, 8);
        }
        int rounds = size > 2 ? 20 : 200;
        try (StreamCommunicator v = comm.onStream(s)) {
            for (int i = 0; i < rounds; i++) {
                v.allReduce(Communicator.IN_PLACE, x, 1, T, ReduceOp.SUM); // x = size^(i+1)
            }
            Cuda.copyAsync(result, x, 8, s);
            // a buffer closed while its operation is queued: its memory goes when the operation is done
            DeviceBuffer temp = Cuda.allocate(8L * 1024);
            DeviceBuffer tempOut = Cuda.allocate(8L * 1024);
            Cuda.fill(temp, (byte) 0);
            v.allReduce(temp, tempOut, 1024, T, ReduceOp.MAX);
            temp.close();
            tempOut.close();
            v.synchronize();
        }
        double want = Math.pow(size, rounds);
        assertEquals(want, at(result, 0), "after " + rounds + " in-place allReduces of 1 on " + size + " ranks");
    }

    @Test
    void e_aFailureAfterTheCallSurfacesOnTheNextCall() {
        CudaStream s = stream();
        org.junit.jupiter.api.Assumptions.assumeTrue(size >= 2, "needs two ranks");
        DeviceBuffer big = device(8 * 16), small = device(8 * 8);
        StreamCommunicator v = comm.onStream(s);
        try {
            if (rank == 0) {
                v.send(big, 16, T, 1, 9);
                v.synchronize();
            } else if (rank == 1) {
                v.recv(small, 8, T, 0, 9); // returns at once: the truncation happens on the view's thread
                StreamOperationException e = assertThrows(StreamOperationException.class, v::synchronize);
                assertInstanceOf(TruncationException.class, e.getCause(), e.toString());
                assertThrows(StreamOperationException.class, () -> v.allReduce(small, big, 8, T, ReduceOp.SUM), "every later call throws it");
            }
        } finally {
            v.close();
        }
    }

    @Test
    void f_mistakesThrowAtTheCall() {
        CudaStream s = stream();
        DeviceBuffer d = device(64), e = device(64);
        HostBuffer h = closeAfter(HostBuffer.allocate(64));
        StreamCommunicator v = comm.onStream(s);
        try {
            assertThrows(UnsupportedBufferException.class, () -> v.allReduce(h, d, 8, T, ReduceOp.SUM), "host memory");
            assertThrows(InvalidRankException.class, () -> v.broadcast(d, 8, T, size), "root out of range");
            assertThrows(BufferTooSmallException.class, () -> v.allReduce(d, e, 9, T, ReduceOp.SUM), "count past the buffer");
            DeviceBuffer closed = Cuda.allocate(64);
            closed.close();
            assertThrows(BufferFreedException.class, () -> v.allReduce(closed, e, 8, T, ReduceOp.SUM), "a closed buffer");
            v.allReduce(d, e, 8, T, ReduceOp.SUM); // the view still works after mistakes
            v.synchronize();
        } finally {
            v.close();
        }
        assertThrows(CommunicatorClosedException.class, () -> v.allReduce(d, e, 8, T, ReduceOp.SUM), "a closed view");
    }

    @Test
    void g_captureIntoAGraphWhereTheCallRunsOnTheGpuAlone() {
        CudaStream s = stream();
        int count = 1024;
        long bytes = 8L * count;
        DeviceBuffer in = device(bytes), out = device(bytes);
        HostBuffer src = closeAfter(doubles(filled(count, rank + 1)));
        HostBuffer got = closeAfter(Cuda.allocatePinned(bytes));
        var onStream = CollectivesDiagnostics.planner(comm).onStream(new Shape(Collective.ALL_REDUCE, T, ReduceOp.SUM, bytes, 0));
        String candidates = String.join(", ", Arrays.stream(onStream).map(dev.ferry.collectives.Algorithm::name).toList());
        String algorithm;
        try (StreamCommunicator v = comm.onStream(s)) {
            // a first call outside the capture sets the path up (as with NCCL, a program warms up before it captures)
            v.allReduce(in, out, count, T, ReduceOp.SUM);
            v.synchronize();
            CUgraph graph = new CUgraph();
            s.synchronize();
            Cuda.ensureAvailability();
            check(JCudaDriver.cuStreamBeginCapture(s.handle(), CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
            boolean captured;
            CollectivesDiagnostics.forgetLastAlgorithm();
            try {
                Cuda.copyAsync(in, src, bytes, s);
                v.allReduce(in, out, count, T, ReduceOp.SUM);
                Cuda.copyAsync(got, out, bytes, s);
                captured = true;
            } catch (CaptureUnsupportedException e) {
                captured = false;
                assertEquals("", candidates, "refused under capture although these algorithms enqueue it on a stream: " + e.getMessage());
            } finally {
                int rc = JCudaDriver.cuStreamEndCapture(s.handle(), graph);
                if (rc != 0 && rc != jcuda.driver.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) check(rc, "cuStreamEndCapture");
            }
            if (!captured) {
                JCudaDriver.cuGraphDestroy(graph);
                v.allReduce(in, out, count, T, ReduceOp.SUM); // the view goes on after a refused capture
                v.synchronize();
                return;
            }
            algorithm = CollectivesDiagnostics.lastAlgorithm();
            assertTrue(java.util.Set.of("nccl", "ipc-short").contains(algorithm), "captured on " + algorithm + ": only the algorithms that enqueue on "
                    + "the stream by themselves (" + candidates + ") can be");
            CUgraphExec exec = new CUgraphExec();
            check(JCudaDriver.cuGraphInstantiate(exec, graph, 0), "cuGraphInstantiate");
            double want = size * (size + 1) / 2.0;
            try {
                for (int i = 0; i < 1000; i++) {
                    got.segment().fill((byte) 0);
                    check(JCudaDriver.cuGraphLaunch(exec, s.handle()), "cuGraphLaunch");
                    s.synchronize();
                    assertEquals(want, at(got, i % count), "replay " + i);
                }
            } finally {
                JCudaDriver.cuGraphExecDestroy(exec);
                JCudaDriver.cuGraphDestroy(graph);
            }
            v.synchronize();
        }
    }

    private static double[] filled(int n, double value) {
        double[] d = new double[n];
        Arrays.fill(d, value);
        return d;
    }

    private static void check(int rc, String what) {
        if (rc != 0) throw new IllegalStateException(what + " failed: " + jcuda.driver.CUresult.stringFor(rc));
    }

    @Test
    void h_inPlaceGatherScatterAndAllGatherInStreamOrder() {
        CudaStream s = stream();
        int n = size, root = n - 1, count = 129;
        int bytes = 8 * count;
        DeviceBuffer all = device((long) bytes * n), mine = device(bytes);
        try (StreamCommunicator v = comm.onStream(s)) {
            // allGather in place: every rank's block is already at its place in the result
            Mem.poison(all);
            Mem.write(all.slice((long) rank * bytes, bytes), Data.bytes(19, rank, bytes));
            v.allGather(Communicator.IN_PLACE, all, count, T);
            v.synchronize();
            byte[] got = Mem.read(all);
            for (int r = 0; r < n; r++) {
                assertArrayEquals(Data.bytes(19, r, bytes), Arrays.copyOfRange(got, r * bytes, (r + 1) * bytes), "allGather in place, block " + r);
            }
            // gather in place at the root (the others pass their block): the root's block stays, the others arrive
            if (rank == root) {
                Mem.poison(all);
                Mem.write(all.slice((long) root * bytes, bytes), Data.bytes(23, root, bytes));
                v.gather(Communicator.IN_PLACE, all, count, T, root);
            } else {
                Mem.write(mine, Data.bytes(23, rank, bytes));
                v.gather(mine, null, count, T, root);
            }
            v.synchronize();
            if (rank == root) {
                got = Mem.read(all);
                for (int r = 0; r < n; r++) {
                    assertArrayEquals(Data.bytes(23, r, bytes), Arrays.copyOfRange(got, r * bytes, (r + 1) * bytes), "gather in place, block " + r);
                }
            }
            // scatter in place at the root: the root keeps its block where it is, the others receive theirs
            if (rank == root) {
                byte[] blocks = new byte[bytes * n];
                for (int r = 0; r < n; r++) System.arraycopy(Data.bytes(29, r, bytes), 0, blocks, r * bytes, bytes);
                Mem.write(all, blocks);
                v.scatter(all, Communicator.IN_PLACE, count, T, root);
            } else {
                Mem.poison(mine);
                v.scatter(null, mine, count, T, root);
            }
            v.synchronize();
            byte[] want = Data.bytes(29, rank, bytes);
            byte[] have = rank == root ? Arrays.copyOfRange(Mem.read(all), root * bytes, (root + 1) * bytes) : Mem.read(mine);
            assertArrayEquals(want, have, "scatter in place, rank " + rank + "'s block");
        }
    }
}
