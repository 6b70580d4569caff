// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.StreamCommunicator;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import java.lang.foreign.ValueLayout;
import java.util.Locale;

/**
 * Data-parallel training's communication pattern, overlapped as frameworks do it: every step, each
 * rank computes a gradient of {@code --mib} MiB in {@code --layers} layers, one after the other,
 * with a kernel of its own ({@code gradient}, in the examples' PTX) on a compute stream; as soon as
 * a layer's gradient is done, its allReduce is enqueued on a second stream through a stream-ordered
 * view ({@link Communicator#onStream}), so that it runs while the next layer's gradient is
 * computed. The host never waits inside a step. With {@code --high-priority} the communication
 * stream has the greatest priority the GPU offers ({@link Cuda#newHighPriorityStream()}), as some
 * frameworks give their communication streams. The last step's reduced gradients are checked
 * element by element (every rank's value is an integer below 1000, so the sums are exact in
 * float).
 *
 * <p>Printed on rank 0: the step time with overlap, beside the compute alone (the kernels, no
 * communication) and the communication alone (the allReduces, no kernels), each the median of the
 * steps; and the step time's ratio to the larger of the two (1.0: communication entirely hidden).
 * The first layer's allReduce cannot start before its gradient is done, so the ratio cannot go
 * below about {@code 1 + min(compute, communication) / (layers * max(compute, communication))}.
 *
 * <p>With {@code --timeline}, rank 0 also prints when each layer's kernel and allReduce started and
 * ended in the last overlapped step (CUDA events, microseconds from the step's start on the GPU).
 * With {@code --graph}, each timed step (with overlap, compute alone, communication alone) is one
 * launch of a CUDA graph captured after the warm-up, as training frameworks replay their steps: the
 * host's cost per call leaves the step (the allReduces must then run on the GPU alone: NCCL, one
 * GPU per rank).
 *
 * <p>Run: {@code mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.DataParallel
 * [--mib 256] [--layers 4] [--warmup 200] [--steps 20] [--work 64] [--high-priority] [--timeline] [--graph]}
 * ({@code --mib}: the whole gradient, split evenly over the layers; {@code --warmup}: untimed
 * steps first, in which the JIT compiles the calls' Java path; {@code --work}: the kernel's rounds
 * of arithmetic per element, how long a layer computes).
 */
public final class DataParallel {
    /** Name in result lines. */
    public static final String NAME = "data-parallel";
    static final int DEFAULT_LAYERS = 4;
    /** Untimed steps before the timed ones. */
    static final int DEFAULT_WARMUP = 200;

    private DataParallel() {
    }

    public static void main(String[] args) {
        long mib = 256;
        int steps = 20, work = 64, layers = DEFAULT_LAYERS, warmup = DEFAULT_WARMUP;
        boolean highPriority = false, timeline = false, graph = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--mib" -> mib = Long.parseLong(args[++i]);
                case "--steps" -> steps = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--work" -> work = Integer.parseInt(args[++i]);
                case "--layers" -> layers = Integer.parseInt(args[++i]);
                case "--high-priority" -> highPriority = true;
                case "--timeline" -> timeline = true;
                case "--graph" -> graph = true;
                default -> {
                    System.err.println("DataParallel: unknown option " + args[i] + " (--mib N, --layers N, --steps N, --warmup N, --work N, --high-priority, --timeline, --graph)");
                    System.exit(2);
                }
            }
        }
        int code;
        try (Communicator world = Ferry.open()) {
            Outcome o = run(world, new Options(mib, layers, warmup, steps, work, highPriority, timeline, graph));
            if (world.rank() == 0) System.out.println(o.line());
            code = o.passed() ? 0 : 1;
        }
        System.out.flush();
        System.exit(code);
    }

    /**
     * The example's options: a gradient of {@code mib} MiB in {@code layers} layers; {@code warmup}
     * untimed steps, then {@code steps} timed ones; {@code work} rounds of arithmetic per element;
     * the allReduces on a stream of the greatest priority ({@code highPriority}); rank 0 prints the
     * last overlapped step's timeline ({@code timeline}); each timed step is one CUDA graph launch
     * ({@code graph}).
     */
    public record Options(long mib, int layers, int warmup, int steps, int work, boolean highPriority, boolean timeline, boolean graph) {
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options o) {
        long mib = o.mib();
        int layers = o.layers(), warmup = o.warmup(), steps = o.steps(), work = o.work();
        boolean highPriority = o.highPriority();
        if (!Cuda.isAvailable() || !comm.supportsDeviceBuffers()) {
            return Outcome.skip(NAME, "needs a GPU and a backend that carries device buffers").agree(comm);
        }
        if (o.graph() && warmup < 1) {
            throw new dev.ferry.InvalidArgumentException("DataParallel: --graph needs a warm-up step (--warmup 1 or more): a view sets its paths up at a "
                    + "first call outside the capture");
        }
        if (layers < 1 || mib * 1024 * 1024 / Float.BYTES < layers) {
            throw new dev.ferry.InvalidArgumentException("DataParallel: " + layers + " layers of a " + mib + " MiB gradient: give at least one layer and one float per layer");
        }
        long n = mib * 1024 * 1024 / Float.BYTES / layers;
        int rank = comm.rank(), size = comm.size();
        DeviceBuffer[] grads = new DeviceBuffer[layers];
        CudaEvent[] computed = new CudaEvent[layers], reduced = new CudaEvent[layers];
        try (CudaStream compute = Cuda.newStream(); CudaStream comms = highPriority ? Cuda.newHighPriorityStream() : Cuda.newStream(); StreamCommunicator onComms = comm.onStream(comms)) {
            for (int l = 0; l < layers; l++) {
                grads[l] = Cuda.allocate(n * Float.BYTES);
                computed[l] = Cuda.newEvent(false);
                reduced[l] = Cuda.newEvent(false);
                reduced[l].record(comms);
            }
            double[] overlapped = new double[steps], computeAlone = new double[steps], commAlone = new double[steps];
            Timeline marks = o.timeline() && !o.graph() ? new Timeline(layers) : null;
            // untimed steps first: the JIT compiles the calls' Java path, as it has in any training run after its first
            // steps, and the collectives' paths are set up (outside any capture)
            for (int step = 0; step < warmup; step++) {
                overlappedStep(onComms, compute, comms, grads, computed, reduced, n, step, work, null);
            }
            if (o.graph()) {
                return runGraphs(comm, onComms, compute, comms, grads, computed, n, o);
            }
            for (int step = 0; step < steps; step++) {
                comm.barrier();
                long t0 = System.nanoTime();
                overlappedStep(onComms, compute, comms, grads, computed, reduced, n, step, work, step == steps - 1 ? marks : null);
                overlapped[step] = slowest(comm, System.nanoTime() - t0);
            }
            if (marks != null) {
                if (rank == 0) System.out.println(marks.describe());
                marks.close();
            }
            boolean ok = check(grads, n, steps - 1, size);
            for (int step = 0; step < steps; step++) {
                comm.barrier();
                long t0 = System.nanoTime();
                for (int l = 0; l < layers; l++) Kernels.gradient(grads[l], n, seed(step, l, rank), work, compute);
                compute.synchronize();
                computeAlone[step] = slowest(comm, System.nanoTime() - t0);
                comm.barrier();
                t0 = System.nanoTime();
                for (int l = 0; l < layers; l++) onComms.allReduce(Communicator.IN_PLACE, grads[l], n, DataType.FLOAT, ReduceOp.SUM);
                onComms.synchronize();
                commAlone[step] = slowest(comm, System.nanoTime() - t0);
            }
            return verdict(comm, o, ok, overlapped, computeAlone, commAlone);
        } finally {
            for (int l = 0; l < layers; l++) {
                if (computed[l] != null) computed[l].close();
                if (reduced[l] != null) reduced[l].close();
                if (grads[l] != null) grads[l].close();
            }
        }
    }

    /** The line rank 0 prints, and whether every rank checked its gradients right. */
    private static Outcome verdict(Communicator comm, Options o, boolean ok, double[] overlapped, double[] computeAlone, double[] commAlone) {
        double step = median(overlapped), c = median(computeAlone), m = median(commAlone);
        String summary = String.format(Locale.ROOT, "%d ranks, %d MiB gradient in %d layers, %s-priority communication stream, %d steps%s: "
                + "step %.2f ms overlapped; compute alone %.2f ms, communication alone %.2f ms; step / max = %.3f", comm.size(), o.mib(), o.layers(),
                o.highPriority() ? "high" : "default", o.steps(), o.graph() ? " as CUDA graphs" : "", step, c, m, step / Math.max(c, m));
        Outcome out = ok ? Outcome.ok(NAME, summary) : Outcome.fail(NAME, "a reduced gradient is wrong; " + summary);
        return out.agree(comm);
    }

    /**
     * The timed steps as CUDA graphs, as training frameworks replay theirs: a step with overlap, the
     * kernels alone and the allReduces alone are each captured once (the kernels with step 0's seeds)
     * and launched once per step, so that the host's cost per call leaves the step. The allReduces
     * must run on the GPU alone (NCCL, or ipc-short up to 16 KiB): other paths refuse capture with
     * {@link dev.ferry.CaptureUnsupportedException}.
     */
    private static Outcome runGraphs(Communicator comm, StreamCommunicator onComms, CudaStream compute, CudaStream comms, DeviceBuffer[] grads,
                                     CudaEvent[] computed, long n, Options o) {
        int rank = comm.rank(), layers = grads.length, steps = o.steps();
        double[] overlapped = new double[steps], computeAlone = new double[steps], commAlone = new double[steps];
        try (StepGraph both = StepGraph.capture(compute, comms, () -> {
                for (int l = 0; l < layers; l++) {
                    Kernels.gradient(grads[l], n, seed(0, l, rank), o.work(), compute);
                    computed[l].record(compute);
                    comms.waitFor(computed[l]);
                    onComms.allReduce(Communicator.IN_PLACE, grads[l], n, DataType.FLOAT, ReduceOp.SUM);
                }
            });
             StepGraph kernels = StepGraph.capture(compute, null, () -> {
                 for (int l = 0; l < layers; l++) Kernels.gradient(grads[l], n, seed(0, l, rank), o.work(), compute);
             });
             StepGraph reductions = StepGraph.capture(compute, comms, () -> {
                 for (int l = 0; l < layers; l++) onComms.allReduce(Communicator.IN_PLACE, grads[l], n, DataType.FLOAT, ReduceOp.SUM);
             })) {
            for (int step = 0; step < steps; step++) {
                overlapped[step] = timed(comm, both, compute);
            }
            boolean ok = check(grads, n, 0, comm.size());
            for (int step = 0; step < steps; step++) {
                computeAlone[step] = timed(comm, kernels, compute);
                commAlone[step] = timed(comm, reductions, compute);
            }
            onComms.synchronize(); // releases what the captures held
            return verdict(comm, o, ok, overlapped, computeAlone, commAlone);
        }
    }

    /** The slowest rank's milliseconds for one launch of {@code g} on {@code stream}, after a barrier. */
    private static double timed(Communicator comm, StepGraph g, CudaStream stream) {
        comm.barrier();
        long t0 = System.nanoTime();
        g.launch(stream);
        stream.synchronize();
        return slowest(comm, System.nanoTime() - t0);
    }

    /** A CUDA graph of work captured from {@code origin} (and {@code joined}, forked from it and joined back), instantiated for launches. */
    private static final class StepGraph implements AutoCloseable {
        private final jcuda.driver.CUgraph graph;
        private final jcuda.driver.CUgraphExec exec = new jcuda.driver.CUgraphExec();

        private StepGraph(jcuda.driver.CUgraph graph) {
            this.graph = graph;
            Kernels.check(jcuda.driver.JCudaDriver.cuGraphInstantiate(exec, graph, 0), "cuGraphInstantiate");
        }

        static StepGraph capture(CudaStream origin, CudaStream joined, Runnable body) {
            jcuda.driver.CUgraph graph = new jcuda.driver.CUgraph();
            Kernels.check(jcuda.driver.JCudaDriver.cuStreamBeginCapture(origin.handle(), jcuda.driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
                    "cuStreamBeginCapture");
            boolean done = false;
            try (CudaEvent fork = Cuda.newEvent(false); CudaEvent join = Cuda.newEvent(false)) {
                if (joined != null) {
                    fork.record(origin);
                    joined.waitFor(fork);
                }
                body.run();
                if (joined != null) {
                    join.record(joined);
                    origin.waitFor(join);
                }
                done = true;
            } finally {
                int rc = jcuda.driver.JCudaDriver.cuStreamEndCapture(origin.handle(), graph);
                if (done) Kernels.check(rc, "cuStreamEndCapture");
            }
            return new StepGraph(graph);
        }

        void launch(CudaStream stream) {
            Kernels.check(jcuda.driver.JCudaDriver.cuGraphLaunch(exec, stream.handle()), "cuGraphLaunch");
        }

        @Override
        public void close() {
            jcuda.driver.JCudaDriver.cuGraphExecDestroy(exec);
            jcuda.driver.JCudaDriver.cuGraphDestroy(graph);
        }
    }

    /** Events with timing around each layer's kernel and allReduce of one step, and the step's start. */
    private static final class Timeline implements AutoCloseable {
        final CudaEvent start = Cuda.newEvent(true);
        final CudaEvent[] computeStart, computeEnd, commStart, commEnd;
        /** Microseconds on the host from the step's start to each allReduce call's return. */
        final double[] returned;

        Timeline(int layers) {
            returned = new double[layers];
            computeStart = events(layers);
            computeEnd = events(layers);
            commStart = events(layers);
            commEnd = events(layers);
        }

        private static CudaEvent[] events(int n) {
            CudaEvent[] e = new CudaEvent[n];
            for (int i = 0; i < n; i++) e[i] = Cuda.newEvent(true);
            return e;
        }

        /**
         * One line per layer: its kernel's and its allReduce's start and end on the GPU, microseconds
         * from the step's start (events done), and when the allReduce call returned on the host.
         */
        String describe() {
            StringBuilder b = new StringBuilder("data-parallel timeline of the last overlapped step on rank 0 (us from its start):");
            for (int l = 0; l < computeStart.length; l++) {
                b.append(String.format(Locale.ROOT, "%n  layer %d: kernel %.1f-%.1f, allReduce %.1f-%.1f (its call returned on the host at %.1f)", l,
                        us(computeStart[l]), us(computeEnd[l]), us(commStart[l]), us(commEnd[l]), returned[l]));
            }
            return b.toString();
        }

        private double us(CudaEvent e) {
            return e.millisSince(start) * 1000.0;
        }

        @Override
        public void close() {
            start.close();
            for (CudaEvent[] es : new CudaEvent[][] {computeStart, computeEnd, commStart, commEnd}) for (CudaEvent e : es) e.close();
        }
    }

    /**
     * One step with overlap: each layer's kernel on {@code compute}, then its allReduce on the view's
     * stream once the kernel is done; waits for both streams. With {@code t}, events around each.
     */
    private static void overlappedStep(StreamCommunicator onComms, CudaStream compute, CudaStream comms, DeviceBuffer[] grads, CudaEvent[] computed,
                                       CudaEvent[] reduced, long n, int step, int work, Timeline t) {
        int rank = onComms.rank();
        long t0 = System.nanoTime();
        if (t != null) t.start.record(compute);
        for (int l = 0; l < grads.length; l++) {
            compute.waitFor(reduced[l]); // the layer's buffer is free once its last allReduce is done
            if (t != null) t.computeStart[l].record(compute);
            Kernels.gradient(grads[l], n, seed(step, l, rank), work, compute);
            computed[l].record(compute);
            if (t != null) t.computeEnd[l].record(compute);
            comms.waitFor(computed[l]);
            if (t != null) t.commStart[l].record(comms);
            onComms.allReduce(Communicator.IN_PLACE, grads[l], n, DataType.FLOAT, ReduceOp.SUM);
            if (t != null) {
                t.commEnd[l].record(comms);
                t.returned[l] = (System.nanoTime() - t0) / 1e3;
            }
            reduced[l].record(comms);
        }
        onComms.synchronize();
        compute.synchronize();
    }

    private static int seed(int step, int layer, int rank) {
        return step * 31 + layer * 7 + rank;
    }

    /** Every element of the last step's reduced gradients: the sum over ranks of {@code (i * 7 + seed) mod 1000}. */
    private static boolean check(DeviceBuffer[] grads, long n, int step, int size) {
        int chunk = 1 << 22;
        try (HostBuffer h = Cuda.allocatePinned((long) chunk * Float.BYTES)) {
            for (int l = 0; l < grads.length; l++) {
                for (long from = 0; from < n; from += chunk) {
                    int len = (int) Math.min(chunk, n - from);
                    Cuda.copy(h, grads[l].slice(from * Float.BYTES, (long) len * Float.BYTES), (long) len * Float.BYTES);
                    for (int k = 0; k < len; k++) {
                        long i = from + k;
                        float want = 0;
                        for (int r = 0; r < size; r++) want += (float) ((i * 7 + seed(step, l, r)) % 1000);
                        if (h.segment().getAtIndex(ValueLayout.JAVA_FLOAT, k) != want) {
                            System.err.println("data-parallel: layer " + l + " element " + i + " is " + h.segment().getAtIndex(ValueLayout.JAVA_FLOAT, k)
                                    + ", not " + want);
                            return false;
                        }
                    }
                }
            }
        }
        return true;
    }

    /** The slowest rank's milliseconds. */
    private static double slowest(Communicator comm, long nanos) {
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            in.segment().set(ValueLayout.JAVA_DOUBLE, 0, nanos / 1e6);
            comm.allReduce(in, out, 1, DataType.DOUBLE, ReduceOp.MAX);
            return out.segment().get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    private static double median(double[] a) {
        double[] s = a.clone();
        java.util.Arrays.sort(s);
        return s[s.length / 2];
    }
}
