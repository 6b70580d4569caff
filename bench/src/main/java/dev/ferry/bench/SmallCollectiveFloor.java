// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.collectives.CollectivesDiagnostics;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;

/**
 * Where the time of an 8-byte device collective goes: the parts of one call measured alone, in the
 * same run as the collectives themselves. Each row is the slowest rank's mean time per call over a
 * batch, median (min-max) of the batches; every rank runs the row at once, as in a collective.
 *
 * <ul>
 * <li>{@code ctx sync}: {@code cuCtxSynchronize} of an idle context (the front's ordering, once per call);</li>
 * <li>{@code copy + sync}: an 8-byte device-to-device copy and its stream synchronize, on every rank at once
 *     and on rank 0 alone;</li>
 * <li>{@code kernel + sync}: Ferry's reduction kernel folding two 8-byte inputs, then its stream synchronize;</li>
 * <li>{@code host allGather 208 B} and {@code host barrier}: the host messages of one IPC collective;</li>
 * <li>the collectives: allReduce (one double, SUM) and broadcast (8 bytes) on device buffers, as the
 *     planner picks them; where the collectives over CUDA IPC apply, also allReduce of 16 KiB, both
 *     sizes with the short allReduce met on the GPU ({@code ipc-short}) and host-driven
 *     ({@code ipc-fold}), and 1 MiB ({@code ipc}) with either ending; allGather of 8 bytes and 1 KiB
 *     met on the GPU ({@code ipc-short}) and as copies ({@code ipc});</li>
 * <li>where NCCL serves this communicator, allReduce, broadcast and allGather of 8 bytes through it
 *     ({@code nccl} forced), beside the planner's choice for the same calls, and the planner's agreement
 *     alone ({@code host allReduce 2 ints}: the round that an algorithm which needs every rank's buffers
 *     on its GPU adds to a call).</li>
 * </ul>
 *
 * <p>Run under the launcher: {@code mpirun -np N java -cp ... dev.ferry.bench.SmallCollectiveFloor}.
 * With {@code --profile SECONDS [BYTES]} it runs only the device allReduce of 8 bytes (or of
 * {@code BYTES}, in doubles), back to back for that long after a warm-up, for a sampling profiler attached to the ranks
 * ({@code scripts/device-run.sh profile-small}): the short allReduce met on the GPU where it applies,
 * or the algorithm {@code ferry.collectives} names.
 */
public final class SmallCollectiveFloor {
    private static final int BATCHES = 9;
    private static final int REPS = 2000;

    private SmallCollectiveFloor() {
    }

    public static void main(String[] args) {
        Cuda.ensureAvailability();
        if ((args.length == 2 || args.length == 3) && args[0].equals("--profile")) {
            profile(Double.parseDouble(args[1]), args.length == 3 ? Math.max(1, Long.parseLong(args[2]) / 8) : 1);
            return;
        }
        try (Communicator comm = Ferry.open(); Communicator ctl = comm.duplicate(); DeviceBuffer a = Cuda.allocate(64); DeviceBuffer b = Cuda.allocate(64); DeviceBuffer c = Cuda.allocate(64);
             DeviceBuffer big = Cuda.allocate(1 << 20); DeviceBuffer bigOut = Cuda.allocate(1 << 20);
             CudaStream stream = Cuda.newStream(); HostBuffer record = HostBuffer.allocate(208); HostBuffer records = HostBuffer.allocate(208L * comm.size());
             HostBuffer t = HostBuffer.allocate(8); HostBuffer tMax = HostBuffer.allocate(8)) {
            Cuda.fill(a, (byte) 0);
            Cuda.fill(b, (byte) 0);
            Cuda.fill(c, (byte) 0);
            Cuda.fill(big, (byte) 0);
            boolean zero = comm.rank() == 0;
            if (zero) {
                System.out.println("backend " + comm.backend() + ", " + comm.size() + " ranks; " + Cuda.describe());
                System.out.println("each row: the slowest rank's mean per call over " + REPS + " calls, median (min-max) of " + BATCHES + " batches, us");
            }
            row(ctl, t, tMax, "ctx sync (idle context)", Cuda::synchronize);
            row(ctl, t, tMax, "copy 8 B + stream sync, every rank", () -> {
                Cuda.copyAsync(b.address(), a.address(), 8, stream);
                stream.synchronize();
            });
            row(ctl, t, tMax, "copy 8 B + stream sync, rank 0 alone", zero ? () -> {
                Cuda.copyAsync(b.address(), a.address(), 8, stream);
                stream.synchronize();
            } : () -> { });
            long[] sources = {a.address(), b.address()};
            row(ctl, t, tMax, "reduce kernel 2 x 8 B + stream sync, every rank", () -> {
                DeviceReduction.reduce(DataType.DOUBLE, ReduceOp.SUM, c.address(), sources, 1, stream);
                stream.synchronize();
            });
            row(ctl, t, tMax, "host allGather 208 B", () -> comm.allGather(record, records, 208, DataType.BYTE));
            row(ctl, t, tMax, "host barrier", comm::barrier);
            row(ctl, t, tMax, "allReduce 8 B (device)", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
            row(ctl, t, tMax, "broadcast 8 B (device)", () -> comm.broadcast(a, 8, DataType.BYTE, 0));
            row(ctl, t, tMax, "reduce kernel launches alone (one sync per 2000)", () -> DeviceReduction.reduce(DataType.DOUBLE, ReduceOp.SUM,
                    c.address(), sources, 1, stream));
            stream.synchronize();
            if (CollectivesDiagnostics.algorithms(comm).contains("ipc-short")) {
                // the short allReduce met on the GPU against the host-driven fold over CUDA IPC, rows interleaved three times
                for (int round = 0; round < 3; round++) {
                    CollectivesDiagnostics.force(comm, "ipc-short");
                    row(ctl, t, tMax, "allReduce 8 B (device), met on the GPU", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
                    row(ctl, t, tMax, "allReduce 16 KiB (device), met on the GPU", () -> comm.allReduce(big, bigOut, 2048, DataType.DOUBLE, ReduceOp.SUM));
                    CollectivesDiagnostics.force(comm, "ipc-fold");
                    row(ctl, t, tMax, "allReduce 8 B (device), host-driven", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
                    row(ctl, t, tMax, "allReduce 16 KiB (device), host-driven", () -> comm.allReduce(big, bigOut, 2048, DataType.DOUBLE, ReduceOp.SUM));
                }
                CollectivesDiagnostics.force(comm, "allGather:ipc-short");
                row(ctl, t, tMax, "allGather 8 B (device), met on the GPU", () -> comm.allGather(a, big, 8, DataType.BYTE));
                row(ctl, t, tMax, "allGather 1 KiB (device), met on the GPU", () -> comm.allGather(big, bigOut, 1024, DataType.BYTE));
                CollectivesDiagnostics.force(comm, "allGather:ipc");
                row(ctl, t, tMax, "allGather 8 B (device), copies over CUDA IPC", () -> comm.allGather(a, big, 8, DataType.BYTE));
                row(ctl, t, tMax, "allGather 1 KiB (device), copies over CUDA IPC", () -> comm.allGather(big, bigOut, 1024, DataType.BYTE));
                CollectivesDiagnostics.force(comm, null);
                if (comm.backend().equals("staged")) {
                    breakdown(comm, "allReduce 8 B (device), host-driven", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
                    CollectivesDiagnostics.force(comm, "ipc-short");
                    breakdown(comm, "allReduce 8 B (device), met on the GPU", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
                }
                CollectivesDiagnostics.force(comm, "ipc");
                row(ctl, t, tMax, "allReduce 1 MiB (device), ending on a stream sync", () -> comm.allReduce(big, bigOut, 1 << 17, DataType.DOUBLE, ReduceOp.SUM));
                CollectivesDiagnostics.endOnEvents(comm, true);
                row(ctl, t, tMax, "allReduce 1 MiB (device), ending on events", () -> comm.allReduce(big, bigOut, 1 << 17, DataType.DOUBLE, ReduceOp.SUM));
                CollectivesDiagnostics.endOnEvents(comm, false);
                CollectivesDiagnostics.force(comm, null);
            }
            row(ctl, t, tMax, "allReduce 8 B (host)", () -> comm.allReduce(record, t, 1, DataType.DOUBLE, ReduceOp.SUM));
            row(ctl, t, tMax, "host allReduce 2 ints (an agreement)", () -> comm.allReduce(record, records, 2, DataType.INT, ReduceOp.MIN));
            row(ctl, t, tMax, "allGather 8 B (device)", () -> comm.allGather(a, big, 8, DataType.BYTE));
            if (CollectivesDiagnostics.algorithms(comm).contains("nccl")) {
                try {
                    CollectivesDiagnostics.force(comm, "nccl");
                    row(ctl, t, tMax, "allReduce 8 B (device), nccl", () -> comm.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM));
                    row(ctl, t, tMax, "broadcast 8 B (device), nccl", () -> comm.broadcast(a, 8, DataType.BYTE, 0));
                    row(ctl, t, tMax, "allGather 8 B (device), nccl", () -> comm.allGather(a, big, 8, DataType.BYTE));
                } catch (dev.ferry.InvalidSettingException e) {
                    if (zero) System.out.println("nccl rows: not run: " + e.getMessage());
                } finally {
                    CollectivesDiagnostics.force(comm, null);
                }
            }
            if (zero) System.out.println("collective counters on rank 0: " + CollectivesDiagnostics.counters());
        }
    }

    /**
     * The device allReduce of {@code count} doubles (SUM; where CUDA IPC applies and no algorithm is
     * named, the short one met on the GPU), back to back for {@code seconds} after 20000 calls of
     * warm-up; rank 0 prints the calls and the mean time per call. The loop runs in {@code profiledLoop}, the frame a profile is cut at.
     */
    private static void profile(double seconds, long count) {
        try (Communicator comm = Ferry.open(); DeviceBuffer a = Cuda.allocate(8 * count); DeviceBuffer b = Cuda.allocate(8 * count)) {
            Cuda.fill(a, (byte) 0);
            boolean chosen = dev.ferry.Settings.process().text(dev.ferry.collectives.CollectivesSettings.COLLECTIVES) != null;
            if (!chosen && CollectivesDiagnostics.algorithms(comm).contains("ipc-short")) CollectivesDiagnostics.force(comm, "ipc-short");
            Runnable call = () -> comm.allReduce(a, b, count, DataType.DOUBLE, ReduceOp.SUM);
            for (int i = 0; i < 20_000; i++) call.run();
            comm.barrier();
            long t0 = System.nanoTime();
            long calls = profiledLoop(comm, call, (long) (seconds * 1e9));
            double us = (System.nanoTime() - t0) / 1e3 / calls;
            if (comm.rank() == 0) {
                System.out.printf(java.util.Locale.ROOT, "profile: backend %s, %d ranks, %d calls of allReduce %d B (device) on %s, %.2f us per call%n",
                        comm.backend(), comm.size(), calls, 8 * count, CollectivesDiagnostics.lastAlgorithm(), us);
            }
        }
    }

    /** Calls {@code call} in batches of 1000 until {@code nanos} have passed (rank 0 decides, every rank stops together); the calls made. */
    private static long profiledLoop(Communicator comm, Runnable call, long nanos) {
        long start = System.nanoTime(), calls = 0;
        try (HostBuffer more = HostBuffer.allocate(4)) {
            while (true) {
                for (int i = 0; i < 1000; i++) call.run();
                calls += 1000;
                more.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, System.nanoTime() - start < nanos ? 1 : 0);
                comm.broadcast(more, 1, DataType.INT, 0);
                if (more.segment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0) == 0) return calls;
            }
        }
    }

    /** The native calls' kinds that {@link #breakdown} shows (the front's context synchronize is not one of staged's: it is in the rest). */
    private static final String[] KINDS = {"KERNEL_LAUNCH", "STREAM_SYNC", "BOARD"};

    /**
     * Where one rank's time per call goes ({@link dev.ferry.staged.StagedDiagnostics#timeNativeCalls}
     * over {@link #REPS} calls): the kernel launch, the wait for the kernel (the collective stream's
     * synchronize, or the short allReduce's status word), the node board (record exchange, barrier),
     * and the rest (the front's checks and context synchronize, Java, other calls); one line per
     * rank, µs per call.
     */
    private static void breakdown(Communicator comm, String what, Runnable call) {
        int cols = KINDS.length + 2;
        try (HostBuffer mine = HostBuffer.allocate(8L * cols); HostBuffer all = HostBuffer.allocate(8L * cols * comm.size())) {
            for (int i = 0; i < REPS / 4; i++) call.run(); // warm
            comm.barrier();
            long[] wall = new long[1];
            java.util.Map<String, dev.ferry.staged.StagedDiagnostics.NativeCalls> d = dev.ferry.staged.StagedDiagnostics.timeNativeCalls(comm, () -> {
                long t0 = System.nanoTime();
                for (int i = 0; i < REPS; i++) call.run();
                wall[0] = System.nanoTime() - t0;
            });
            double per = wall[0] / 1e3 / REPS, rest = per;
            mine.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0, per);
            for (int k = 0; k < KINDS.length; k++) {
                double us = d.get(KINDS[k]).nanos() / 1e3 / REPS;
                rest -= us;
                mine.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 1 + k, us);
            }
            mine.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, cols - 1, rest);
            comm.allGather(mine, all, cols, DataType.DOUBLE);
            if (comm.rank() == 0) {
                System.out.printf(java.util.Locale.ROOT, "breakdown of %s, us per call: rank, call, kernel launch, wait for the kernel, board, rest%n", what);
                for (int r = 0; r < comm.size(); r++) {
                    StringBuilder line = new StringBuilder("  breakdown rank " + r);
                    for (int c = 0; c < cols; c++) {
                        line.append(String.format(java.util.Locale.ROOT, " %7.2f", all.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, (long) r * cols + c)));
                    }
                    System.out.println(line);
                }
            }
        }
    }

    /**
     * One row: {@code call}'s time, measured with messages of {@code ctl} (a duplicate of the measured
     * communicator, so that an algorithm forced there does not carry the measurement's own barrier and maximum).
     */
    private static void row(Communicator ctl, HostBuffer t, HostBuffer tMax, String what, Runnable call) {
        Stats s = DeviceCollectivesVsCopy.collectiveMicros(ctl, BATCHES, REPS, t, tMax, call);
        if (ctl.rank() == 0) {
            System.out.printf(java.util.Locale.ROOT, "%-50s %8.2f (%.2f-%.2f)%n", what, s.median(), s.min(), s.max());
        }
    }
}
