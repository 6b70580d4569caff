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
 * Ferry asks for 32, the most the driver offers. Under MPS the clients of a GPU share one pool of
 * queues, and 4 clients of 32 each did not fit (the fourth could not make its context: out of
 * memory), so there Ferry asks for 8, with which 8 ranks sharing a GPU ran the stream contract and
 * 4 the data-parallel example. MPS is recognized before the driver starts by the control pipe the
 * driver itself looks for ({@code $CUDA_MPS_PIPE_DIRECTORY/control}, by default under
 * {@code /tmp/nvidia-mps}).
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
        if (mpsControlPipe(System.getenv("CUDA_MPS_PIPE_DIRECTORY"))) {
            setIfUnset(CUDA_CONNECTIONS, "8", "more hardware queues than MPS gives a client, fewer than the GPU's clients share: a stream-ordered "
                    + "view's held stream cannot block the work of its call");
        } else {
            setIfUnset(CUDA_CONNECTIONS, "32", "a hardware queue per stream: a stream-ordered view's held stream cannot block the work of its call");
        }
    }

    /**
     * Whether an MPS control daemon's pipe is where the CUDA driver will look for it when it starts:
     * {@code control} in {@code pipeDirectory} ({@code CUDA_MPS_PIPE_DIRECTORY}), or in
     * {@code /tmp/nvidia-mps} when that is null or empty.
     */
    static boolean mpsControlPipe(String pipeDirectory) {
        String dir = pipeDirectory == null || pipeDirectory.isEmpty() ? "/tmp/nvidia-mps" : pipeDirectory;
        return java.nio.file.Files.exists(java.nio.file.Path.of(dir, "control"));
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
