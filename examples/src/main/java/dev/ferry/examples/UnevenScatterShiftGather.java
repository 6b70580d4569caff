// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * {@link ScatterShiftGather} for any number of floats: when {@code --floats} is not a multiple of
 * the rank count, the parts differ (rank {@code r} gets {@code n / size} floats, one more when
 * {@code r < n % size}: the classic split), so rank 0 scatters them with {@link Communicator#scatterV}
 * and gathers them back with {@link Communicator#gatherV}, no padding needed. Every rank adds the
 * shift to its part (on its GPU with the {@code shift_floats} kernel, or in Java without one), and
 * rank 0 checks every element and the mean, as the even version does.
 *
 * <p>Versions ({@link Mode}): {@link Mode#DEVICE device} buffers straight through the vector
 * collectives, {@link Mode#GPU GPU} kernels with host-buffer collectives, {@link Mode#HOST host}.
 *
 * <p>Run: {@code mpirun -np 3 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.UnevenScatterShiftGather --floats 1000003 [--shift 2.5]}
 */
public final class UnevenScatterShiftGather {
    /** Name in result lines. */
    public static final String NAME = "uneven-scatter-shift-gather";

    private UnevenScatterShiftGather() {
    }

    /** Runs this example alone: {@code mpirun -np N java ... dev.ferry.examples.UnevenScatterShiftGather [options]}; exit 1 when its check fails. */
    public static void main(String[] args) {
        Examples.main(args, UnevenScatterShiftGather::run);
    }

    /** The classic split of {@code n} elements over {@code size} ranks: {@code n / size} each, one more for the first {@code n % size}. */
    static long[] parts(long n, int size) {
        long[] counts = new long[size];
        for (int r = 0; r < size; r++) {
            counts[r] = n / size + (r < n % size ? 1 : 0);
        }
        return counts;
    }

    /** Where each part starts: the parts one after the other. */
    static long[] offsets(long[] counts) {
        long[] d = new long[counts.length];
        for (int r = 1; r < counts.length; r++) {
            d[r] = d[r - 1] + counts[r - 1];
        }
        return d;
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options options) {
        Mode mode = Mode.agree(comm, options.mode());
        int size = comm.size();
        boolean root = comm.rank() == 0;
        long n = options.floats();
        long[] counts = parts(n, size);
        long[] displs = offsets(counts);
        long mine = counts[comm.rank()];
        float shift = options.shift();
        long bytes = n * Float.BYTES;
        long partBytes = mine * Float.BYTES;

        float[] input = root ? ScatterShiftGather.randomFloats(n, options.seed()) : null;
        try (HostBuffer all = root ? mode.allocateHost(bytes) : null;
             HostBuffer part = mode == Mode.DEVICE ? null : mode.allocateHost(Math.max(partBytes, 1))) {
            if (root) {
                MemorySegment.copy(input, 0, all.segment(), ValueLayout.JAVA_FLOAT, 0, input.length);
            }
            long t0 = System.nanoTime();
            switch (mode) {
                case DEVICE -> {
                    try (DeviceBuffer dAll = root ? Cuda.allocate(bytes) : null;
                         DeviceBuffer dPart = Cuda.allocate(Math.max(partBytes, 1))) {
                        if (root) {
                            Cuda.copy(dAll, all, bytes);
                        }
                        comm.scatterV(dAll, root ? counts : null, root ? displs : null, dPart, mine, DataType.FLOAT, 0);
                        if (mine > 0) {
                            Kernels.shiftFloats(dPart, mine, shift);
                        }
                        comm.gatherV(dPart, mine, dAll, root ? counts : null, root ? displs : null, DataType.FLOAT, 0);
                        if (root) {
                            Cuda.copy(all, dAll, bytes);
                        }
                    }
                }
                case GPU -> {
                    comm.scatterV(all, root ? counts : null, root ? displs : null, part, mine, DataType.FLOAT, 0);
                    if (mine > 0) {
                        try (DeviceBuffer dPart = Cuda.allocate(partBytes)) {
                            Cuda.copy(dPart, part, partBytes);
                            Kernels.shiftFloats(dPart, mine, shift);
                            Cuda.copy(part, dPart, partBytes);
                        }
                    }
                    comm.gatherV(part, mine, all, root ? counts : null, root ? displs : null, DataType.FLOAT, 0);
                }
                case HOST -> {
                    comm.scatterV(all, root ? counts : null, root ? displs : null, part, mine, DataType.FLOAT, 0);
                    MemorySegment s = part.segment();
                    for (long i = 0; i < mine; i++) {
                        long off = i * Float.BYTES;
                        s.set(ValueLayout.JAVA_FLOAT, off, s.get(ValueLayout.JAVA_FLOAT, off) + shift);
                    }
                    comm.gatherV(part, mine, all, root ? counts : null, root ? displs : null, DataType.FLOAT, 0);
                }
            }
            long micros = (System.nanoTime() - t0) / 1000;
            String split = counts[0] == counts[size - 1] ? "parts of " + Fmt.count(counts[0]) : "uneven parts of " + Fmt.count(counts[size - 1])
                    + " to " + Fmt.count(counts[0]) + " (scatterV/gatherV)";
            Outcome outcome = root ? ScatterShiftGather.check(NAME, split, input, all.segment(), shift, size, mode, comm.backend(), micros)
                    : Outcome.ok(NAME, "");
            return outcome.agree(comm);
        }
    }
}
