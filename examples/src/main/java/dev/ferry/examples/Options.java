// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Command-line settings shared by every example and the {@link Demo}; each example reads the
 * ones it needs. Sizes take binary suffixes ({@code 64K}, {@code 4M}, {@code 1G}).
 *
 * <pre>
 *   --out DIR          where the Mandelbrot PNG goes (default ferry-demo-out)
 *   --mode M           auto | device | gpu | host (default auto, see {@link Mode})
 *   --floats N         ScatterShiftGather, UnevenScatterShiftGather: number of floats (default 1M)
 *   --shift X          ScatterShiftGather, UnevenScatterShiftGather: the shift (default 2.0)
 *   --seed N           ScatterShiftGather: random seed (default 42)
 *   --size WxH         Mandelbrot: image size (default 1200x800)
 *   --max-iter N       Mandelbrot: iteration limit (default 500)
 *   --ipc-ints N       IpcExchange: ints shared (default 1M)
 *   --sizes A,B,..     PingPong: message sizes in bytes (default 8,64K,4M,64M)
 *   --reps N           PingPong: round trips for small messages; large ones use fewer (default 200)
 * </pre>
 *
 * @param out        output folder (Mandelbrot PNG)
 * @param mode       requested version: {@code auto}, {@code device}, {@code gpu} or {@code host}
 * @param floats     ScatterShiftGather element count (rounded down to a multiple of the rank count;
 *                   UnevenScatterShiftGather takes it as it is)
 * @param shift      ScatterShiftGather shift
 * @param seed       ScatterShiftGather random seed
 * @param width      Mandelbrot image width in pixels
 * @param height     Mandelbrot image height in pixels
 * @param maxIter    Mandelbrot iteration limit
 * @param ipcInts    IpcExchange element count
 * @param sizes      PingPong message sizes in bytes
 * @param reps       PingPong round trips per small message
 */
public record Options(Path out, String mode, long floats, float shift, long seed, int width, int height, int maxIter,
                      long ipcInts, long[] sizes, int reps) {

    public Options {
        sizes = sizes.clone();
    }

    /** A copy of the ping-pong message sizes. */
    @Override
    public long[] sizes() {
        return sizes.clone();
    }

    /** The settings used when no option is given. */
    public static Options defaults() {
        return new Options(Path.of("ferry-demo-out"), "auto", 1L << 20, 2.0f, 42, 1200, 800, 500,
                1L << 20, new long[] {8, 64L << 10, 4L << 20, 64L << 20}, 200);
    }

    /** Parses {@code args}; throws {@link IllegalArgumentException} with the usage on a bad option. */
    public static Options parse(String... args) {
        Options d = defaults();
        Path out = d.out;
        String mode = d.mode;
        long floats = d.floats;
        float shift = d.shift;
        long seed = d.seed;
        int width = d.width;
        int height = d.height;
        int maxIter = d.maxIter;
        long ipcInts = d.ipcInts;
        long[] sizes = d.sizes;
        int reps = d.reps;
        for (int i = 0; i < args.length; i++) {
            String key = args[i];
            if (key.equals("--help") || key.equals("-h")) {
                throw new IllegalArgumentException(usage());
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + key + " needs a value\n" + usage());
            }
            String v = args[++i];
            try {
                switch (key) {
                    case "--out" -> out = Path.of(v);
                    case "--mode" -> mode = mode(v);
                    case "--floats" -> floats = positive(key, bytes(v));
                    case "--shift" -> shift = Float.parseFloat(v);
                    case "--seed" -> seed = Long.parseLong(v);
                    case "--size" -> {
                        String[] wh = v.toLowerCase(Locale.ROOT).split("x");
                        if (wh.length != 2) {
                            throw new IllegalArgumentException("--size takes WIDTHxHEIGHT, e.g. 1200x800, not " + v);
                        }
                        width = (int) positive(key, Integer.parseInt(wh[0].trim()));
                        height = (int) positive(key, Integer.parseInt(wh[1].trim()));
                    }
                    case "--max-iter" -> maxIter = (int) positive(key, Integer.parseInt(v));
                    case "--ipc-ints" -> ipcInts = positive(key, bytes(v));
                    case "--sizes" -> sizes = Arrays.stream(v.split(",")).map(String::trim).filter(s -> !s.isEmpty())
                            .mapToLong(s -> positive(key, bytes(s))).toArray();
                    case "--reps" -> reps = (int) positive(key, Integer.parseInt(v));
                    default -> throw new IllegalArgumentException("unknown option " + key + "\n" + usage());
                }
            } catch (NumberFormatException | ArithmeticException e) {
                throw new IllegalArgumentException("option " + key + ": '" + v + "' is not a valid number\n" + usage(), e);
            }
        }
        if (sizes.length == 0) {
            throw new IllegalArgumentException("--sizes needs at least one size");
        }
        return new Options(out, mode, floats, shift, seed, width, height, maxIter, ipcInts, sizes, reps);
    }

    /** The option list, for {@code --help} and errors. */
    public static String usage() {
        return """
                options:
                  --out DIR       where the Mandelbrot PNG goes (default ferry-demo-out)
                  --mode M        auto | device | gpu | host (default auto)
                                    device: kernels on GPUs, device buffers through the communicator
                                    gpu:    kernels on GPUs, host buffers through the communicator
                                    host:   no GPU work: the computation runs in Java
                  --floats N      scatter-shift-gather: floats (default 1M)
                  --shift X       scatter-shift-gather: shift (default 2.0)
                  --seed N        scatter-shift-gather: random seed (default 42)
                  --size WxH      mandelbrot: image size (default 1200x800)
                  --max-iter N    mandelbrot: iteration limit (default 500)
                  --ipc-ints N    ipc-exchange: ints shared (default 1M)
                  --sizes A,B     ping-pong: message sizes (default 8,64K,4M,64M)
                  --reps N        ping-pong: round trips for small messages (default 200)""";
    }

    private static String mode(String v) {
        String m = v.trim().toLowerCase(Locale.ROOT);
        if (!m.equals("auto") && !m.equals("device") && !m.equals("gpu") && !m.equals("host")) {
            throw new IllegalArgumentException("--mode takes auto, device, gpu or host, not " + v);
        }
        return m;
    }

    private static long positive(String key, long v) {
        if (v <= 0) {
            throw new IllegalArgumentException(key + " must be positive, not " + v);
        }
        return v;
    }

    /** "8" -> 8, "64K" -> 65536, "4M", "1G" (binary multiples; a trailing B or iB is ignored). */
    static long bytes(String s) {
        String t = s.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("IB")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("B")) {
            t = t.substring(0, t.length() - 1);
        }
        long mul = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> mul = 1L << 10;
                case 'M' -> mul = 1L << 20;
                case 'G' -> mul = 1L << 30;
                default -> { }
            }
        }
        if (mul != 1) {
            t = t.substring(0, t.length() - 1);
        }
        return Math.multiplyExact(Long.parseLong(t.trim()), mul);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Options other && out.equals(other.out) && mode.equals(other.mode) && floats == other.floats
                && Float.compare(shift, other.shift) == 0 && seed == other.seed && width == other.width && height == other.height
                && maxIter == other.maxIter && ipcInts == other.ipcInts && Arrays.equals(sizes, other.sizes) && reps == other.reps;
    }

    @Override
    public int hashCode() {
        return out.hashCode() * 31 + Arrays.hashCode(sizes);
    }

    @Override
    public String toString() {
        return "Options[out=" + out + ", mode=" + mode + ", floats=" + floats + ", shift=" + shift + ", seed=" + seed + ", size=" + width + "x" + height
                + ", maxIter=" + maxIter + ", ipcInts=" + ipcInts + ", sizes=" + Arrays.toString(sizes) + ", reps=" + reps + "]";
    }
}
