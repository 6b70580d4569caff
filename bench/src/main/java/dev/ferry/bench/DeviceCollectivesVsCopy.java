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
import java.util.Arrays;

/**
 * How far are collectives on device buffers from the speed of the GPU's own memory? For each size
 * from 8 bytes to 256 MiB (powers of 4), the time of an allReduce (doubles, SUM; 8 bytes: one
 * double) and of a broadcast from rank 0 on device buffers, beside the time of one device-to-device
 * copy of the same size on the same GPU in the same run (rank 0, while the other ranks wait), and
 * the ratios. A collective's time is the slowest rank's mean over a batch of back-to-back calls,
 * median of the batches; a copy's is the median of single copies (cuMemcpyAsync then stream
 * synchronize).
 *
 * <p>Run on a GPU machine under the launcher: {@code mpirun -np N java -cp ...
 * dev.ferry.bench.DeviceCollectivesVsCopy [MAX_BYTES]} (the backend as usual:
 * {@code -Dferry.backend=staged}, {@code -Dferry.staged.deviceCollectives=...}).
 */
public final class DeviceCollectivesVsCopy {
    private static final int BATCHES = 7;

    private DeviceCollectivesVsCopy() {
    }

    public static void main(String[] args) {
        long max = args.length > 0 ? Long.parseLong(args[0]) : 256L << 20;
        Cuda.ensureAvailability();
        try (Communicator comm = Ferry.open()) {
            int rank = comm.rank();
            if (rank == 0) {
                System.out.println("backend " + comm.backend() + ", " + comm.size() + " ranks; " + Cuda.describe());
                System.out.println("settings: ferry.staged.deviceCollectives=" + dev.ferry.spi.SettingsCatalog.find("ferry.staged.deviceCollectives").map(k -> String.valueOf(dev.ferry.Settings.process().get(k))).orElse("auto").toLowerCase(java.util.Locale.ROOT));
                System.out.printf("%12s %14s %14s %10s %14s %10s%n", "bytes", "d2d copy us", "allReduce us", "x copy", "broadcast us", "x copy");
            }
            try (DeviceBuffer send = Cuda.allocate(max); DeviceBuffer recv = Cuda.allocate(max); CudaStream stream = Cuda.newStream();
                 HostBuffer t = HostBuffer.allocate(8); HostBuffer tMax = HostBuffer.allocate(8)) {
                Cuda.fill(send, (byte) 0);
                Cuda.fill(recv, (byte) 0);
                for (long bytes = 8; bytes <= max; bytes *= 4) {
                    long count = bytes / 8;
                    long n = bytes;
                    int reps = (int) Math.max(3, Math.min(1000, (64L << 20) / bytes));
                    double copy = rank == 0 ? copyMicros(recv, send, bytes, stream, reps) : 0;
                    comm.barrier();
                    double allReduce = collectiveMicros(comm, reps, t, tMax, () -> comm.allReduce(send, recv, count, DataType.DOUBLE, ReduceOp.SUM));
                    double broadcast = collectiveMicros(comm, reps, t, tMax, () -> comm.broadcast(send, n, DataType.BYTE, 0));
                    if (rank == 0) {
                        System.out.printf("%12d %14.2f %14.2f %10.2f %14.2f %10.2f%n", bytes, copy, allReduce, allReduce / copy, broadcast, broadcast / copy);
                    }
                }
            }
        }
    }

    /** Median of single device-to-device copies of {@code bytes}, after a warm-up. */
    private static double copyMicros(DeviceBuffer dst, DeviceBuffer src, long bytes, CudaStream stream, int reps) {
        double[] us = new double[Math.min(reps, 51)];
        for (int i = -3; i < us.length; i++) {
            long t0 = System.nanoTime();
            Cuda.copyAsync(dst.address(), src.address(), bytes, stream);
            stream.synchronize();
            if (i >= 0) us[i] = (System.nanoTime() - t0) / 1e3;
        }
        Arrays.sort(us);
        return us[us.length / 2];
    }

    /** The slowest rank's mean time per call over a batch of {@code reps}, median of {@link #BATCHES} batches, after a warm-up batch. */
    private static double collectiveMicros(Communicator comm, int reps, HostBuffer t, HostBuffer tMax, Runnable call) {
        double[] us = new double[BATCHES];
        for (int k = -1; k < BATCHES; k++) {
            comm.barrier();
            long t0 = System.nanoTime();
            for (int i = 0; i < reps; i++) call.run();
            double mine = (System.nanoTime() - t0) / 1e3 / reps;
            t.segment().set(ValueLayout.JAVA_DOUBLE, 0, mine);
            comm.allReduce(t, tMax, 1, DataType.DOUBLE, ReduceOp.MAX);
            if (k >= 0) us[k] = tMax.segment().get(ValueLayout.JAVA_DOUBLE, 0);
        }
        Arrays.sort(us);
        return us[us.length / 2];
    }
}
