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
 * One-kernel CUDA graphs, launched on one stream with new arguments each time: one instantiated
 * graph for each of the last {@link #KEPT} kernels and grids launched here, whose parameters are
 * set before a launch where they changed.
 *
 * <p>Why a graph: under CUDA MPS, a one-kernel graph reaches the GPU and completes about 1.8 µs
 * sooner than the same kernel launched with {@code cuLaunchKernel}, parameter update included (one
 * H100, one rank: 5.1 against 7.0 µs per round trip; {@code bench/src/main/c/launch_floor.c}),
 * which is most of a short collective's margin. Why one per kernel and grid: setting another
 * kernel or grid on an instantiated graph costs more than setting new arguments. With one graph,
 * allReduces of two sizes in turn (two grids) took 2 to 5 µs more a call than either size alone
 * (2 × H200 and ranks sharing an H200; {@code bench ShapesInTurn},
 * bench/results/2026-11-28-h200-shapes-in-turn.md). Launches run in order, as on one stream. A
 * stream-ordered view's thread instantiates no graph: the caller's stream waits for its call
 * ({@link dev.ferry.spi.HeldStream}), and a CUDA call there that waits for the context's streams
 * never returns (loading a module did); whether instantiating waits was not measured, so the view's
 * thread sets a kept graph, or launches with {@code cuLaunchKernel} before there is one. Where the driver lacks the graph calls,
 * {@link #launch} falls back to {@code cuLaunchKernel}.
 */
final class KernelGraph implements AutoCloseable {
    /** CUDA_KERNEL_NODE_PARAMS (v2): func, six grid and block dimensions, shared memory, kernelParams, extra, kern, ctx (zero: unused). */
    private static final long PARAMS_BYTES = 72, GRID_X = 8, GRID_Y = 12, GRID_Z = 16, BLOCK_X = 20, BLOCK_Y = 24, BLOCK_Z = 28, KERNEL_PARAMS = 40;
    /** How many kernels and grids keep a graph of their own (the least recently launched is set to the next one). */
    static final int KEPT = 8;

    private final CudaStream stream;
    private final MemorySegment nodeParams;
    private final Graph[] graphs = new Graph[KEPT];
    private int count;
    private long launches;
    private boolean closed;

    /** One instantiated one-kernel graph: its kernel and grid, and its parameter values as last set. */
    private static final class Graph {
        long function;
        int blocks, threads;
        long graph, exec, node;
        long lastLaunch;
        /** The parameter values as last set, where the launch named them (else empty), for {@link #launch}'s comparison. */
        MemorySegment lastValues = MemorySegment.NULL;
        final MemorySegment lastValuesCopy = Arena.ofAuto().allocate(512, 8);

        boolean runs(long f, int b, int t) {
            return function == f && blocks == b && threads == t;
        }

        /** Keeps a copy of the values just set (none when the launch did not name them, or they do not fit the copy). */
        void remember(MemorySegment values) {
            if (values == null || values.byteSize() > lastValuesCopy.byteSize()) {
                lastValues = MemorySegment.NULL;
                return;
            }
            lastValues = lastValuesCopy.asSlice(0, values.byteSize());
            lastValues.copyFrom(values);
        }

        boolean holds(MemorySegment values) {
            return values != null && lastValues.byteSize() == values.byteSize() && lastValues.mismatch(values) < 0;
        }
    }

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
     * holds every value {@code params} points to: when they are the ones the kernel's graph was last
     * set to, it is launched as it is (setting them costs about 1 µs a launch: {@code launch_floor.c},
     * "graph, set params").
     */
    synchronized void launch(long function, int blocks, int threads, MemorySegment params, MemorySegment values, Supplier<String> what) {
        if (closed) {
            throw new IllegalStateException("launch of " + what.get() + " on a closed stream");
        }
        long s = JCudaPointers.handle(stream.handle());
        try {
            if (Driver.SET_PARAMS == null) {
                launchDirect(function, blocks, threads, params, what);
                return;
            }
            Graph g = find(function, blocks, threads);
            if (g == null || !g.holds(values)) {
                nodeParams.set(JAVA_LONG, 0, function);
                nodeParams.set(JAVA_INT, GRID_X, blocks);
                nodeParams.set(JAVA_INT, BLOCK_X, threads);
                nodeParams.set(ADDRESS, KERNEL_PARAMS, params);
                if (g == null && count < KEPT && !dev.ferry.spi.HeldStream.holding()) {
                    g = instantiate(what);
                    graphs[count++] = g;
                } else {
                    if (g == null && count == 0) { // on a stream-ordered view's thread, before any graph: no instantiation there
                        launchDirect(function, blocks, threads, params, what);
                        return;
                    }
                    // every graph kept, or a view's thread: the least recently launched graph runs this kernel from now on
                    if (g == null) g = leastRecent();
                    check((int) Driver.SET_PARAMS.invokeExact(g.exec, g.node, nodeParams), "cuGraphExecKernelNodeSetParams", what);
                }
                g.function = function;
                g.blocks = blocks;
                g.threads = threads;
                g.remember(values);
            }
            g.lastLaunch = ++launches;
            check((int) Driver.GRAPH_LAUNCH.invokeExact(g.exec, s), "cuGraphLaunch", what);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new CudaException("launch of " + what.get() + " failed: " + t, t);
        }
    }

    private Graph find(long function, int blocks, int threads) {
        for (int i = 0; i < count; i++) {
            if (graphs[i].runs(function, blocks, threads)) return graphs[i];
        }
        return null;
    }

    private Graph leastRecent() {
        Graph least = graphs[0];
        for (int i = 1; i < count; i++) {
            if (graphs[i].lastLaunch < least.lastLaunch) least = graphs[i];
        }
        return least;
    }

    /** How many graphs this stream keeps now (for tests). */
    synchronized int graphs() {
        return count;
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

    /** A graph of the kernel {@link #nodeParams} describes, instantiated. */
    private Graph instantiate(Supplier<String> what) throws Throwable {
        stream.device().makeCurrent();
        Graph g = new Graph();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            check((int) Driver.CREATE.invokeExact(out, 0), "cuGraphCreate", what);
            g.graph = out.get(JAVA_LONG, 0);
            try {
                check((int) Driver.ADD_KERNEL_NODE.invokeExact(out, g.graph, MemorySegment.NULL, 0L, nodeParams), "cuGraphAddKernelNode", what);
                g.node = out.get(JAVA_LONG, 0);
                check((int) Driver.INSTANTIATE.invokeExact(out, g.graph, 0L), "cuGraphInstantiateWithFlags", what);
                g.exec = out.get(JAVA_LONG, 0);
            } catch (Throwable t) {
                int ignored = (int) Driver.DESTROY.invokeExact(g.graph); // the graph alone: nothing was instantiated
                throw t;
            }
        }
        return g;
    }

    /** Checks a driver result; the kernel's name is built only for the error. */
    private static void check(int result, String call, Supplier<String> what) {
        if (result != 0) {
            CudaCalls.check(result, call + "(" + what.get() + ")");
        }
    }

    /** Frees the graphs; the stream's earlier launches of them are finished or still run to their end. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        if (count == 0) return;
        stream.device().makeCurrent();
        CudaException first = null;
        for (int i = 0; i < count; i++) {
            try {
                CudaCalls.check((int) Driver.EXEC_DESTROY.invokeExact(graphs[i].exec), "cuGraphExecDestroy");
                CudaCalls.check((int) Driver.DESTROY.invokeExact(graphs[i].graph), "cuGraphDestroy");
            } catch (CudaException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            } catch (Throwable t) {
                CudaException e = new CudaException("freeing a kernel graph failed: " + t, t);
                if (first == null) first = e; else first.addSuppressed(e);
            }
            graphs[i] = null;
        }
        count = 0;
        if (first != null) throw first;
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
