// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MandelbrotTest {

    @Test
    void escapeTimesOfKnownPoints() {
        assertEquals(100, Mandelbrot.escapeTime(0, 0, 100));      // main cardioid
        assertEquals(100, Mandelbrot.escapeTime(-1, 0, 100));     // period-2 bulb
        assertEquals(100, Mandelbrot.escapeTime(-2, 0, 100));     // tip: |z| stays 2
        assertEquals(2, Mandelbrot.escapeTime(2, 0, 100));        // 0, 2, 6
        assertEquals(3, Mandelbrot.escapeTime(1, 0, 100));        // 0, 1, 2, 5
        assertEquals(1, Mandelbrot.escapeTime(3, 3, 100));
    }

    /** The cardioid and bulb shortcut only answers for points that the plain iteration finds inside. */
    @Test
    void shortcutAgreesWithThePlainIteration() {
        int max = 300;
        for (int i = 0; i < 200; i++) {
            for (int j = 0; j < 120; j++) {
                double cx = -2.2 + i * 0.0161;
                double cy = j * 0.0109;
                assertEquals(plain(cx, cy, max), Mandelbrot.escapeTime(cx, cy, max), "c = " + cx + " + " + cy + "i");
            }
        }
    }

    private static int plain(double cx, double cy, int max) {
        double zx = 0;
        double zy = 0;
        int n = 0;
        while (n < max) {
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

    @Test
    void viewShowsTheWholeSetWithSquarePixels() {
        Mandelbrot.View v = Mandelbrot.View.full(1200, 800);
        assertEquals(-v.dy(), v.dx());
        assertTrue(v.x0() < -2.0 && v.x0() + 1199 * v.dx() > 0.47);
        assertTrue(v.y0() > 1.12 && v.y0() + 799 * v.dy() < -1.12);
        assertEquals(0.0, v.y0() + v.y0() + 799 * v.dy(), 1e-12); // symmetric about the real axis
    }

    @Test
    void bandsComputedApartEqualTheWholeAndPassTheCheck(@TempDir Path dir) throws Exception {
        int w = 90;
        int h = 61;
        int max = 200;
        Mandelbrot.View view = Mandelbrot.View.full(w, h);
        int ranks = 4;
        int band = (h + ranks - 1) / ranks;
        int[] all = new int[band * ranks * w];
        try (Arena arena = Arena.ofConfined()) {
            for (int r = 0; r < ranks; r++) {
                MemorySegment seg = arena.allocate((long) band * w * 4, 4);
                Mandelbrot.computeRows(seg, view, r * band, band, max);
                MemorySegment.copy(seg, ValueLayout.JAVA_INT, 0, all, r * band * w, band * w);
            }
        }
        int[] image = java.util.Arrays.copyOf(all, w * h);
        Outcome ok = Mandelbrot.checkAndWrite(image, view, max, ranks, band, Mode.HOST, "test", 1, dir);
        assertEquals(Outcome.Status.OK, ok.status(), ok.summary());
        BufferedImage png = ImageIO.read(dir.resolve(Mandelbrot.FILE).toFile());
        assertEquals(w, png.getWidth());
        assertEquals(h, png.getHeight());
        assertEquals(0, png.getRGB(w * 2 / 3, h / 2) & 0xFFFFFF, "the centre of the main cardioid is black");

        image[band * w + 5] += 1; // first row of rank 1's band: always sampled
        Outcome bad = Mandelbrot.checkAndWrite(image, view, max, ranks, band, Mode.HOST, "test", 1, dir.resolve("bad"));
        assertEquals(Outcome.Status.FAIL, bad.status());
        assertTrue(bad.summary().contains("rank 1"), bad.summary());
        assertTrue(Files.notExists(dir.resolve("bad")));
    }

    @Test
    void gradientEnds() {
        assertEquals(0x000764, Mandelbrot.gradient(0));
        assertEquals(0x000764, Mandelbrot.gradient(1));
        assertEquals(0xEDFFFF, Mandelbrot.gradient(0.42));
    }
}
