// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Deterministic test data: random bytes any rank can regenerate, and typed values with known reductions. */
public final class Data {
    private Data() {
    }

    /** {@code n} random bytes determined by {@code seed} and {@code rank}. */
    public static byte[] bytes(long seed, int rank, int n) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(seed * 1_000_003L + rank);
        for (int i = 0; i < n; i++) b[i] = (byte) r.nextInt(256);
        return b;
    }

    /** The types and operators every backend reduces through its MPI (the rest: see the operation tests). */
    public static final DataType[] CLASSIC_TYPES = {DataType.BYTE, DataType.INT, DataType.LONG, DataType.FLOAT, DataType.DOUBLE};
    public static final ReduceOp[] CLASSIC_OPS = {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD};

    /** Element {@code i} of rank {@code rank}'s input to a reduction with {@code op}: small, so that results are exact. */
    public static long value(DataType t, ReduceOp op, int rank, long i) {
        long base = op == ReduceOp.PROD ? 1 + ((rank + i) % 2) : ((rank * 7919L + i * 104729L) % 97) - (t == DataType.BYTE ? 0 : 40);
        return t == DataType.LONG && op != ReduceOp.PROD ? base + (1L << 40) * (rank % 3) : base;
    }

    /** The reduction of {@link #value} over {@code size} ranks, with the type's own arithmetic. */
    public static double expected(DataType t, ReduceOp op, int size, long i) {
        long acc = value(t, op, 0, i);
        if (t == DataType.BYTE) acc &= 0xFF;
        for (int r = 1; r < size; r++) {
            long v = value(t, op, r, i);
            if (t == DataType.BYTE) v &= 0xFF;
            acc = switch (op) {
                case SUM -> acc + v;
                case PROD -> acc * v;
                case MAX -> Math.max(acc, v);
                case MIN -> Math.min(acc, v);
                case LAND -> (acc != 0 && v != 0) ? 1 : 0;
                case LOR -> (acc != 0 || v != 0) ? 1 : 0;
                case BAND -> acc & v;
                case BOR -> acc | v;
                case BXOR -> acc ^ v;
                case MINLOC, MAXLOC -> throw new IllegalArgumentException(op + " reduces pairs, not " + t);
            };
            if (t == DataType.BYTE) acc &= 0xFF;
            if (t == DataType.INT) acc = (int) acc;
        }
        return acc;
    }

    /** Writes {@code v} as element {@code i} of type {@code t}. */
    public static void put(MemorySegment s, DataType t, long i, double v) {
        switch (t) {
            case BYTE -> s.set(ValueLayout.JAVA_BYTE, i, (byte) (long) v);
            case INT -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (long) v);
            case LONG -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, (long) v);
            case FLOAT -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) v);
            case DOUBLE -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, v);
            case SHORT -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (long) v);
            case FLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16((float) v));
            case BFLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (Float.floatToRawIntBits((float) v) >>> 16));
            default -> throw new IllegalArgumentException("a pair type holds two values: " + t);
        }
    }

    /** Element {@code i} of type {@code t}; bytes read as unsigned. */
    public static double get(MemorySegment s, DataType t, long i) {
        return switch (t) {
            case BYTE -> s.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            case INT -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            case LONG -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
            case FLOAT -> s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
            case DOUBLE -> s.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
            case SHORT -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
            case FLOAT16 -> Float.float16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
            case BFLOAT16 -> Float.intBitsToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) << 16);
            default -> throw new IllegalArgumentException("a pair type holds two values: " + t);
        };
    }

    /** A host buffer holding {@code count} elements of {@link #value} for {@code rank}. */
    public static HostBuffer reductionInput(DataType t, ReduceOp op, int rank, long count) {
        HostBuffer h = HostBuffer.allocate(t.bytes(count));
        for (long i = 0; i < count; i++) put(h.segment(), t, i, value(t, op, rank, i));
        return h;
    }

    /** The value of rank {@code rank}'s pair {@code i} in the MINLOC/MAXLOC tests: small, with ties between ranks. */
    public static long pairValue(int rank, int i) {
        return ((rank * 7L + i * 3L) % 5) - 2;
    }

    /** Writes a value/index pair of type {@code t} at element {@code i}. */
    public static void putPair(MemorySegment s, DataType t, long i, long value, int index) {
        long at = i * t.size();
        switch (t.valueType()) {
            case SHORT -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, (short) value);
            case INT -> s.set(ValueLayout.JAVA_INT_UNALIGNED, at, (int) value);
            case LONG -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, value);
            case FLOAT -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, value);
            case DOUBLE -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, value);
            default -> throw new IllegalArgumentException(t + " is not a pair type");
        }
        s.set(ValueLayout.JAVA_INT_UNALIGNED, at + t.indexOffset(), index);
    }

    /** The value of pair {@code i}. */
    public static long pairValueAt(MemorySegment s, DataType t, long i) {
        long at = i * t.size();
        return switch (t.valueType()) {
            case SHORT -> s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at);
            case INT -> s.get(ValueLayout.JAVA_INT_UNALIGNED, at);
            case LONG -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            case FLOAT -> (long) s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at);
            case DOUBLE -> (long) s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at);
            default -> throw new IllegalArgumentException(t + " is not a pair type");
        };
    }

    /** The index of pair {@code i}. */
    public static int pairIndexAt(MemorySegment s, DataType t, long i) {
        return s.get(ValueLayout.JAVA_INT_UNALIGNED, i * t.size() + t.indexOffset());
    }

    /**
     * {@code count} elements of {@code t} for rank {@code rank}'s input to a reduction with {@code op},
     * random but regenerable by every rank, and such that every backend's result is exact whatever
     * order it reduces in: integers are random bits (wrapping arithmetic and bitwise operators do not
     * depend on the order), floating-point values are small integers (PROD: 1 or 2), pairs carry
     * small values with ties and distinct indices. Pair padding bytes are zero.
     */
    public static byte[] orderFreeInput(DataType t, ReduceOp op, int rank, long count) {
        byte[] out = new byte[Math.toIntExact(t.bytes(count))];
        MemorySegment s = MemorySegment.ofArray(out);
        SplittableRandom r = new SplittableRandom(((t.ordinal() * 31L + op.ordinal()) * 1_000_003L + count) * 257 + rank);
        for (long i = 0; i < count; i++) {
            int pick = r.nextInt(8);
            switch (t) {
                case BYTE -> s.set(ValueLayout.JAVA_BYTE, i, (byte) (pick == 0 ? 0 : r.nextInt(256)));
                case SHORT -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (pick == 0 ? 0 : pick < 3 ? r.nextInt(-2, 3) : r.nextInt()));
                case INT -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, pick == 0 ? 0 : pick < 3 ? r.nextInt(-2, 3) : r.nextInt());
                case LONG -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, pick == 0 ? 0 : pick < 3 ? r.nextInt(-2, 3) : r.nextLong());
                case FLOAT, DOUBLE, FLOAT16, BFLOAT16 -> put(s, t, i, op == ReduceOp.PROD ? r.nextInt(1, 3) * (pick == 0 ? -1 : 1) : r.nextInt(-40, 41));
                default -> putPair(s, t, i, r.nextInt(-2, 3), rank * 1_000_000 + (int) i);
            }
        }
        return out;
    }
}
