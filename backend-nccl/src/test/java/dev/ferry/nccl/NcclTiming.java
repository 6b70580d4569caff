// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * The Java side of {@code bench/src/main/c/nccl_ref.c -blocking}: the same operations, sizes and
 * table, through Ferry's {@link Communicator} on backend nccl (blocking calls, timed with
 * {@link System#nanoTime()}, slowest rank). Run on a GPU machine, one rank per GPU:
 * {@code mpirun -np N java -cp ... -Dferry.backend=nccl -Dferry.collectives.uniformBuffers=true dev.ferry.nccl.NcclTiming [-min B] [-max B] [-iters N] [-warmup W] [-ops LIST]}.
 */
public final class NcclTiming {
    private NcclTiming() {
    }

    public static void main(String[] args) {
        long min = 8, max = 256L << 20;
        int iters = 20, warmup = 5;
        List<String> ops = List.of("allreduce", "broadcast", "allgather", "reducescatter");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-min" -> min = Long.decode(args[++i]);
                case "-max" -> max = Long.decode(args[++i]);
                case "-iters" -> iters = Integer.parseInt(args[++i]);
                case "-warmup" -> warmup = Integer.parseInt(args[++i]);
                case "-ops" -> ops = List.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("usage: NcclTiming [-min B] [-max B] [-iters N] [-warmup W] [-ops LIST]");
            }
        }
        try (Communicator world = Ferry.open()) {
            int rank = world.rank(), size = world.size();
            NcclCollectives nccl = Nccl.of(world);
            if (rank == 0) {
                System.out.printf("# NcclTiming: backend %s (%s), %d ranks, NCCL %s; %d iterations after %d warm-up; time = slowest rank, per blocking call%n",
                        world.backend(), nccl.inactiveReason() == null ? "NCCL serves it" : "NCCL off: " + nccl.inactiveReason(),
                        size, Nccl.isAvailable() ? Nccl.version() : "-", iters, warmup);
                System.out.printf("%-14s %12s %12s %12s %12s %12s%n", "op", "bytes", "elements", "time_us", "algbw_GB/s", "busbw_GB/s");
            }
            try (DeviceBuffer send = Cuda.allocate(max); DeviceBuffer recv = Cuda.allocate(max)) {
                for (String op : ops) {
                    if (op.equals("reducescatter") && nccl == null) continue;
                    for (long bytes = min; bytes <= max; bytes *= 2) {
                        long n = switch (op) {
                            case "broadcast" -> bytes;
                            case "allreduce" -> bytes / 4;
                            default -> bytes / 4 / size;
                        };
                        if (n == 0) continue;
                        for (int w = 0; w < warmup; w++) call(op, world, nccl, send, recv, n);
                        world.barrier();
                        long t0 = System.nanoTime();
                        for (int i = 0; i < iters; i++) call(op, world, nccl, send, recv, n);
                        double us = (System.nanoTime() - t0) / 1e3 / iters;
                        double slowest = max(world, us);
                        if (rank == 0) {
                            double alg = bytes / (slowest * 1e-6) / 1e9;
                            double factor = switch (op) {
                                case "allreduce" -> 2.0 * (size - 1) / size;
                                case "broadcast" -> 1;
                                default -> (size - 1.0) / size;
                            };
                            System.out.printf("%-14s %12d %12d %12.2f %12.3f %12.3f%n", op, bytes, n, slowest, alg, alg * factor);
                        }
                    }
                }
            }
        }
    }

    private static void call(String op, Communicator c, NcclCollectives nccl, DeviceBuffer send, DeviceBuffer recv, long n) {
        switch (op) {
            case "allreduce" -> c.allReduce(send, recv, n, DataType.FLOAT, ReduceOp.SUM);
            case "broadcast" -> c.broadcast(send, n, DataType.BYTE, 0);
            case "allgather" -> c.allGather(send, recv, n, DataType.FLOAT);
            default -> c.reduceScatterBlock(send, recv, n, DataType.FLOAT, ReduceOp.SUM);
        }
    }

    /** The largest {@code v} of the ranks, through device memory: with {@code ferry.collectives=nccl} NCCL serves this call too. */
    private static double max(Communicator c, double v) {
        try (HostBuffer host = HostBuffer.allocate(8); DeviceBuffer in = Cuda.allocate(8); DeviceBuffer out = Cuda.allocate(8)) {
            host.segment().set(ValueLayout.JAVA_DOUBLE, 0, v);
            Cuda.copy(in, host, 8);
            c.allReduce(in, out, 1, DataType.DOUBLE, ReduceOp.MAX);
            Cuda.copy(host, out, 8);
            return host.segment().get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }
}
