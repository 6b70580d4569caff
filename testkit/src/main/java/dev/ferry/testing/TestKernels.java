// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.HashMap;
import java.util.Map;

/**
 * What an application does with the CUDA driver around its Ferry calls, as raw driver calls
 * through java.lang.foreign (so that the suite controls exactly which context and stream each
 * step uses): contexts of its own ({@code cuCtxCreate}), streams of every kind, memory, and
 * kernels from the checked-in PTX of {@code ferry_patterns.cu}. Every call is checked.
 */
@SuppressWarnings("restricted")
public final class TestKernels {
    /** The legacy default stream (synchronizes with blocking streams of its context). */
    public static final long STREAM_LEGACY = 0x1;
    /** The per-thread default stream. */
    public static final long STREAM_PER_THREAD = 0x2;

    private static final Linker L = Linker.nativeLinker();
    private static final SymbolLookup CUDA = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());

    private static MethodHandle h(String name, FunctionDescriptor fd) {
        return L.downcallHandle(CUDA.findOrThrow(name), fd);
    }

    private static final MethodHandle DEVICE_GET = h("cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle CTX_CREATE = h("cuCtxCreate_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    private static final MethodHandle CTX_DESTROY = h("cuCtxDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle CTX_GET_CURRENT = h("cuCtxGetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle CTX_SET_CURRENT = h("cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle PRIMARY_RETAIN = h("cuDevicePrimaryCtxRetain", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle MODULE_LOAD = h("cuModuleLoadData", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle MODULE_FUNCTION = h("cuModuleGetFunction", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle LAUNCH = h("cuLaunchKernel", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
    private static final MethodHandle STREAM_CREATE = h("cuStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle STREAM_DESTROY = h("cuStreamDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle STREAM_SYNC = h("cuStreamSynchronize", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle MEM_ALLOC = h("cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MEM_FREE = h("cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle DTOH = h("cuMemcpyDtoH_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle MEMSET = h("cuMemsetD8_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG));
    private static final MethodHandle ERROR_NAME = h("cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));

    /** Per context: the module's functions by name. */
    private static final Map<Long, Map<String, Long>> FUNCTIONS = new HashMap<>();
    private static byte[] ptx;

    private TestKernels() {
    }

    static void check(int r, String what) {
        if (r != 0) {
            String name = "error " + r;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment p = a.allocate(ADDRESS);
                if ((int) ERROR_NAME.invokeExact(r, p) == 0) name = p.get(ADDRESS, 0).reinterpret(64).getString(0);
            } catch (Throwable ignored) {
                // keep the number
            }
            throw new IllegalStateException(what + " failed: " + name + " (" + r + ")");
        }
    }

    private static long out(Arena a, java.util.function.ToIntFunction<MemorySegment> call, String what) {
        MemorySegment o = a.allocate(JAVA_LONG);
        check(call.applyAsInt(o), what);
        return o.get(JAVA_LONG, 0);
    }

    private static RuntimeException rethrow(Throwable t) {
        return t instanceof RuntimeException r ? r : new IllegalStateException(t);
    }

    /** The context current on this thread (0: none). */
    public static long currentContext() {
        try (Arena a = Arena.ofConfined()) {
            return out(a, o -> invoke(CTX_GET_CURRENT, o), "cuCtxGetCurrent");
        }
    }

    public static void setCurrent(long ctx) {
        try {
            check((int) CTX_SET_CURRENT.invokeExact(ctx), "cuCtxSetCurrent");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The primary context of {@code ordinal}, retained (Ferry's and the runtime API's context). */
    public static long primaryContext(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dev = a.allocate(JAVA_INT);
            check(invoke(DEVICE_GET, dev, ordinal), "cuDeviceGet");
            int d = dev.get(JAVA_INT, 0);
            return out(a, o -> invoke(PRIMARY_RETAIN, o, d), "cuDevicePrimaryCtxRetain");
        }
    }

    /** A new context of the application's own on {@code ordinal} ({@code cuCtxCreate}), current on this thread afterwards. */
    public static long createContext(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dev = a.allocate(JAVA_INT);
            check(invoke(DEVICE_GET, dev, ordinal), "cuDeviceGet");
            int d = dev.get(JAVA_INT, 0);
            return out(a, o -> invoke(CTX_CREATE, o, 0, d), "cuCtxCreate");
        }
    }

    public static void destroyContext(long ctx) {
        try {
            check((int) CTX_DESTROY.invokeExact(ctx), "cuCtxDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
        synchronized (FUNCTIONS) {
            FUNCTIONS.remove(ctx);
        }
    }

    /** A stream of the current context: flags 0 (blocking) or 1 (CU_STREAM_NON_BLOCKING). */
    public static long createStream(int flags) {
        try (Arena a = Arena.ofConfined()) {
            return out(a, o -> invoke(STREAM_CREATE, o, flags), "cuStreamCreate");
        }
    }

    public static void destroyStream(long s) {
        try {
            check((int) STREAM_DESTROY.invokeExact(s), "cuStreamDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void synchronize(long stream) {
        try {
            check((int) STREAM_SYNC.invokeExact(stream), "cuStreamSynchronize");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Device memory of the current context. */
    public static long alloc(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            return out(a, o -> invoke(MEM_ALLOC, o, Math.max(bytes, 1)), "cuMemAlloc");
        }
    }

    public static void free(long ptr) {
        try {
            check((int) MEM_FREE.invokeExact(ptr), "cuMemFree");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void memset(long ptr, int value, long bytes) {
        try {
            check((int) MEMSET.invokeExact(ptr, value, bytes), "cuMemsetD8");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Copies device memory to a new array (synchronous, in the current context). */
    public static byte[] read(long ptr, int bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(Math.max(bytes, 1));
            check((int) DTOH.invokeExact(h, ptr, (long) bytes), "cuMemcpyDtoH");
            return h.asSlice(0, bytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The byte the pattern kernel writes at {@code i}. */
    public static byte patternByte(long i, int seed) {
        return (byte) ((i * 131 + seed * 7L + (i >> 8)) & 0xFF);
    }

    /** {@code slow_fill}: waits {@code spin} cycles, then writes the pattern to {@code [ptr, ptr+n)} on {@code stream} of the current context. */
    public static void slowFill(long ptr, long n, int seed, long spin, long stream) {
        launch("slow_fill", stream, n, a -> new MemorySegment[] {longArg(a, ptr), longArg(a, n), intArg(a, seed), longArg(a, spin)});
    }

    /** {@code slow_set_ints}: waits {@code spin} cycles, then sets int i to {@code value + i % 1000}. */
    public static void slowSetInts(long ptr, long n, int value, long spin, long stream) {
        launch("slow_set_ints", stream, n, a -> new MemorySegment[] {longArg(a, ptr), longArg(a, n), intArg(a, value), longArg(a, spin)});
    }

    /** Bytes of {@code [ptr, ptr+n)} that differ from the pattern, counted by a kernel on {@code stream} (then synchronized). */
    public static long countMismatches(long ptr, long n, int seed, long stream) {
        long bad = alloc(8);
        try {
            memset(bad, 0, 8);
            launch("count_mismatches", stream, n, a -> new MemorySegment[] {longArg(a, ptr), longArg(a, n), intArg(a, seed), longArg(a, bad)});
            synchronize(stream);
            return MemorySegment.ofArray(read(bad, 8)).get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0);
        } finally {
            free(bad);
        }
    }

    private static MemorySegment longArg(Arena a, long v) {
        MemorySegment s = a.allocate(JAVA_LONG);
        s.set(JAVA_LONG, 0, v);
        return s;
    }

    private static MemorySegment intArg(Arena a, int v) {
        MemorySegment s = a.allocate(JAVA_INT);
        s.set(JAVA_INT, 0, v);
        return s;
    }

    private static void launch(String kernel, long stream, long n, java.util.function.Function<Arena, MemorySegment[]> args) {
        long f = function(kernel);
        int threads = 256;
        int blocks = (int) Math.max(1, Math.min(1024, (n + threads - 1) / threads));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment[] values = args.apply(a);
            MemorySegment params = a.allocate(ADDRESS, values.length);
            for (int i = 0; i < values.length; i++) params.setAtIndex(ADDRESS, i, values[i]);
            check((int) LAUNCH.invokeExact(f, blocks, 1, 1, threads, 1, 1, 0, stream, params, MemorySegment.NULL), "cuLaunchKernel(" + kernel + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The kernel in the module loaded into the current context (once per context). */
    private static long function(String name) {
        long ctx = currentContext();
        synchronized (FUNCTIONS) {
            Map<String, Long> fs = FUNCTIONS.get(ctx);
            if (fs == null) {
                fs = new HashMap<>();
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment image = a.allocateFrom(new String(ptx(), java.nio.charset.StandardCharsets.US_ASCII));
                    long module = out(a, o -> invoke(MODULE_LOAD, o, image), "cuModuleLoadData(ferry_patterns.ptx)");
                    for (String k : new String[] {"slow_fill", "count_mismatches", "slow_set_ints"}) {
                        MemorySegment kn = a.allocateFrom(k);
                        fs.put(k, out(a, o -> invoke(MODULE_FUNCTION, o, module, kn), "cuModuleGetFunction(" + k + ")"));
                    }
                }
                FUNCTIONS.put(ctx, fs);
            }
            return fs.get(name);
        }
    }

    private static synchronized byte[] ptx() {
        if (ptx == null) {
            try (InputStream in = TestKernels.class.getResourceAsStream("ferry_patterns.ptx")) {
                if (in == null) throw new IllegalStateException("ferry_patterns.ptx is missing from the test kit");
                ptx = in.readAllBytes();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return ptx;
    }

    private static int invoke(MethodHandle h, Object... args) {
        try {
            return (int) h.invokeWithArguments(args);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
