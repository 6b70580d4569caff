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
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Scatter, compute, gather: rank 0 scatters an array of random floats, every rank adds a shift to
 * its part on its GPU with a kernel ({@code shift_floats}), and rank 0 gathers the parts and checks
 * every element ({@code out[i] == in[i] + shift}, exact in IEEE arithmetic) and that the mean moved
 * by the shift.
 *
 * <p>In the {@link Mode#DEVICE device} version the scatter and the gather move device buffers, so
 * the data never passes through host memory that the program sees; in the {@link Mode#GPU GPU}
 * version the example copies between device and pinned host memory around host-buffer
 * collectives; in the {@link Mode#HOST host} version (no GPU) Java adds the shift.
 *
 * <p>Run: {@code mpirun -np 4 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.ScatterShiftGather [--floats 4M] [--shift 2.5]}
 */
public final class ScatterShiftGather {
    /** Name in result lines. */
    public static final String NAME = "scatter-shift-gather";

    private ScatterShiftGather() {
    }

    /** Runs this example alone: {@code mpirun -np N java ... dev.ferry.examples.ScatterShiftGather [options]}; exit 1 when its check fails. */
    public static void main(String[] args) {
        Examples.main(args, ScatterShiftGather::run);
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options options) {
        Mode mode = Mode.agree(comm, options.mode());
        int size = comm.size();
        boolean root = comm.rank() == 0;
        long perRank = options.floats() / size;
        if (perRank == 0) {
            return Outcome.skip(NAME, options.floats() + " floats cannot be split over " + size + " ranks").agree(comm);
        }
        long n = perRank * size;
        float shift = options.shift();
        long bytes = n * Float.BYTES;
        long partBytes = perRank * Float.BYTES;

        float[] input = root ? randomFloats(n, options.seed()) : null;
        try (HostBuffer all = root ? mode.allocateHost(bytes) : null;
             HostBuffer part = mode == Mode.DEVICE ? null : mode.allocateHost(partBytes)) {
            if (root) {
                MemorySegment.copy(input, 0, all.segment(), ValueLayout.JAVA_FLOAT, 0, input.length);
            }
            long t0 = System.nanoTime();
            switch (mode) {
                case DEVICE -> {
                    // device buffers all the way: scatter from GPU 0's memory to every rank's GPU memory
                    try (DeviceBuffer dAll = root ? Cuda.allocate(bytes) : null;
                         DeviceBuffer dPart = Cuda.allocate(partBytes)) {
                        if (root) {
                            Cuda.copy(dAll, all, bytes);
                        }
                        comm.scatter(dAll, dPart, perRank, DataType.FLOAT, 0);
                        Kernels.shiftFloats(dPart, perRank, shift);
                        comm.gather(dPart, dAll, perRank, DataType.FLOAT, 0);
                        if (root) {
                            Cuda.copy(all, dAll, bytes);
                        }
                    }
                }
                case GPU -> {
                    // the backend carries host buffers only: copy to and from the GPU around the collectives
                    comm.scatter(all, part, perRank, DataType.FLOAT, 0);
                    try (DeviceBuffer dPart = Cuda.allocate(partBytes)) {
                        Cuda.copy(dPart, part, partBytes);
                        Kernels.shiftFloats(dPart, perRank, shift);
                        Cuda.copy(part, dPart, partBytes);
                    }
                    comm.gather(part, all, perRank, DataType.FLOAT, 0);
                }
                case HOST -> {
                    comm.scatter(all, part, perRank, DataType.FLOAT, 0);
                    MemorySegment s = part.segment();
                    for (long i = 0; i < perRank; i++) {
                        long off = i * Float.BYTES;
                        s.set(ValueLayout.JAVA_FLOAT, off, s.get(ValueLayout.JAVA_FLOAT, off) + shift);
                    }
                    comm.gather(part, all, perRank, DataType.FLOAT, 0);
                }
            }
            long micros = (System.nanoTime() - t0) / 1000;
            Outcome outcome = root ? check(input, all.segment(), shift, size, mode, comm.backend(), micros) : Outcome.ok(NAME, "");
            return outcome.agree(comm);
        }
    }

    /** Rank 0's check: every element, and the means. */
    static Outcome check(float[] input, MemorySegment output, float shift, int ranks, Mode mode, String backend, long micros) {
        return check(NAME, null, input, output, shift, ranks, mode, backend, micros);
    }

    /** Rank 0's check for the example {@code name}; {@code split} (or null) says how the floats were split. */
    static Outcome check(String name, String split, float[] input, MemorySegment output, float shift, int ranks, Mode mode, String backend, long micros) {
        double before = 0;
        double after = 0;
        long wrong = 0;
        long firstWrong = -1;
        for (int i = 0; i < input.length; i++) {
            float out = output.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            before += input[i];
            after += out;
            if (Float.floatToRawIntBits(out) != Float.floatToRawIntBits(input[i] + shift)) {
                if (wrong++ == 0) {
                    firstWrong = i;
                }
            }
        }
        before /= input.length;
        after /= input.length;
        String what = String.format(Locale.ROOT, "%d ranks, %s floats%s, mean %.4f -> %.4f (shift %s)", ranks, Fmt.count(input.length),
                split == null ? "" : " in " + split, before, after, shift);
        if (wrong > 0) {
            return Outcome.fail(name, what + ": " + wrong + " elements wrong, the first at " + firstWrong + ": " + input[(int) firstWrong] + " + " + shift
                    + " gave " + output.getAtIndex(ValueLayout.JAVA_FLOAT, firstWrong));
        }
        if (Math.abs(after - before - shift) > 1e-3 * Math.max(1, Math.abs(shift))) {
            return Outcome.fail(name, what + ": the mean moved by " + (after - before) + ", not by the shift");
        }
        return Outcome.ok(name, what + ", every element checked; " + mode.tag() + " via " + backend + ", " + Fmt.millis(micros));
    }

    /** {@code n} uniform floats in [0, 1) from {@code seed}. */
    static float[] randomFloats(long n, long seed) {
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(n + " floats do not fit in one Java array");
        }
        SplittableRandom random = new SplittableRandom(seed);
        float[] a = new float[(int) n];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) random.nextDouble();
        }
        return a;
    }
}
