// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * How far are collectives on device buffers from the speed of the GPU's own memory? For each size
 * from 8 bytes to 256 MiB (powers of 4, and the largest size) of data per rank, the time of an
 * allReduce (doubles, SUM; 8 bytes: one double), the same allReduce of floats, a broadcast from
 * rank 0, a reduceScatterBlock (doubles, SUM), an allGather and an allToAll on device buffers,
 * beside the time of one device-to-device copy of the same size on the same GPU in the same run
 * (rank 0, while the other ranks wait), and the ratios. A collective's time is the slowest rank's mean over a batch of back-to-back calls,
 * median of the batches; a copy's is the median of single copies (cuMemcpyAsync then stream
 * synchronize: {@link DeviceCopy#time}, the yardstick the JMH suite's report uses too). Where rank 1
 * runs on another GPU that rank 0's can map, a second yardstick: one peer copy of the same size from
 * rank 0's GPU into rank 1's ({@code cuMemcpyPeerAsync} over NVLink or PCIe), timed the same way;
 * and where every rank's next rank runs on another GPU that it can map, the third: every rank
 * copying the size into its next rank's GPU at once (both ways of each link busy, as in an
 * allReduce), timed as a collective.
 *
 * <p>Run on a GPU machine under the launcher: {@code mpirun -np N java -cp ...
 * dev.ferry.bench.DeviceCollectivesVsCopy [MAX_BYTES]} (the backend as usual:
 * {@code -Dferry.backend=staged}; {@code -Dferry.collectives=NAME} forces an algorithm).
 */
public final class DeviceCollectivesVsCopy {
    private static final int BATCHES = 7;

    private DeviceCollectivesVsCopy() {
    }

    /** One collective of the table: its name and the call for a size of {@code bytes} (null when the size does not split over the ranks). */
    private record Column(String name, java.util.function.LongFunction<Runnable> call) {
    }

    public static void main(String[] args) {
        long max = args.length > 0 ? Long.parseLong(args[0]) : 256L << 20;
        Cuda.ensureAvailability();
        try (Communicator comm = Ferry.open()) {
            int rank = comm.rank(), size = comm.size();
            int nextDevice = nextDevice(comm);
            boolean everyRankHasNext = everyRank(comm, nextDevice >= 0);
            int peerDevice = rank == 0 ? nextDevice : -1;
            try (DeviceBuffer send = Cuda.allocate(max); DeviceBuffer recv = Cuda.allocate(max); CudaStream stream = Cuda.newStream();
                 HostBuffer t = HostBuffer.allocate(8); HostBuffer tMax = HostBuffer.allocate(8);
                 DeviceBuffer peer = nextDevice < 0 ? null : Cuda.allocate(nextDevice, max)) {
                Cuda.fill(send, (byte) 0);
                Cuda.fill(recv, (byte) 0);
                // bytes: what each rank contributes in total (allReduce, broadcast, reduceScatterBlock's send,
                // allToAll's send, allGather's receive), so that every column moves the same data per rank
                List<Column> columns = List.of(
                        new Column("allReduce", b -> () -> comm.allReduce(send, recv, b / 8, DataType.DOUBLE, ReduceOp.SUM)),
                        new Column("allReduce float", b -> () -> comm.allReduce(send, recv, b / 4, DataType.FLOAT, ReduceOp.SUM)),
                        new Column("broadcast", b -> () -> comm.broadcast(send, b, DataType.BYTE, 0)),
                        new Column("reduceScatter", b -> b / 8 / size == 0 ? null : () -> comm.reduceScatterBlock(send, recv, b / 8 / size, DataType.DOUBLE, ReduceOp.SUM)),
                        new Column("allGather", b -> b / size == 0 ? null : () -> comm.allGather(send, recv, b / size, DataType.BYTE)),
                        new Column("allToAll", b -> b / size == 0 ? null : () -> comm.allToAll(send, recv, b / size, DataType.BYTE)));
                if (rank == 0) {
                    System.out.println("backend " + comm.backend() + ", " + size + " ranks; " + Cuda.describe());
                    String forced = dev.ferry.Settings.process().text(dev.ferry.collectives.CollectivesSettings.COLLECTIVES);
                    System.out.println("settings: ferry.collectives=" + (forced == null ? "(none: the planner's choice)" : forced));
                    System.out.println("each cell: median us (min-max of " + BATCHES + " batches) and the ratio to the copy; bytes per rank");
                    if (peer != null) {
                        System.out.println("peer copy: GPU " + Cuda.defaultDevice().ordinal() + " -> GPU " + peerDevice + " (rank 1's), cuMemcpyPeerAsync");
                    }
                    StringBuilder head = new StringBuilder(String.format("%12s %22s", "bytes", "d2d copy us"));
                    if (peer != null) head.append(String.format(" %22s", "peer copy us"));
                    if (everyRankHasNext) head.append(String.format(" %26s", "peer copies, all at once"));
                    for (Column c : columns) head.append(String.format(" %28s %7s", c.name() + " us", "x copy"));
                    System.out.println(head);
                }
                for (long bytes = 8; bytes <= max; bytes = bytes == max ? max + 1 : Math.min(bytes * 4, max)) {
                    int reps = (int) Math.max(3, Math.min(1000, (64L << 20) / bytes));
                    Stats copy = rank == 0 ? DeviceCopy.time(recv, send, bytes, stream) : null;
                    Stats peerCopy = rank == 0 && peer != null ? peerCopyMicros(peer, send, peerDevice, bytes, stream) : null;
                    comm.barrier();
                    StringBuilder row = new StringBuilder(rank == 0 ? String.format("%12d %22s", bytes, cell(copy)) : "");
                    if (peerCopy != null) row.append(String.format(" %22s", cell(peerCopy)));
                    if (everyRankHasNext) {
                        int src = Cuda.defaultDevice().ordinal();
                        long n = bytes;
                        Stats all = collectiveMicros(comm, BATCHES, reps, t, tMax, () -> {
                            Cuda.copyPeerAsync(peer.address(), nextDevice, send.address(), src, n, stream);
                            stream.synchronize();
                        });
                        if (rank == 0) row.append(String.format(" %26s", cell(all)));
                    }
                    for (Column c : columns) {
                        Runnable call = c.call().apply(bytes);
                        Stats st = call == null ? null : collectiveMicros(comm, BATCHES, reps, t, tMax, call);
                        if (rank == 0) {
                            row.append(st == null ? String.format(" %28s %7s", "-", "-") : String.format(" %28s %7.2f", cell(st), st.median() / copy.median()));
                        }
                    }
                    if (rank == 0) System.out.println(row);
                }
            }
        }
    }

    /**
     * The next rank's GPU (rank 0's for the last rank) when it differs from this rank's and this one
     * can map it (peer access then enabled), else -1. Collective. Ordinals are compared as this
     * process sees them: ranks that see every GPU (one rank per GPU chosen by Ferry).
     */
    private static int nextDevice(Communicator comm) {
        if (comm.size() < 2) {
            return -1;
        }
        try (HostBuffer mine = HostBuffer.allocate(4); HostBuffer all = HostBuffer.allocate(4L * comm.size())) {
            int own = Cuda.defaultDevice().ordinal();
            mine.segment().set(ValueLayout.JAVA_INT, 0, own);
            comm.allGather(mine, all, 1, DataType.INT);
            int other = all.segment().get(ValueLayout.JAVA_INT, 4L * ((comm.rank() + 1) % comm.size()));
            return other != own && Cuda.enablePeerAccess(own, other) ? other : -1;
        }
    }

    /** True on every rank when {@code mine} is true on every rank. Collective. */
    private static boolean everyRank(Communicator comm, boolean mine) {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
            comm.allReduce(in, out, 1, DataType.INT, ReduceOp.MIN);
            return out.segment().get(ValueLayout.JAVA_INT, 0) == 1;
        }
    }

    /** Single peer copies of {@code bytes} from {@code src} (this GPU) into {@code dst} on {@code dstDevice}, as {@link DeviceCopy#time}. */
    private static Stats peerCopyMicros(DeviceBuffer dst, DeviceBuffer src, int dstDevice, long bytes, CudaStream stream) {
        int srcDevice = Cuda.defaultDevice().ordinal();
        return DeviceCopy.time(() -> Cuda.copyPeerAsync(dst.address(), dstDevice, src.address(), srcDevice, bytes, stream), bytes, stream);
    }

    private static String cell(Stats s) {
        return String.format(java.util.Locale.ROOT, "%.2f (%.2f-%.2f)", s.median(), s.min(), s.max());
    }

    /**
     * The slowest rank's mean time per call over a batch of {@code reps}, over {@code batches} batches
     * after a warm-up batch (collective: every rank runs its {@code call} in each batch).
     */
    static Stats collectiveMicros(Communicator comm, int batches, int reps, HostBuffer t, HostBuffer tMax, Runnable call) {
        double[] us = new double[batches];
        for (int k = -1; k < batches; k++) {
            double slowest = CollectiveBatch.slowestMeanMicros(comm, t, tMax, reps, call);
            if (k >= 0) us[k] = slowest;
        }
        return Stats.of(us);
    }
}
