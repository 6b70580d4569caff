// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The report's plot: one panel per question, colours and markers per series, physical limits.
 * Kept apart from {@link Report} so that the report's table can be written by a Java runtime
 * without the {@code java.desktop} module (a jlinked one): only this class and {@link Plot} need it.
 */
final class Charts {
    /** Pinned host memory over PCIe, as measured on the H200 machine (cuMemcpy H2D/D2H). */
    static final double PCIE_PINNED_GBS = 54;
    /** NVLink between two H200s, per direction (rated). */
    static final double NVLINK_H200_GBS = 450;

    private static final Color[] PALETTE = {
        new Color(0x1F77B4), new Color(0xD62728), new Color(0x2CA02C), new Color(0xFF7F0E), new Color(0x9467BD),
        new Color(0x17BECF), new Color(0x8C564B), new Color(0xE377C2), new Color(0xBCBD22), new Color(0x7F7F7F),
    };
    private static final Map<Memory, Color> NATIVE_COLORS = Map.of(
            Memory.PAGEABLE, new Color(0x222222), Memory.PINNED, new Color(0x6E6E6E), Memory.DEVICE, new Color(0x000000));
    private static final Map<Memory, Plot.Marker> MARKERS = Map.of(
            Memory.PAGEABLE, Plot.Marker.CIRCLE, Memory.PINNED, Plot.Marker.SQUARE, Memory.DEVICE, Plot.Marker.TRIANGLE);

    /** The device-to-device copy reference's line. */
    private static final Color COPY_COLOR = new Color(0x2E8B57);

    private Charts() {
    }

    private static String copyLabel(String tag, boolean withTag) {
        return "one device-to-device copy (" + DeviceCopy.BACKEND + ")" + (withTag ? " [" + tag + "]" : "");
    }

    /**
     * Draws {@code data} into {@code png}: series in {@code order}, named by {@code series}, with the
     * GPU limits when {@code gpuLimits}, under {@code subtitle}.
     */
    static void draw(Path png, List<Measurement> data, List<String> order, Function<Measurement, String> series, boolean gpuLimits,
                     List<String> subtitle, Map<String, Map<Long, Stats>> copies, boolean withTag) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Map<String, Color> colors = new LinkedHashMap<>();
        Map<String, Measurement> firstOf = new LinkedHashMap<>();
        int next = 0;
        for (String s : order) {
            Measurement any = data.stream().filter(m -> series.apply(m).equals(s)).findFirst().orElseThrow();
            firstOf.put(s, any);
            colors.put(s, any.isNative() ? NATIVE_COLORS.get(any.memory()) : PALETTE[next++ % PALETTE.length]);
        }
        List<Plot.Panel> panels = new ArrayList<>();
        java.util.Set<String> copyTags = new java.util.TreeSet<>();
        for (Question q : Question.values()) {
            List<Measurement> ms = data.stream().filter(m -> m.question() == q).toList();
            List<Plot.Line> lines = new ArrayList<>();
            for (String s : order) {
                List<Measurement> pts = ms.stream().filter(m -> series.apply(m).equals(s))
                        .sorted(Comparator.comparingLong(Measurement::size)).toList();
                if (pts.isEmpty()) {
                    continue;
                }
                List<Plot.Point> points = pts.stream().map(m -> {
                    Stats st = m.shown();
                    return new Plot.Point(m.size(), st.median(), st.min(), st.max());
                }).toList();
                Measurement first = pts.get(0);
                lines.add(new Plot.Line(s, colors.get(s), first.isNative(), MARKERS.get(first.memory()), points));
            }
            if (q.isCollective()) {
                // the device-to-device copy of each run whose device collectives are in this panel
                ms.stream().filter(m -> m.memory() == Memory.DEVICE && copies.containsKey(m.tag())).map(Measurement::tag).distinct()
                        .forEach(tag -> {
                            List<Plot.Point> points = copies.get(tag).entrySet().stream()
                                    .map(e -> new Plot.Point(e.getKey(), e.getValue().median(), e.getValue().min(), e.getValue().max())).toList();
                            lines.add(new Plot.Line(copyLabel(tag, withTag), COPY_COLOR, true, Plot.Marker.DIAMOND, points));
                            copyTags.add(tag);
                        });
            }
            List<Plot.Limit> limits = new ArrayList<>();
            if (q.isBandwidth() && gpuLimits && !ms.isEmpty()) {
                limits.add(new Plot.Limit("pinned host <-> GPU over PCIe, ~" + (int) PCIE_PINNED_GBS + " GB/s per direction",
                        PCIE_PINNED_GBS, new Color(0xB22222)));
                limits.add(new Plot.Limit("NVLink H200 <-> H200, ~" + (int) NVLINK_H200_GBS + " GB/s per direction",
                        NVLINK_H200_GBS, new Color(0x1E5AA8)));
            }
            String y = q.isBandwidth() ? "bandwidth (GB/s, log scale)"
                    : q.isCollective() ? "time per call, slowest rank (log scale)" : "one-way latency (log scale)";
            panels.add(new Plot.Panel(Report.title(q), y, q.isBandwidth(), lines, limits));
        }
        List<Plot.Key> keys = new ArrayList<>();
        for (String s : order) {
            Measurement any = firstOf.get(s);
            keys.add(new Plot.Key(any.isNative() ? s + " (native C)" : s, colors.get(s), any.isNative(), MARKERS.get(any.memory())));
        }
        for (String tag : copyTags) {
            keys.add(new Plot.Key(copyLabel(tag, withTag), COPY_COLOR, true, Plot.Marker.DIAMOND));
        }
        Plot.write(png, "Ferry benchmarks", subtitle, panels, keys, 3);
    }
}
