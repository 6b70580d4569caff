// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.DataType;

/**
 * The per-rank blocks of one buffer of a vector collective ({@code scatterV}, {@code gatherV},
 * {@code allGatherV}, {@code allToAllV}, {@code reduceScatter}): block {@code i} is
 * {@link #count(int) count(i)} elements starting {@link #displacement(int) displacement(i)}
 * elements from the start of the buffer. Made by {@link CheckedCommunicator} from the caller's
 * arrays once they were checked (one entry per rank, nothing negative, no sum overflowing), and
 * copied, so that a caller changing its arrays during the call changes nothing.
 */
public final class Blocks {
    private final long[] counts;
    private final long[] displacements;
    private final long span;
    private final long total;

    private Blocks(long[] counts, long[] displacements) {
        this.counts = counts;
        this.displacements = displacements;
        long s = 0, t = 0;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] > 0) {
                s = Math.max(s, displacements[i] + counts[i]);
            }
            t += counts[i];
        }
        this.span = s;
        this.total = t;
    }

    /** Blocks of {@code counts} at {@code displacements} (both already checked; copied here). */
    public static Blocks of(long[] counts, long[] displacements) {
        return new Blocks(counts.clone(), displacements.clone());
    }

    /** Blocks of {@code counts} one after the other from element 0 (reduceScatter's send buffer); copied here. */
    public static Blocks contiguous(long[] counts) {
        long[] d = new long[counts.length];
        long at = 0;
        for (int i = 0; i < counts.length; i++) {
            d[i] = at;
            at = Math.addExact(at, counts[i]);
        }
        return new Blocks(counts.clone(), d);
    }

    /**
     * {@code count} elements of {@code type} cut into {@code n} equal slices of whole 16-byte groups
     * (so that every slice starts 16-byte aligned when the buffer does), the last ones shorter or
     * empty: the slices that one rank each reduces in the GPU reductions.
     */
    public static Blocks sliced(long count, DataType type, int n) {
        long unit = Math.max(1, 16 / type.size());
        long per = ((count + n - 1) / n + unit - 1) / unit * unit;
        long[] c = new long[n], d = new long[n];
        for (int r = 0; r < n; r++) {
            d[r] = Math.min(count, per * r);
            c[r] = Math.min(count, d[r] + per) - d[r];
        }
        return new Blocks(c, d);
    }

    /** Number of blocks (the communicator's size). */
    public int size() {
        return counts.length;
    }

    /** Elements of block {@code i}. */
    public long count(int i) {
        return counts[i];
    }

    /** Where block {@code i} starts, in elements from the start of the buffer. */
    public long displacement(int i) {
        return displacements[i];
    }

    /** A copy of the counts. */
    public long[] counts() {
        return counts.clone();
    }

    /** A copy of the displacements. */
    public long[] displacements() {
        return displacements.clone();
    }

    /** Elements from the start of the buffer to the end of the last non-empty block (0 when every block is empty). */
    public long span() {
        return span;
    }

    /** Sum of the counts. */
    public long total() {
        return total;
    }

    /** The largest count and displacement: the binding passes them as {@code int}s when this fits. */
    public long largest() {
        long m = 0;
        for (int i = 0; i < counts.length; i++) {
            m = Math.max(m, Math.max(counts[i], displacements[i]));
        }
        return m;
    }

    /** The counts as {@code int}s; only when {@link #largest()} fits. */
    public int[] intCounts() {
        return toInts(counts);
    }

    /** The displacements as {@code int}s, 0 for empty blocks (MPI ignores where they are); only when {@link #span()} fits. */
    public int[] intDisplacements() {
        int[] out = new int[displacements.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = counts[i] == 0 ? 0 : Math.toIntExact(displacements[i]);
        }
        return out;
    }

    private static int[] toInts(long[] a) {
        int[] out = new int[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = Math.toIntExact(a[i]);
        }
        return out;
    }

    /** Block {@code i} of {@code buffer}: the slice of its elements of {@code type}. */
    public dev.ferry.Buffer block(dev.ferry.Buffer buffer, int i, DataType type) {
        return buffer.slice(byteOffset(i, type), bytes(i, type));
    }

    /** Byte offset of block {@code i} for elements of {@code type}. */
    public long byteOffset(int i, DataType type) {
        return type.bytes(displacements[i]);
    }

    /** Bytes of block {@code i} for elements of {@code type}. */
    public long bytes(int i, DataType type) {
        return type.bytes(counts[i]);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < counts.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(counts[i]).append('@').append(displacements[i]);
        }
        return sb.append(']').toString();
    }
}
