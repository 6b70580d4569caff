// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.util.Arrays;

/**
 * Median and spread of a run's measured batches, computed the same way here and in the native C
 * reference: sorted values, quantile {@code q} by linear interpolation between the two nearest
 * order statistics (position {@code q * (n - 1)}), so the median of an even count is the mean of
 * the middle two.
 *
 * @param n      number of values
 * @param median 0.5 quantile
 * @param min    smallest value
 * @param max    largest value
 * @param p10    0.1 quantile
 * @param p90    0.9 quantile
 */
public record Stats(int n, double median, double min, double max, double p10, double p90) {

    /** Statistics of {@code values} (not modified); all NaN when empty. */
    public static Stats of(double[] values) {
        double[] v = Arrays.stream(values).filter(d -> !Double.isNaN(d)).sorted().toArray();
        if (v.length == 0) {
            return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
        }
        return new Stats(v.length, quantile(v, 0.5), v[0], v[v.length - 1], quantile(v, 0.1), quantile(v, 0.9));
    }

    /** Quantile {@code q} of sorted values. */
    static double quantile(double[] sorted, double q) {
        double pos = q * (sorted.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(lo + 1, sorted.length - 1);
        return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
    }

    /** The same statistics of {@code f(x)} for a decreasing {@code f} (a time turned into a bandwidth): min and max swap. */
    public Stats mapDecreasing(java.util.function.DoubleUnaryOperator f) {
        return new Stats(n, f.applyAsDouble(median), f.applyAsDouble(max), f.applyAsDouble(min), f.applyAsDouble(p90), f.applyAsDouble(p10));
    }
}
