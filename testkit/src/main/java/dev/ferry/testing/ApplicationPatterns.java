package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ferry.Buffer;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidReduceOpException;
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
}
