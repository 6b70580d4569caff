// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ferry.Buffer;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidReduceOpException;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.MatchedMessage;
import dev.ferry.TruncationException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Device buffers used the way applications use them, on every backend that takes them: the
 * application's own kernel writes a buffer on a stream of its own (legacy default, per-thread
 * default, blocking, non-blocking; in the primary context or in a context it created) and the
 * buffer goes straight to a send, isend or collective with no synchronization; memory is allocated
 * and freed around every call so that addresses repeat; slices sit at odd offsets of larger
 * allocations; a received buffer is read at once by a kernel on another stream; rejected calls
 * are followed by small exchanges. The writing kernels first spin for milliseconds, so a transfer
 * that does not wait for them sends the bytes from before. Every byte is checked.
 *
 * <p>Runs under {@link RankRunner} with device buffers; without a GPU it is skipped with the
 * reason, or fails when {@code FERRY_TEST_REQUIRE} names {@code cuda}.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
public class ApplicationPatterns {
    /** Cycles a writing kernel waits before it writes (some milliseconds on any current GPU). */
    private static final long SPIN = 20_000_000L;
    private static final int[] SIZES = {256, 4 << 20};
    private static final String[] STREAMS = {"legacy default", "per-thread default", "blocking", "non-blocking"};

    private Communicator comm;
    private int rank;
    private int size;
    private int next;
    private int prev;
    private long primary;

    @BeforeEach
    void open() {
        comm = TestWorld.world().duplicate();
        Mem.DEVICE.assume(comm);
        rank = comm.rank();
        size = comm.size();
        next = (rank + 1) % size;
        prev = (rank + size - 1) % size;
        primary = TestKernels.primaryContext(Cuda.defaultDevice().ordinal());
        TestKernels.setCurrent(primary);
    }

    @AfterEach
    void close() {
        try {
            comm.barrier();
        } finally {
            comm.close();
        }
    }

    private long stream(int kind) {
        return switch (kind) {
            case 0 -> TestKernels.STREAM_LEGACY;
            case 1 -> TestKernels.STREAM_PER_THREAD;
            case 2 -> TestKernels.createStream(0);
            default -> TestKernels.createStream(1);
        };
    }

    private static void release(long stream) {
        if (stream != TestKernels.STREAM_LEGACY && stream != TestKernels.STREAM_PER_THREAD) {
            TestKernels.synchronize(stream);
            TestKernels.destroyStream(stream);
        }
    }

    private static void assertPattern(byte[] got, int seed, String what) {
        for (int i = 0; i < got.length; i++) {
            if (got[i] != TestKernels.patternByte(i, seed)) {
                int wrong = 0;
                for (int j = i; j < got.length; j++) if (got[j] != TestKernels.patternByte(j, seed)) wrong++;
                throw new AssertionError(what + ": " + wrong + " of " + got.length + " bytes stale or wrong, the first at " + i
                        + " (0x" + Integer.toHexString(got[i] & 0xFF) + " instead of 0x" + Integer.toHexString(TestKernels.patternByte(i, seed) & 0xFF) + ")");
            }
        }
    }

    private static DeviceBuffer poisonedDevice(long n) {
        DeviceBuffer b = Cuda.allocate(n);
        Cuda.fill(b, Mem.POISON);
        return b;
    }

    @Test
    void a_kernelOnEachKindOfStreamThenSendWithoutSynchronizing() {
        for (int kind = 0; kind < STREAMS.length; kind++) {
            for (int n : SIZES) {
                for (boolean nonBlocking : new boolean[] {false, true}) {
                    int seed = 1000 * kind + (nonBlocking ? 500 : 0) + n % 97;
                    long s = stream(kind);
                    try (DeviceBuffer send = poisonedDevice(n); DeviceBuffer recv = poisonedDevice(n)) {
                        Request in = comm.irecv(recv, n, DataType.BYTE, prev, 7);
                        TestKernels.slowFill(send.address(), n, seed + rank, SPIN, s);
                        if (nonBlocking) {
                            comm.isend(send, n, DataType.BYTE, next, 7).waitFor();
                        } else {
                            comm.send(send, n, DataType.BYTE, next, 7);
                        }
                        in.waitFor();
                        assertPattern(Mem.read(recv), seed + prev, (nonBlocking ? "isend" : "send") + " of " + n + " bytes right after a kernel on the "
                                + STREAMS[kind] + " stream");
                    } finally {
                        release(s);
                    }
                }
            }
        }
    }

    @Test
    void b_kernelInAContextOfTheApplicationThenSendAndReceive() {
        int ordinal = Cuda.defaultDevice().ordinal();
        for (int n : SIZES) {
            long ctx = TestKernels.createContext(ordinal); // current from here on, as after cuCtxCreate in an application
            long send = TestKernels.alloc(n), recv = TestKernels.alloc(n);
            long writer = TestKernels.createStream(1), reader = TestKernels.createStream(1);
            try {
                TestKernels.memset(recv, Mem.POISON, n);
                Request in = comm.irecv(DeviceBuffer.wrap(ordinal, recv, n), n, DataType.BYTE, prev, 8);
                TestKernels.slowFill(send, n, 77 + rank, SPIN, writer);
                comm.send(DeviceBuffer.wrap(ordinal, send, n), n, DataType.BYTE, next, 8);
                in.waitFor();
                assertEquals(ctx, TestKernels.currentContext(), "the application's context is current again after its Ferry calls");
                // the received data is read at once by a kernel of the application's context on another stream
                assertEquals(0, TestKernels.countMismatches(recv, n, 77 + prev, reader),
                        "bytes of a " + n + "-byte message into memory of an application context, read by its kernel right after the receive");
                assertPattern(TestKernels.read(recv, n), 77 + prev, "the same message read back by the application");
            } finally {
                TestKernels.destroyStream(writer);
                TestKernels.destroyStream(reader);
                TestKernels.free(send);
                TestKernels.free(recv);
                TestKernels.destroyContext(ctx);
                TestKernels.setCurrent(primary);
            }
        }
    }

    @Test
    void b_collectivesOnMemoryOfAContextOfTheApplication() {
        int ordinal = Cuda.defaultDevice().ordinal();
        for (int n : new int[] {64, 1 << 20}) {
            long ctx = TestKernels.createContext(ordinal);
            long in = TestKernels.alloc(4L * n), out = TestKernels.alloc(4L * n), b = TestKernels.alloc(n);
            long writer = TestKernels.createStream(1);
            try {
                TestKernels.memset(out, Mem.POISON, 4L * n);
                TestKernels.slowSetInts(in, n, rank + 1, SPIN, writer);
                comm.allReduce(DeviceBuffer.wrap(ordinal, in, 4L * n), DeviceBuffer.wrap(ordinal, out, 4L * n), n, DataType.INT, ReduceOp.SUM);
                assertEquals(ctx, TestKernels.currentContext(), "the application's context is current again after its allReduce");
                MemorySegment got = MemorySegment.ofArray(TestKernels.read(out, 4 * n));
                long ranks = (long) size * (size + 1) / 2;
                for (int i = 0; i < n; i++) {
                    assertEquals(ranks + (long) size * (i % 1000), got.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i),
                            "allReduce of " + n + " ints in memory of an application context, element " + i);
                }
                int root = size - 1;
                TestKernels.memset(b, Mem.POISON, n);
                if (rank == root) TestKernels.slowFill(b, n, 4343, SPIN, writer);
                comm.broadcast(DeviceBuffer.wrap(ordinal, b, n), n, DataType.BYTE, root);
                assertPattern(TestKernels.read(b, n), 4343, "broadcast of " + n + " bytes in memory of an application context");
            } finally {
                TestKernels.destroyStream(writer);
                TestKernels.free(in);
                TestKernels.free(out);
                TestKernels.free(b);
                TestKernels.destroyContext(ctx);
                TestKernels.setCurrent(primary);
            }
        }
    }

    @Test
    void c_kernelThenCollectivesWithoutSynchronizing() {
        long s = TestKernels.createStream(1);
        try {
            for (int n : new int[] {64, 1 << 20}) {
                try (DeviceBuffer in = poisonedDevice(4L * n); DeviceBuffer out = poisonedDevice(4L * n)) {
                    TestKernels.slowSetInts(in.address(), n, rank + 1, SPIN, s);
                    comm.allReduce(in, out, n, DataType.INT, ReduceOp.SUM);
                    MemorySegment got = MemorySegment.ofArray(Mem.read(out));
                    long ranks = (long) size * (size + 1) / 2;
                    for (int i = 0; i < n; i++) {
                        long want = ranks + (long) size * (i % 1000);
                        assertEquals(want, got.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), "allReduce of " + n + " ints right after the kernel that wrote them, element " + i);
                    }
                }
                int root = size - 1;
                try (DeviceBuffer b = poisonedDevice(n)) {
                    if (rank == root) TestKernels.slowFill(b.address(), n, 4242, SPIN, s);
                    comm.broadcast(b, n, DataType.BYTE, root);
                    assertPattern(Mem.read(b), 4242, "broadcast of " + n + " bytes right after the root's kernel wrote them");
                }
                try (DeviceBuffer in = poisonedDevice(n); DeviceBuffer all = poisonedDevice((long) n * size)) {
                    TestKernels.slowFill(in.address(), n, 4100 + rank, SPIN, s);
                    comm.allGather(in, all, n, DataType.BYTE);
                    byte[] got = Mem.read(all);
                    for (int r = 0; r < size; r++) {
                        assertPattern(java.util.Arrays.copyOfRange(got, r * n, (r + 1) * n), 4100 + r,
                                "allGather of " + n + " bytes per rank right after each rank's kernel wrote them, rank " + r + "'s block");
                    }
                }
            }
        } finally {
            release(s);
        }
    }

    @Test
    void d_allocateAndFreeAroundEveryCallSoThatAddressesRepeat() {
        long s = TestKernels.createStream(1);
        try {
            for (int n : new int[] {400, 65536, 4 << 20}) {
                for (int it = 0; it < 30; it++) {
                    int seed = n % 1000 + it * 3;
                    try (DeviceBuffer send = Cuda.allocate(n); DeviceBuffer recv = poisonedDevice(n)) {
                        TestKernels.slowFill(send.address(), n, seed + rank, it % 5 == 0 ? SPIN : 0, s);
                        comm.sendRecv(send, n, DataType.BYTE, next, 9, recv, n, DataType.BYTE, prev, 9);
                        assertPattern(Mem.read(recv), seed + prev, "iteration " + it + ": " + n + " bytes between buffers allocated for this call");
                    }
                }
            }
        } finally {
            release(s);
        }
    }

    @Test
    void e_slicesAtOddOffsetsOfLargerAllocations() {
        long s = TestKernels.createStream(1);
        try (DeviceBuffer big = poisonedDevice(8 << 20); DeviceBuffer other = poisonedDevice(8 << 20)) {
            for (int n : new int[] {13, 256, 1 << 20}) {
                long at = 4096 + 13, into = 77;
                Cuda.fill(other, Mem.POISON);
                DeviceBuffer send = big.slice(at, n), recv = other.slice(into, n);
                TestKernels.slowFill(send.address(), n, 5 + rank, SPIN, s);
                comm.sendRecv(send, n, DataType.BYTE, next, 10, recv, n, DataType.BYTE, prev, 10);
                byte[] all = Mem.read(other);
                assertPattern(java.util.Arrays.copyOfRange(all, (int) into, (int) into + n), 5 + prev, n + "-byte slice at offset " + into);
                for (int i = 0; i < all.length; i++) {
                    if ((i < into || i >= into + n) && all[i] != Mem.POISON) {
                        throw new AssertionError("byte " + i + " outside the received slice [" + into + ", +" + n + ") was written");
                    }
                }
            }
        } finally {
            release(s);
        }
    }

    @Test
    void f_receiveThenAKernelOnAnotherStreamReadsIt() {
        long writer = TestKernels.createStream(1), reader = TestKernels.createStream(1);
        try {
            for (int n : SIZES) {
                for (boolean blocking : new boolean[] {true, false}) {
                    try (DeviceBuffer send = Cuda.allocate(n); DeviceBuffer recv = poisonedDevice(n)) {
                        TestKernels.slowFill(send.address(), n, 31 + rank, 0, writer);
                        Request out = comm.isend(send, n, DataType.BYTE, next, 11);
                        if (blocking) {
                            comm.recv(recv, n, DataType.BYTE, prev, 11);
                        } else {
                            comm.irecv(recv, n, DataType.BYTE, prev, 11).waitFor();
                        }
                        assertEquals(0, TestKernels.countMismatches(recv.address(), n, 31 + prev, reader),
                                "a kernel on another stream right after the " + (blocking ? "recv" : "irecv") + " of " + n + " bytes");
                        out.waitFor();
                    }
                }
            }
        } finally {
            release(writer);
            release(reader);
        }
    }

    @Test
    void g_rejectedCallsEachFollowedBySmallDeviceExchanges() {
        for (int it = 0; it < 20; it++) {
            try (DeviceBuffer send = Cuda.allocate(400); DeviceBuffer recv = poisonedDevice(400); DeviceBuffer small = Cuda.allocate(16)) {
                int k = it;
                switch (it % 3) {
                    case 0 -> assertThrows(BufferTooSmallException.class, () -> comm.send(small, 100, DataType.INT, next, 12));
                    case 1 -> assertThrows(InvalidRankException.class, () -> comm.recv(small, 4, DataType.BYTE, size + k, 12));
                    default -> assertThrows(InvalidReduceOpException.class, () -> comm.allReduce(small, send, 1, DataType.INT, ReduceOp.MINLOC));
                }
                TestKernels.slowFill(send.address(), 400, it + rank, 0, TestKernels.STREAM_LEGACY);
                comm.sendRecv(send, 400, DataType.BYTE, next, 12, recv, 400, DataType.BYTE, prev, 12);
                assertPattern(Mem.read(recv), it + prev, "400-byte exchange " + it + " after a rejected call");
            }
        }
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, 1);
            comm.allReduce(in, out, 1, DataType.INT, ReduceOp.SUM);
            assertEquals(size, out.segment().get(ValueLayout.JAVA_INT, 0), "the communicator is usable after it all");
        }
    }

    // ---- mistakes that reach MPI with device buffers, in sequence --------------------------------

    /**
     * The device mistakes that only the receiver can see (its sender does nothing wrong), each one
     * a documented exception: a receive shorter than its message (blocking, non-blocking, matched,
     * in a sendRecv), a message that is not a whole number of the receive type, and, for contrast,
     * a receive longer than its message.
     */
    private enum DeviceMistake {
        RECV_TRUNCATED, IRECV_TRUNCATED, RECV_PARTIAL_ELEMENT, IRECV_PARTIAL_ELEMENT, MATCHED_RECV_TRUNCATED, MATCHED_IRECV_TRUNCATED,
        SEND_RECV_TRUNCATED, IRECV_LONGER
    }

    /** Long enough for the library's device paths (CUDA IPC, rendezvous); the receive gets about half of it. */
    private static final int[] LONG_MESSAGES = {100_003, 4 << 20};

    /**
     * One mistake between ranks 0 (sender) and 1 (receiver) of {@code bytes}, then small device
     * exchanges around the ring, every byte checked.
     */
    private void mistakeThenExchanges(DeviceMistake m, int bytes, int step) {
        int tag = 500 + step;
        int room = bytes / 2;
        if (rank == 0) {
            try (DeviceBuffer out = Cuda.allocate(bytes)) {
                TestKernels.slowFill(out.address(), bytes, step, 0, TestKernels.STREAM_LEGACY);
                int n = switch (m) {
                    case RECV_PARTIAL_ELEMENT, IRECV_PARTIAL_ELEMENT -> 7;
                    default -> bytes;
                };
                if (m == DeviceMistake.SEND_RECV_TRUNCATED) {
                    try (DeviceBuffer back = Cuda.allocate(16)) {
                        comm.sendRecv(out, n, DataType.BYTE, 1, tag, back, 16, DataType.BYTE, 1, tag);
                    }
                } else {
                    comm.send(out, n, DataType.BYTE, 1, tag);
                }
            }
        } else if (rank == 1) {
            try (DeviceBuffer in = poisonedDevice(Math.max(room, 16))) {
                switch (m) {
                    case RECV_TRUNCATED -> assertThrows(TruncationException.class, () -> comm.recv(in, room, DataType.BYTE, 0, tag), m.name());
                    case IRECV_TRUNCATED -> {
                        Request r = comm.irecv(in, room, DataType.BYTE, 0, tag);
                        assertThrows(TruncationException.class, r::waitFor, m.name());
                    }
                    case RECV_PARTIAL_ELEMENT -> assertThrows(DataTypeMismatchException.class, () -> comm.recv(in, 4, DataType.INT, 0, tag), m.name());
                    case IRECV_PARTIAL_ELEMENT -> {
                        Request r = comm.irecv(in, 4, DataType.INT, 0, tag);
                        assertThrows(DataTypeMismatchException.class, r::waitFor, m.name());
                    }
                    case MATCHED_RECV_TRUNCATED -> {
                        MatchedMessage mm = comm.mprobe(0, tag);
                        assertEquals(bytes, mm.status().byteCount());
                        assertThrows(TruncationException.class, () -> mm.recv(in, room, DataType.BYTE), m.name());
                    }
                    case MATCHED_IRECV_TRUNCATED -> {
                        MatchedMessage mm = comm.mprobe(0, tag);
                        Request r = mm.irecv(in, room, DataType.BYTE);
                        assertThrows(TruncationException.class, r::waitFor, m.name());
                    }
                    case SEND_RECV_TRUNCATED -> {
                        try (DeviceBuffer back = Cuda.allocate(16)) {
                            TestKernels.slowFill(back.address(), 16, step, 0, TestKernels.STREAM_LEGACY);
                            assertThrows(TruncationException.class, () -> comm.sendRecv(back, 16, DataType.BYTE, 0, tag, in, room, DataType.BYTE, 0, tag), m.name());
                        }
                    }
                    case IRECV_LONGER -> {
                        try (DeviceBuffer all = poisonedDevice(bytes + 64)) {
                            assertEquals(bytes, comm.irecv(all, bytes + 64, DataType.BYTE, 0, tag).waitFor().byteCount(), m.name());
                            byte[] got = Mem.read(all);
                            assertPattern(java.util.Arrays.copyOf(got, bytes), step, m + ": the message");
                            for (int i = bytes; i < got.length; i++) {
                                assertEquals(Mem.POISON, got[i], m + ": byte " + i + " past the message");
                            }
                        }
                    }
                }
                if (m == DeviceMistake.RECV_TRUNCATED || m == DeviceMistake.IRECV_TRUNCATED || m == DeviceMistake.MATCHED_RECV_TRUNCATED
                        || m == DeviceMistake.MATCHED_IRECV_TRUNCATED || m == DeviceMistake.SEND_RECV_TRUNCATED) {
                    assertPattern(java.util.Arrays.copyOf(Mem.read(in), room), step, m + ": the first bytes of the truncated message");
                }
            }
        }
        for (int it = 0; it < 3; it++) {
            int n = it == 2 ? bytes : 400;
            try (DeviceBuffer send = Cuda.allocate(n); DeviceBuffer recv = poisonedDevice(n)) {
                TestKernels.slowFill(send.address(), n, step * 7 + it + rank, 0, TestKernels.STREAM_LEGACY);
                Request in = comm.irecv(recv, n, DataType.BYTE, prev, 900 + it);
                comm.send(send, n, DataType.BYTE, next, 900 + it);
                assertEquals(n, in.waitFor().byteCount());
                assertPattern(Mem.read(recv), step * 7 + it + prev, n + "-byte device exchange " + it + " after " + m + " of " + bytes + " bytes");
            }
        }
    }

    @Test
    void h_deviceMistakesInTheReportedOrderEachFollowedByExchanges() {
        assumeTrue(size >= 2, "needs two ranks");
        int step = 0;
        for (int bytes : LONG_MESSAGES) {
            for (DeviceMistake m : new DeviceMistake[] {DeviceMistake.RECV_TRUNCATED, DeviceMistake.IRECV_TRUNCATED, DeviceMistake.RECV_PARTIAL_ELEMENT}) {
                mistakeThenExchanges(m, bytes, step++);
            }
        }
        assertUsable();
    }

    /** Every device mistake in seeded random orders ({@code ferry.test.seed}), the same on every rank. */
    @Test
    void i_deviceMistakesInRandomOrdersEachFollowedByExchanges() {
        assumeTrue(size >= 2, "needs two ranks");
        java.util.Random random = new java.util.Random(MatrixSettings.seed().hashCode());
        int step = 100;
        for (int round = 0; round < 3; round++) {
            java.util.List<DeviceMistake> order = new java.util.ArrayList<>(java.util.List.of(DeviceMistake.values()));
            java.util.Collections.shuffle(order, random);
            for (DeviceMistake m : order) {
                mistakeThenExchanges(m, LONG_MESSAGES[random.nextInt(LONG_MESSAGES.length)], step++);
            }
        }
        assertUsable();
    }

    private void assertUsable() {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, 1);
            comm.allReduce(in, out, 1, DataType.INT, ReduceOp.SUM);
            assertEquals(size, out.segment().get(ValueLayout.JAVA_INT, 0), "the communicator is usable after it all");
        }
    }
}
