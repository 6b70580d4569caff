// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Shape;
import java.awt.Stroke;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Line2D;
import java.awt.geom.Path2D;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import javax.imageio.ImageIO;

/**
 * Log-log line charts drawn with Java2D (headless) and written as PNG with ImageIO: a grid of
 * panels sharing one legend. Message size runs along x (powers of two), time or bandwidth along y
 * (decades); each line is one series, its points the medians, whiskers the spread, and horizontal
 * lines mark physical limits.
 */
final class Plot {
    /** Marker shapes. */
    enum Marker { CIRCLE, SQUARE, TRIANGLE, DIAMOND }

    /** One point: x (bytes), y (median), and the whisker from lo to hi. */
    record Point(double x, double y, double lo, double hi) {
    }

    /** One series in one panel. */
    record Line(String label, Color color, boolean dashed, Marker marker, List<Point> points) {
    }

    /** A horizontal reference line. */
    record Limit(String label, double value, Color color) {
    }

    /** One chart. */
    record Panel(String title, String yLabel, boolean bandwidth, List<Line> lines, List<Limit> limits) {
    }

    /** A legend entry (label and style of a line). */
    record Key(String label, Color color, boolean dashed, Marker marker) {
    }

    private static final int PANEL_W = 600;
    private static final int PANEL_H = 450;
    private static final int LEFT = 86;
    private static final int RIGHT = 22;
    private static final int TOP = 34;
    private static final int BOTTOM = 58;
    private static final Color GRID_MAJOR = new Color(0xD0D0D0);
    private static final Color GRID_MINOR = new Color(0xEEEEEE);
    private static final Color AXIS = new Color(0x404040);

    private Plot() {
    }

    /** Draws {@code panels} in {@code cols} columns under a title, with one legend, into {@code png}. */
    static void write(Path png, String title, List<String> subtitle, List<Panel> panels, List<Key> legend, int cols) throws IOException {
        int rows = (panels.size() + cols - 1) / cols;
        int width = cols * PANEL_W;
        int legendCols = Math.max(1, width / 300);
        int legendRows = (legend.size() + legendCols - 1) / legendCols;
        int titleH = 44 + 20 * subtitle.size();
        int legendH = 24 + 24 * legendRows;
        int height = titleH + rows * PANEL_H + legendH;
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_STROKE_CONTROL, RenderingHints.VALUE_STROKE_PURE);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 20));
            g.drawString(title, 16, 28);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
            g.setColor(AXIS);
            for (int i = 0; i < subtitle.size(); i++) {
                g.drawString(subtitle.get(i), 16, 50 + 20 * i);
            }
            for (int i = 0; i < panels.size(); i++) {
                int px = (i % cols) * PANEL_W;
                int py = titleH + (i / cols) * PANEL_H;
                drawPanel(g, panels.get(i), px, py);
            }
            drawLegend(g, legend, 0, titleH + rows * PANEL_H, width, legendCols);
        } finally {
            g.dispose();
        }
        ImageIO.write(img, "png", png.toFile());
    }

    private static void drawPanel(Graphics2D g, Panel p, int px, int py) {
        int x0 = px + LEFT;
        int y0 = py + TOP;
        int w = PANEL_W - LEFT - RIGHT;
        int h = PANEL_H - TOP - BOTTOM;
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.setColor(Color.BLACK);
        g.drawString(p.title(), x0, py + 22);

        TreeSet<Double> xs = new TreeSet<>();
        double ymin = Double.POSITIVE_INFINITY;
        double ymax = Double.NEGATIVE_INFINITY;
        for (Line l : p.lines()) {
            for (Point pt : l.points()) {
                if (!(pt.y() > 0) || !Double.isFinite(pt.y())) continue;
                xs.add(pt.x());
                ymin = Math.min(ymin, pos(pt.lo(), pt.y()));
                ymax = Math.max(ymax, pos(pt.hi(), pt.y()));
            }
        }
        g.setColor(AXIS);
        g.draw(new Rectangle2D.Double(x0, y0, w, h));
        if (xs.isEmpty()) {
            g.setFont(new Font(Font.SANS_SERIF, Font.ITALIC, 14));
            g.drawString("no data", x0 + w / 2 - 25, y0 + h / 2);
            return;
        }
        for (Limit lim : p.limits()) {
            ymin = Math.min(ymin, lim.value());
            ymax = Math.max(ymax, lim.value());
        }
        double ly0 = Math.floor(Math.log10(ymin));
        double ly1 = Math.ceil(Math.log10(ymax));
        if (ly1 - ly0 < 1) ly1 = ly0 + 1;
        double lx0 = log2(xs.first());
        double lx1 = log2(xs.last());
        if (lx1 - lx0 < 1) {
            lx0 -= 1;
            lx1 += 1;
        }
        double padX = (lx1 - lx0) * 0.04;
        final double ax0 = lx0 - padX;
        final double ax1 = lx1 + padX;
        final double ay0 = ly0;
        final double ay1 = ly1;
        java.util.function.DoubleUnaryOperator X = v -> x0 + (log2(v) - ax0) / (ax1 - ax0) * w;
        java.util.function.DoubleUnaryOperator Y = v -> y0 + h - (Math.log10(v) - ay0) / (ay1 - ay0) * h;

        // grid: decades and their 2..9, sizes
        Stroke thin = new BasicStroke(1f);
        g.setStroke(thin);
        for (int e = (int) ay0; e < (int) ay1; e++) {
            for (int m = 2; m <= 9; m++) {
                double yy = Y.applyAsDouble(m * Math.pow(10, e));
                g.setColor(GRID_MINOR);
                g.draw(new Line2D.Double(x0, yy, x0 + w, yy));
            }
        }
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        for (int e = (int) ay0; e <= (int) ay1; e++) {
            double v = Math.pow(10, e);
            double yy = Y.applyAsDouble(v);
            g.setColor(GRID_MAJOR);
            g.draw(new Line2D.Double(x0, yy, x0 + w, yy));
            g.setColor(AXIS);
            String s = p.bandwidth() ? formatBandwidth(v) : formatTime(v);
            g.drawString(s, x0 - 6 - fm.stringWidth(s), (float) yy + 4);
        }
        double lastLabelEnd = Double.NEGATIVE_INFINITY;
        for (double x : xs) {
            double xx = X.applyAsDouble(x);
            g.setColor(GRID_MAJOR);
            g.draw(new Line2D.Double(xx, y0, xx, y0 + h));
            String s = Suite.formatSize((long) x);
            int sw = fm.stringWidth(s);
            if (xx - sw / 2.0 > lastLabelEnd + 6) {
                g.setColor(AXIS);
                g.draw(new Line2D.Double(xx, y0 + h, xx, y0 + h + 4));
                g.drawString(s, (float) (xx - sw / 2.0), y0 + h + 18);
                lastLabelEnd = xx + sw / 2.0;
            }
        }
        g.setColor(AXIS);
        g.draw(new Rectangle2D.Double(x0, y0, w, h));
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        fm = g.getFontMetrics();
        String xl = "message size (log scale)";
        g.drawString(xl, x0 + w / 2f - fm.stringWidth(xl) / 2f, y0 + h + 42);
        Graphics2D gr = (Graphics2D) g.create();
        gr.rotate(-Math.PI / 2);
        gr.drawString(p.yLabel(), -(y0 + h / 2f + fm.stringWidth(p.yLabel()) / 2f), px + 16);
        gr.dispose();

        // limits
        Graphics2D clip = (Graphics2D) g.create();
        clip.clip(new Rectangle2D.Double(x0, y0, w, h));
        clip.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (Limit lim : p.limits()) {
            double yy = Y.applyAsDouble(lim.value());
            clip.setColor(lim.color());
            clip.setStroke(new BasicStroke(1.6f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {3f, 4f}, 0f));
            clip.draw(new Line2D.Double(x0, yy, x0 + w, yy));
            clip.drawString(lim.label(), x0 + 6, (float) yy - 4);
        }
        // series: whiskers, lines, markers
        for (Line l : p.lines()) {
            List<double[]> pts = new ArrayList<>();
            for (Point pt : l.points()) {
                if (pt.y() > 0 && Double.isFinite(pt.y())) {
                    pts.add(new double[] {X.applyAsDouble(pt.x()), Y.applyAsDouble(pt.y()),
                            Y.applyAsDouble(pos(pt.lo(), pt.y())), Y.applyAsDouble(pos(pt.hi(), pt.y()))});
                }
            }
            Color c = l.color();
            clip.setColor(new Color(c.getRed(), c.getGreen(), c.getBlue(), 150));
            clip.setStroke(new BasicStroke(1.2f));
            for (double[] q : pts) {
                clip.draw(new Line2D.Double(q[0], q[2], q[0], q[3]));
                clip.draw(new Line2D.Double(q[0] - 3, q[2], q[0] + 3, q[2]));
                clip.draw(new Line2D.Double(q[0] - 3, q[3], q[0] + 3, q[3]));
            }
            clip.setColor(c);
            clip.setStroke(lineStroke(l.dashed()));
            Path2D path = new Path2D.Double();
            for (int i = 0; i < pts.size(); i++) {
                if (i == 0) path.moveTo(pts.get(i)[0], pts.get(i)[1]);
                else path.lineTo(pts.get(i)[0], pts.get(i)[1]);
            }
            clip.draw(path);
            clip.setStroke(new BasicStroke(1.5f));
            for (double[] q : pts) {
                drawMarker(clip, l.marker(), q[0], q[1], c, l.dashed());
            }
        }
        clip.dispose();
    }

    private static double pos(double v, double fallback) {
        return v > 0 && Double.isFinite(v) ? v : fallback;
    }

    private static Stroke lineStroke(boolean dashed) {
        return dashed
                ? new BasicStroke(2.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, new float[] {9f, 5f}, 0f)
                : new BasicStroke(2.4f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND);
    }

    private static void drawMarker(Graphics2D g, Marker m, double x, double y, Color c, boolean hollow) {
        double r = 4.5;
        Shape s = switch (m) {
            case CIRCLE -> new Ellipse2D.Double(x - r, y - r, 2 * r, 2 * r);
            case SQUARE -> new Rectangle2D.Double(x - r, y - r, 2 * r, 2 * r);
            case TRIANGLE -> {
                Path2D t = new Path2D.Double();
                t.moveTo(x, y - r - 1);
                t.lineTo(x + r + 1, y + r);
                t.lineTo(x - r - 1, y + r);
                t.closePath();
                yield t;
            }
            case DIAMOND -> {
                Path2D d = new Path2D.Double();
                d.moveTo(x, y - r - 1);
                d.lineTo(x + r + 1, y);
                d.lineTo(x, y + r + 1);
                d.lineTo(x - r - 1, y);
                d.closePath();
                yield d;
            }
        };
        g.setColor(hollow ? Color.WHITE : c);
        g.fill(s);
        g.setColor(c);
        g.draw(s);
    }

    private static void drawLegend(Graphics2D g, List<Key> keys, int x, int y, int width, int cols) {
        g.setColor(new Color(0xF7F7F7));
        g.fillRect(x, y, width, 24 + 24 * ((keys.size() + cols - 1) / cols));
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        int colW = width / cols;
        for (int i = 0; i < keys.size(); i++) {
            Key k = keys.get(i);
            int cx = x + 16 + (i % cols) * colW;
            int cy = y + 22 + (i / cols) * 24;
            g.setColor(k.color());
            g.setStroke(lineStroke(k.dashed()));
            g.draw(new Line2D.Double(cx, cy - 5, cx + 40, cy - 5));
            g.setStroke(new BasicStroke(1.5f));
            if (k.marker() != null) {
                drawMarker(g, k.marker(), cx + 20, cy - 5, k.color(), k.dashed());
            }
            g.setColor(Color.BLACK);
            g.drawString(k.label(), cx + 50, cy);
        }
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }

    /** "100 ns", "1 us", "10 ms", "1 s" for a decade given in microseconds. */
    static String formatTime(double us) {
        if (us < 1) return trim(us * 1000) + " ns";
        if (us < 1000) return trim(us) + " us";
        if (us < 1e6) return trim(us / 1000) + " ms";
        return trim(us / 1e6) + " s";
    }

    /** "0.01 GB/s", "10 GB/s", "100 MB/s" for a decade given in GB/s. */
    static String formatBandwidth(double gbs) {
        if (gbs < 0.001) return trim(gbs * 1e6) + " KB/s";
        if (gbs < 1) return trim(gbs * 1000) + " MB/s";
        return trim(gbs) + " GB/s";
    }

    private static String trim(double v) {
        return String.format(Locale.ROOT, "%.6g", v).replaceAll("\\.?0+$", "").replaceAll("\\.?0+e", "e");
    }
}
