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
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A CUDA graph of one kernel node, launched on one stream with new arguments each time: the
 * kernel, its grid and its parameters are set on the instantiated graph before every launch.
 *
 * <p>Why: under CUDA MPS, a one-kernel graph reaches the GPU and completes about 1.8 µs sooner
 * than the same kernel launched with {@code cuLaunchKernel}, parameter update included (one H100,
 * one rank: 5.1 against 7.0 µs per round trip; {@code bench/src/main/c/launch_floor.c}), which
 * is most of a short collective's margin. Launches of one graph run in order, as on one stream.
 * Where the driver lacks the graph calls, {@link #launch} falls back to {@code cuLaunchKernel}.
 */
final class KernelGraph implements AutoCloseable {
    /** CUDA_KERNEL_NODE_PARAMS (v2): func, six grid and block dimensions, shared memory, kernelParams, extra, kern, ctx (zero: unused). */
    private static final long PARAMS_BYTES = 72, GRID_X = 8, GRID_Y = 12, GRID_Z = 16, BLOCK_X = 20, BLOCK_Y = 24, BLOCK_Z = 28, KERNEL_PARAMS = 40;

    private final CudaStream stream;
    private final MemorySegment nodeParams;
    private long graph, exec, node;
    private boolean closed;
    /** The graph's parameter values as last set, where the launch named them (else empty), for {@link #launch}'s comparison. */
    private MemorySegment lastValues = MemorySegment.NULL;
    private final MemorySegment lastValuesCopy = Arena.ofAuto().allocate(512, 8);

    KernelGraph(CudaStream stream) {
        this.stream = stream;
        this.nodeParams = Arena.ofAuto().allocate(PARAMS_BYTES, 8); // zeroed: no shared memory, extra, kern or ctx
        for (long y : new long[] {GRID_Y, GRID_Z, BLOCK_Y, BLOCK_Z}) nodeParams.set(JAVA_INT, y, 1);
    }

    /** Whether launches go through a graph: the driver has CUDA 12's graph calls (else cuLaunchKernel). */
    static boolean graphsAvailable() {
        return Driver.SET_PARAMS != null;
    }

    /**
     * Launches {@code function} on the stream over {@code blocks} × {@code threads} with the
     * parameter block {@code params} (an array of pointers to the values, as cuLaunchKernel takes;
     * the values are copied at the call), checked; {@code what} names the kernel in an error (built only then).
     */
    synchronized void launch(long function, int blocks, int threads, MemorySegment params, Supplier<String> what) {
        launch(function, blocks, threads, params, null, what);
    }

    /**
     * {@link #launch(long, int, int, MemorySegment, Supplier)}, where {@code values} (null: unknown)
     * holds every value {@code params} points to: when the kernel, its grid and those values are the
     * ones the graph was last set to, it is launched as it is (setting them costs about 1 µs a launch:
     * {@code launch_floor.c}, "graph, set params").
     */
    synchronized void launch(long function, int blocks, int threads, MemorySegment params, MemorySegment values, Supplier<String> what) {
        if (closed) {
            throw new IllegalStateException("launch of " + what.get() + " on a closed stream");
        }
        long s = JCudaPointers.handle(stream.handle());
        try {
            if (Driver.SET_PARAMS == null) {
                check((int) Driver.LAUNCH.invokeExact(function, blocks, 1, 1, threads, 1, 1, 0, s, params, MemorySegment.NULL), "cuLaunchKernel", what);
                return;
            }
            boolean same = exec != 0 && values != null && lastValues.byteSize() == values.byteSize() && nodeParams.get(JAVA_LONG, 0) == function
                    && nodeParams.get(JAVA_INT, GRID_X) == blocks && nodeParams.get(JAVA_INT, BLOCK_X) == threads && lastValues.mismatch(values) < 0;
            if (!same) {
                nodeParams.set(JAVA_LONG, 0, function);
                nodeParams.set(JAVA_INT, GRID_X, blocks);
                nodeParams.set(JAVA_INT, BLOCK_X, threads);
                nodeParams.set(ADDRESS, KERNEL_PARAMS, params);
                if (exec == 0) {
                    instantiate(what);
                } else {
                    check((int) Driver.SET_PARAMS.invokeExact(exec, node, nodeParams), "cuGraphExecKernelNodeSetParams", what);
                }
                remember(values);
            }
            check((int) Driver.GRAPH_LAUNCH.invokeExact(exec, s), "cuGraphLaunch", what);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new CudaException("launch of " + what.get() + " failed: " + t, t);
        }
    }

    /**
     * Launches {@code function} on the stream with cuLaunchKernel itself, never through the graph:
     * for launches that a graph of the program's may capture (a launch of a graph of ours would be).
     */
    void launchDirect(long function, int blocks, int threads, MemorySegment params, Supplier<String> what) {
        long s = JCudaPointers.handle(stream.handle());
        try {
            check((int) Driver.LAUNCH.invokeExact(function, blocks, 1, 1, threads, 1, 1, 0, s, params, MemorySegment.NULL), "cuLaunchKernel", what);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new CudaException("launch of " + what.get() + " failed: " + t, t);
        }
    }

    /** Keeps a copy of the values just set (none when the launch did not name them, or they do not fit the copy). */
    private void remember(MemorySegment values) {
        if (values == null || values.byteSize() > lastValuesCopy.byteSize()) {
            lastValues = MemorySegment.NULL;
            return;
        }
        lastValues = lastValuesCopy.asSlice(0, values.byteSize());
        lastValues.copyFrom(values);
    }

    private void instantiate(Supplier<String> what) throws Throwable {
        stream.device().makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            check((int) Driver.CREATE.invokeExact(out, 0), "cuGraphCreate", what);
            graph = out.get(JAVA_LONG, 0);
            check((int) Driver.ADD_KERNEL_NODE.invokeExact(out, graph, MemorySegment.NULL, 0L, nodeParams), "cuGraphAddKernelNode", what);
            node = out.get(JAVA_LONG, 0);
            check((int) Driver.INSTANTIATE.invokeExact(out, graph, 0L), "cuGraphInstantiateWithFlags", what);
            exec = out.get(JAVA_LONG, 0);
        }
    }

    /** Checks a driver result; the kernel's name is built only for the error. */
    private static void check(int result, String call, Supplier<String> what) {
        if (result != 0) {
            CudaCalls.check(result, call + "(" + what.get() + ")");
        }
    }

    /** Frees the graph; the stream's earlier launches of it are finished or still run to their end. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        if (exec != 0) {
            stream.device().makeCurrent();
            try {
                CudaCalls.check((int) Driver.EXEC_DESTROY.invokeExact(exec), "cuGraphExecDestroy");
                CudaCalls.check((int) Driver.DESTROY.invokeExact(graph), "cuGraphDestroy");
            } catch (CudaException e) {
                throw e;
            } catch (Throwable t) {
                throw new CudaException("freeing a kernel graph failed: " + t, t);
            }
            exec = graph = 0;
        }
    }

    /** The driver calls, looked up on first use; the graph calls are null where the driver lacks one of them. */
    @SuppressWarnings("restricted")
    private static final class Driver {
        static final MethodHandle LAUNCH, CREATE, ADD_KERNEL_NODE, INSTANTIATE, SET_PARAMS, GRAPH_LAUNCH, EXEC_DESTROY, DESTROY;

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
            LAUNCH = linker.downcallHandle(cuda.findOrThrow("cuLaunchKernel"), FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT,
                    JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
            String[] names = {"cuGraphCreate", "cuGraphAddKernelNode_v2", "cuGraphInstantiateWithFlags", "cuGraphExecKernelNodeSetParams_v2",
                    "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"};
            FunctionDescriptor[] descriptors = {
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG),
                    FunctionDescriptor.of(JAVA_INT, JAVA_LONG)};
            MethodHandle[] h = new MethodHandle[names.length];
            boolean all = true;
            for (int i = 0; i < names.length; i++) {
                Optional<MemorySegment> symbol = cuda.find(names[i]);
                all &= symbol.isPresent();
                h[i] = symbol.isPresent() ? linker.downcallHandle(symbol.get(), descriptors[i]) : null;
            }
            CREATE = all ? h[0] : null;
            ADD_KERNEL_NODE = all ? h[1] : null;
            INSTANTIATE = all ? h[2] : null;
            SET_PARAMS = all ? h[3] : null;
            GRAPH_LAUNCH = all ? h[4] : null;
            EXEC_DESTROY = all ? h[5] : null;
            DESTROY = all ? h[6] : null;
        }
    }
}
