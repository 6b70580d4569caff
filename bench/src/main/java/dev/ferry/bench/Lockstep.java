// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one place where ranks agree: a control communicator (its own message space, host memory)
 * for barriers and agreements, and the communicators the benchmarks measure, one per backend,
 * opened once by {@link BenchMain} and looked up by the benchmarks' {@code @State} objects.
 *
 * <p>Every method here is collective on the control communicator: every rank calls it, in the
 * same order. Not thread-safe; {@link BenchMain} runs everything on its main thread.
 */
public final class Lockstep {
    private static Communicator control;
    private static HostBuffer in;
    private static HostBuffer out;
    private static final Map<String, Communicator> COMMUNICATORS = new LinkedHashMap<>();

    private Lockstep() {
    }

    /** Sets the control communicator (BenchMain, once). */
    static void start(Communicator controlCommunicator) {
        control = controlCommunicator;
        in = HostBuffer.allocate(8);
        out = HostBuffer.allocate(8);
    }

    /** Registers the communicator that benchmarks on {@code backend} use. */
    static void register(String backend, Communicator comm) {
        COMMUNICATORS.put(backend, comm);
    }

    /** True once {@link BenchMain} opened the control communicator. */
    public static boolean isStarted() {
        return control != null;
    }

    /** This rank. */
    public static int rank() {
        return control().rank();
    }

    /** Number of ranks. */
    public static int size() {
        return control().size();
    }

    /**
     * The communicator of {@code backend}, checked against the job size a benchmark was given as
     * its {@code ranks} parameter.
     */
    public static Communicator communicator(String backend, int ranks) {
        Communicator c = COMMUNICATORS.get(backend);
        if (c == null) {
            throw new IllegalStateException("backend " + backend + " was not opened; benchmarks run under dev.ferry.bench.BenchMain (opened: "
                    + COMMUNICATORS.keySet() + ")");
        }
        if (c.size() != ranks) {
            throw new IllegalStateException("parameter ranks=" + ranks + " but the job has " + c.size() + " ranks");
        }
        return c;
    }

    /** Closes every communicator (collective). */
    static void close() {
        for (Communicator c : COMMUNICATORS.values()) {
            c.close();
        }
        COMMUNICATORS.clear();
        if (control != null) {
            control.close();
            in.close();
            out.close();
            control = null;
        }
    }

    private static Communicator control() {
        if (control == null) {
            throw new IllegalStateException("no control communicator: benchmarks run under dev.ferry.bench.BenchMain");
        }
        return control;
    }

    /** Waits for every rank. */
    public static void barrier() {
        control().barrier();
    }

    /** True on every rank when {@code mine} is true on every rank. */
    public static boolean all(boolean mine) {
        return allReduce(mine ? 1 : 0, ReduceOp.MIN) == 1;
    }

    /** True on every rank when {@code mine} is true on some rank. */
    public static boolean any(boolean mine) {
        return allReduce(mine ? 1 : 0, ReduceOp.MAX) == 1;
    }

    /** The largest of every rank's {@code mine}. */
    public static double max(double mine) {
        in.segment().set(ValueLayout.JAVA_DOUBLE, 0, mine);
        control().allReduce(in, out, 1, DataType.DOUBLE, ReduceOp.MAX);
        return out.segment().get(ValueLayout.JAVA_DOUBLE, 0);
    }

    /** Combines every rank's {@code mine} with {@code op}. */
    public static long allReduce(long mine, ReduceOp op) {
        in.segment().set(ValueLayout.JAVA_LONG, 0, mine);
        control().allReduce(in, out, 1, DataType.LONG, op);
        return out.segment().get(ValueLayout.JAVA_LONG, 0);
    }

    /** True when every rank passed the same {@code value} (compared by hash). */
    public static boolean same(String value) {
        long h = fnv(value);
        return allReduce(h, ReduceOp.MIN) == h && allReduce(h, ReduceOp.MAX) == h;
    }

    /** Every rank's {@code text} (at most 255 bytes of UTF-8 each), in rank order. */
    public static List<String> allGather(String text) {
        int n = 256;
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(b.length, n - 1);
        try (HostBuffer send = HostBuffer.allocate(n); HostBuffer recv = HostBuffer.allocate((long) n * size())) {
            send.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) len);
            for (int i = 0; i < len; i++) {
                send.segment().set(ValueLayout.JAVA_BYTE, 1 + i, b[i]);
            }
            control().allGather(send, recv, n, DataType.BYTE);
            List<String> all = new ArrayList<>();
            for (int r = 0; r < size(); r++) {
                int l = Byte.toUnsignedInt(recv.segment().get(ValueLayout.JAVA_BYTE, (long) r * n));
                byte[] s = recv.segment().asSlice((long) r * n + 1, l).toArray(ValueLayout.JAVA_BYTE);
                all.add(new String(s, StandardCharsets.UTF_8));
            }
            return all;
        }
    }

    private static long fnv(String s) {
        long h = 0xcbf29ce484222325L;
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= x & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }
}
