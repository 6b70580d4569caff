// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.CudaException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The driver's context calls on raw handles, through java.lang.foreign on {@code libcuda.so.1}:
 * which context is current on this thread, switching it, synchronizing a context that is not
 * current, and which context owns a device address. Raw handles (no JCuda objects) keep these
 * calls cheap enough to run before every device operation. Loaded only once {@link Cuda} found
 * the driver.
 */
@SuppressWarnings("restricted")
final class DriverContexts {
    private static final int CU_POINTER_ATTRIBUTE_CONTEXT = 1;
    private static final MethodHandle GET_CURRENT;
    private static final MethodHandle SET_CURRENT;
    private static final MethodHandle PUSH;
    private static final MethodHandle POP;
    private static final MethodHandle SYNCHRONIZE;
    private static final MethodHandle POINTER_ATTRIBUTE;
    private static final MethodHandle ERROR_NAME;
    /** cuCtxRecordEvent (CUDA 12.5 on), else null. */
    private static final MethodHandle RECORD_EVENT;
    private static final MethodHandle EVENT_CREATE;
    private static final MethodHandle STREAM_WAIT_EVENT;
    /** One event per primary context, recorded by {@link #orderOnGpu} (under the context's entry's lock). */
    private static final java.util.Map<Long, long[]> CONTEXT_EVENTS = new java.util.concurrent.ConcurrentHashMap<>();
    private static final int CU_EVENT_DISABLE_TIMING = 2;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        GET_CURRENT = linker.downcallHandle(cuda.findOrThrow("cuCtxGetCurrent"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        SET_CURRENT = linker.downcallHandle(cuda.findOrThrow("cuCtxSetCurrent"), FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        PUSH = linker.downcallHandle(cuda.findOrThrow("cuCtxPushCurrent_v2"), FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        POP = linker.downcallHandle(cuda.findOrThrow("cuCtxPopCurrent_v2"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        SYNCHRONIZE = linker.downcallHandle(cuda.findOrThrow("cuCtxSynchronize"), FunctionDescriptor.of(JAVA_INT));
        POINTER_ATTRIBUTE = linker.downcallHandle(cuda.findOrThrow("cuPointerGetAttribute"),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
        ERROR_NAME = linker.downcallHandle(cuda.findOrThrow("cuGetErrorName"), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        RECORD_EVENT = cuda.find("cuCtxRecordEvent").map(a -> linker.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG)))
                .orElse(null);
        EVENT_CREATE = linker.downcallHandle(cuda.findOrThrow("cuEventCreate"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        STREAM_WAIT_EVENT = linker.downcallHandle(cuda.findOrThrow("cuStreamWaitEvent"), FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    }

    /** One out-parameter per thread: these calls run on every device operation. */
    private static final ThreadLocal<MemorySegment> OUT = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(JAVA_LONG));

    private DriverContexts() {
    }

    /** The context current on this thread, 0 for none. */
    static long current() {
        MemorySegment out = OUT.get();
        int r;
        try {
            r = (int) GET_CURRENT.invokeExact(out);
        } catch (Throwable t) {
            throw failed(t);
        }
        check(r, "cuCtxGetCurrent");
        return out.get(JAVA_LONG, 0);
    }

    /** Makes {@code context} (0: none) current on this thread. */
    static void setCurrent(long context) {
        int r;
        try {
            r = (int) SET_CURRENT.invokeExact(context);
        } catch (Throwable t) {
            throw failed(t);
        }
        check(r, "cuCtxSetCurrent");
    }

    /** Waits for all work of {@code context}, current on this thread or not; the current context stays. */
    static void synchronize(long context, long current) {
        try {
            if (context == current) {
                check((int) SYNCHRONIZE.invokeExact(), "cuCtxSynchronize");
                return;
            }
            check((int) PUSH.invokeExact(context), "cuCtxPushCurrent");
            int r = (int) SYNCHRONIZE.invokeExact();
            int p = (int) POP.invokeExact(OUT.get());
            check(r, "cuCtxSynchronize");
            check(p, "cuCtxPopCurrent");
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw failed(t);
        }
    }

    /**
     * Makes the work enqueued on {@code stream} from now on wait on the GPU for the work of
     * {@code context} so far, every stream of it ({@code cuCtxRecordEvent}, then
     * {@code cuStreamWaitEvent}); the host does not wait. False, having done nothing, where the
     * driver cannot (before CUDA 12.5, or while a stream of the context is being captured into a
     * graph): the caller then waits on the host. {@code context} must live as long as the process
     * (a primary context): its event is kept.
     */
    static boolean orderOnGpu(long context, long stream) {
        if (RECORD_EVENT == null) return false;
        long[] event = CONTEXT_EVENTS.computeIfAbsent(context, c -> new long[1]);
        synchronized (event) { // one record and its wait at a time: another thread's record would move the event on
            try {
                if (event[0] == 0) {
                    check((int) PUSH.invokeExact(context), "cuCtxPushCurrent");
                    MemorySegment out = OUT.get();
                    int r = (int) EVENT_CREATE.invokeExact(out, CU_EVENT_DISABLE_TIMING);
                    long created = out.get(JAVA_LONG, 0); // before the pop writes the popped context there
                    int p = (int) POP.invokeExact(out);
                    check(p, "cuCtxPopCurrent");
                    if (r != 0) return false;
                    event[0] = created;
                }
                if ((int) RECORD_EVENT.invokeExact(context, event[0]) != 0) return false;
                check((int) STREAM_WAIT_EVENT.invokeExact(stream, event[0], 0), "cuStreamWaitEvent");
                return true;
            } catch (CudaException e) {
                throw e;
            } catch (Throwable t) {
                throw failed(t);
            }
        }
    }

    /** The context that allocated the device memory at {@code address}. */
    static long contextOf(long address) {
        MemorySegment out = OUT.get();
        out.set(JAVA_LONG, 0, 0);
        int r;
        try {
            r = (int) POINTER_ATTRIBUTE.invokeExact(out, CU_POINTER_ATTRIBUTE_CONTEXT, address);
        } catch (Throwable t) {
            throw failed(t);
        }
        check(r, "cuPointerGetAttribute(CONTEXT, 0x" + Long.toHexString(address) + ")");
        return out.get(JAVA_LONG, 0);
    }

    private static CudaException failed(Throwable t) {
        return new CudaException("driver call failed: " + t, t);
    }

    private static void check(int result, String what) {
        if (result != 0) {
            String name = "CUDA error " + result;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment p = a.allocate(ADDRESS);
                if ((int) ERROR_NAME.invokeExact(result, p) == 0) {
                    name = p.get(ADDRESS, 0).reinterpret(128).getString(0);
                }
            } catch (Throwable ignored) {
                // keep the number
            }
            throw new CudaException(what + " failed: " + name + " (" + result + ")", result);
        }
    }
}
