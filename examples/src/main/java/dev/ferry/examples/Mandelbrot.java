// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.TreeSet;
import javax.imageio.ImageIO;

/**
 * Multi-GPU Mandelbrot: the image's rows are split into equal bands, one per rank; each rank
 * computes its band on its GPU with the {@code mandelbrot} kernel (in Java without a GPU), rank 0
 * gathers the iteration counts, checks a sample of rows against its own CPU computation (the
 * kernel uses the same arithmetic without fused multiply-adds, so the counts must be equal), and
 * writes a PNG.
 *
 * <p>Run: {@code mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.Mandelbrot --out DIR [--size 1920x1280] [--max-iter 1000]}
 */
public final class Mandelbrot {
    /** Name in result lines. */
    public static final String NAME = "mandelbrot";
    /** File written into the output folder. */
    public static final String FILE = "mandelbrot.png";

    static {
        // ImageIO only: no window system needed (or wanted on a GPU node)
        if (System.getProperty("java.awt.headless") == null) {
            System.setProperty("java.awt.headless", "true");
        }
    }

    private Mandelbrot() {
    }

    /** Runs this example alone: {@code mpirun -np N java ... dev.ferry.examples.Mandelbrot [options]}; exit 1 when its check fails. */
    public static void main(String[] args) {
        Examples.main(args, Mandelbrot::run);
    }

    /**
     * The complex plane seen by the image: pixel (col, row) is {@code c = (x0 + col*dx, y0 + row*dy)}.
     * The whole set, centred on -0.75, with square pixels; row 0 is the top.
     *
     * @param width  columns
     * @param height rows
     * @param x0     real part of column 0
     * @param y0     imaginary part of row 0
     * @param dx     real step per column
     * @param dy     imaginary step per row (negative: up is +i)
     */
    public record View(int width, int height, double x0, double y0, double dx, double dy) {
        /** The full set in a {@code width x height} image. */
        public static View full(int width, int height) {
            double span = Math.max(3.5, 2.6 * width / height);
            double dx = span / width;
            return new View(width, height, -0.75 - span / 2 + dx / 2, (height - 1) / 2.0 * dx, dx, -dx);
        }
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options options) {
        Mode mode = Mode.agree(comm, options.mode());
        View view = View.full(options.width(), options.height());
        int maxIter = options.maxIter();
        int size = comm.size();
        int rank = comm.rank();
        int band = (view.height() + size - 1) / size; // rows per rank; the last band may have padding rows
        int firstRow = rank * band;
        long bandInts = (long) band * view.width();
        long allInts = bandInts * size;
        boolean root = rank == 0;

        long t0 = System.nanoTime();
        try (HostBuffer all = root ? mode.allocateHost(allInts * Integer.BYTES) : null;
             HostBuffer mine = mode == Mode.DEVICE ? null : mode.allocateHost(bandInts * Integer.BYTES)) {
            switch (mode) {
                case DEVICE -> {
                    try (DeviceBuffer dMine = Cuda.allocate(bandInts * Integer.BYTES);
                         DeviceBuffer dAll = root ? Cuda.allocate(allInts * Integer.BYTES) : null) {
                        Kernels.mandelbrot(dMine, view.width(), view.height(), firstRow, band, view.x0(), view.y0(), view.dx(), view.dy(), maxIter);
                        comm.gather(dMine, dAll, bandInts, DataType.INT, 0);
                        if (root) {
                            Cuda.copy(all, dAll, allInts * Integer.BYTES);
                        }
                    }
                }
                case GPU -> {
                    try (DeviceBuffer dMine = Cuda.allocate(bandInts * Integer.BYTES)) {
                        Kernels.mandelbrot(dMine, view.width(), view.height(), firstRow, band, view.x0(), view.y0(), view.dx(), view.dy(), maxIter);
                        Cuda.copy(mine, dMine, bandInts * Integer.BYTES);
                    }
                    comm.gather(mine, all, bandInts, DataType.INT, 0);
                }
                case HOST -> {
                    computeRows(mine.segment(), view, firstRow, band, maxIter);
                    comm.gather(mine, all, bandInts, DataType.INT, 0);
                }
            }
            long micros = (System.nanoTime() - t0) / 1000;
            Outcome outcome = Outcome.ok(NAME, "");
            if (root) {
                int[] iters = all.segment().asSlice(0, (long) view.width() * view.height() * Integer.BYTES).toArray(ValueLayout.JAVA_INT);
                outcome = checkAndWrite(iters, view, maxIter, size, band, mode, comm.backend(), micros, options.out());
            }
            return outcome.agree(comm);
        }
    }

    /** Rank 0: compare sampled rows with the CPU, write the PNG. */
    static Outcome checkAndWrite(int[] iters, View view, int maxIter, int ranks, int band, Mode mode, String backend, long micros, Path out) {
        int w = view.width();
        int h = view.height();
        TreeSet<Integer> rows = new TreeSet<>();
        for (int r = 0; r < ranks; r++) { // every band's first and last row: a misplaced band shows there
            if (r * band < h) {
                rows.add(r * band);
                rows.add(Math.min(h, (r + 1) * band) - 1);
            }
        }
        for (int row = 0; row < h; row += Math.max(1, h / 32)) {
            rows.add(row);
        }
        int[] expected = new int[w];
        for (int row : rows) {
            for (int col = 0; col < w; col++) {
                expected[col] = escapeTime(view.x0() + col * view.dx(), view.y0() + row * view.dy(), maxIter);
            }
            for (int col = 0; col < w; col++) {
                int got = iters[row * w + col];
                if (got != expected[col]) {
                    return Outcome.fail(NAME, String.format(Locale.ROOT, "pixel (%d, %d) has %d iterations, the CPU computes %d (band of rank %d)",
                            col, row, got, expected[col], row / band));
                }
            }
        }
        long sum = 0;
        long inside = 0;
        for (int n : iters) {
            sum += n;
            if (n >= maxIter) {
                inside++;
            }
        }
        Path file = out.resolve(FILE);
        try {
            Files.createDirectories(out);
            ImageIO.write(render(iters, w, h, maxIter), "png", file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return Outcome.ok(NAME, String.format(Locale.ROOT, "%dx%d, %d ranks (%d rows each), max %d iterations, %d sampled rows equal the CPU's, "
                        + "%.1f%% inside, iteration sum %d; %s via %s, %s; wrote %s",
                w, h, ranks, band, maxIter, rows.size(), 100.0 * inside / iters.length, sum, mode.tag(), backend, Fmt.millis(micros), file));
    }

    /** Escape-time counts of {@code rows} rows from {@code firstRow} into {@code out} (0 for rows past the image). */
    static void computeRows(MemorySegment out, View view, int firstRow, int rows, int maxIter) {
        int w = view.width();
        for (int r = 0; r < rows; r++) {
            int row = firstRow + r;
            for (int col = 0; col < w; col++) {
                int n = row < view.height() ? escapeTime(view.x0() + col * view.dx(), view.y0() + row * view.dy(), maxIter) : 0;
                out.setAtIndex(ValueLayout.JAVA_INT, (long) r * w + col, n);
            }
        }
    }

    /**
     * Iterations of {@code z = z*z + c} from 0 until {@code |z| > 2}, at most {@code maxIter}
     * ({@code maxIter}: inside). Each operation is rounded on its own, as in the kernel.
     */
    public static int escapeTime(double cx, double cy, int maxIter) {
        double xq = cx - 0.25;
        double q = xq * xq + cy * cy;
        if (q * (q + xq) <= 0.25 * cy * cy || (cx + 1.0) * (cx + 1.0) + cy * cy <= 0.0625) {
            return maxIter; // main cardioid or period-2 bulb
        }
        double zx = 0.0;
        double zy = 0.0;
        int n = 0;
        while (n < maxIter) {
            double zx2 = zx * zx;
            double zy2 = zy * zy;
            if (zx2 + zy2 > 4.0) {
                break;
            }
            zy = 2.0 * zx * zy + cy;
            zx = zx2 - zy2 + cx;
            n++;
        }
        return n;
    }

    /**
     * Colours by the logarithm of the escape time: a gradient from deep blue (fast escape) through
     * light blue and white to gold and brown at the boundary; the inside is black.
     */
    static BufferedImage render(int[] iters, int width, int height, int maxIter) {
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        double scale = 1.0 / Math.log1p(maxIter);
        for (int row = 0; row < height; row++) {
            for (int col = 0; col < width; col++) {
                int n = iters[row * width + col];
                img.setRGB(col, row, n >= maxIter ? 0 : gradient(Math.log1p(n) * scale));
            }
        }
        return img;
    }

    private static final double[] STOPS = {0.0, 0.16, 0.42, 0.6425, 0.8575, 1.0};
    private static final int[] COLOURS = {0x000764, 0x206BCB, 0xEDFFFF, 0xFFAA00, 0x000200, 0x000764};

    /** A colour on the gradient, {@code t} in [0, 1]. */
    static int gradient(double t) {
        t = Math.clamp(t, 0.0, 1.0);
        int i = 1;
        while (i < STOPS.length - 1 && t > STOPS[i]) {
            i++;
        }
        double f = (t - STOPS[i - 1]) / (STOPS[i] - STOPS[i - 1]);
        int a = COLOURS[i - 1];
        int b = COLOURS[i];
        int r = (int) Math.round(((a >> 16) & 0xFF) * (1 - f) + ((b >> 16) & 0xFF) * f);
        int g = (int) Math.round(((a >> 8) & 0xFF) * (1 - f) + ((b >> 8) & 0xFF) * f);
        int bl = (int) Math.round((a & 0xFF) * (1 - f) + (b & 0xFF) * f);
        return (r << 16) | (g << 8) | bl;
    }
}
