// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Variables of the process environment that native libraries read when they start (the CUDA
 * driver, the MPI library), set by Ferry before they start where the user has not set them: a
 * value the user set is never changed. Each one set is listed for the probe report.
 *
 * <p>{@code CUDA_DEVICE_MAX_CONNECTIONS} ({@link #prepareForCuda}): the driver feeds a context's
 * streams to the GPU through a few hardware queues (8 by default, fewer per process under MPS) and
 * runs the work of streams that share a queue in the order it was queued. A stream-ordered view
 * ({@link dev.ferry.StreamCommunicator}) holds the caller's stream while its thread runs the call
 * with work on other streams; with that work queued behind the held stream, neither moves again
 * (seen with 2 ranks sharing a GPU under MPS: the data-parallel example stopped in its first step).
 * Ferry asks for 8 everywhere: the driver's own number outside MPS, more than MPS gives a client,
 * and few enough for the clients of one GPU, which share one pool of queues (8 ranks sharing a GPU
 * ran the stream contract with 8 each, 4 the data-parallel example; 4 clients of 32 each did not
 * fit: the fourth could not make its context). More queues cost every call: with 32, a context
 * synchronize and a graph launch took 0.7 to 1 µs longer per round trip on an H200
 * ({@code launch_floor.c}, bench/results/2026-11-27-h200x2-planner-costs.md).
 */
@SuppressWarnings("restricted") // setenv through the C library
public final class ProcessEnvironment {
    /** The CUDA driver's number of hardware queues per context, read when the driver starts. */
    public static final String CUDA_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS";
    private static final List<String> CHANGES = new ArrayList<>();
    private static final Set<String> TRIED = new HashSet<>();

    private ProcessEnvironment() {
    }

    /** Sets what the CUDA driver needs for stream-ordered views; called before anything in the process may start the driver. */
    public static void prepareForCuda() {
        setIfUnset(CUDA_CONNECTIONS, "8", "hardware queues enough that a stream-ordered view's held stream cannot block the work of its call, "
                + "also under MPS, where a client gets fewer by default");
    }

    /**
     * Sets {@code name} to {@code value} unless the process started with it set or it was set here
     * before; {@code why} goes into {@link #changes()}. Returns true when this call set it.
     */
    public static synchronized boolean setIfUnset(String name, String value, String why) {
        if (System.getenv(name) != null || !TRIED.add(name)) return false;
        if (!setenv(name, value)) return false;
        CHANGES.add(name + "=" + value + " (" + why + ")");
        return true;
    }

    /** The variables set so far, each with its reason, for the probe report; empty when none. */
    public static synchronized List<String> changes() {
        return List.copyOf(CHANGES);
    }

    /** libc {@code setenv(name, value, 0)}: never overwrites; false when it could not be called or failed. */
    private static boolean setenv(String name, String value) {
        try (Arena a = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MemorySegment fn = linker.defaultLookup().find("setenv").orElse(null);
            if (fn == null) return false;
            MethodHandle h = linker.downcallHandle(fn, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
            return (int) h.invokeExact(a.allocateFrom(name), a.allocateFrom(value), 0) == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
