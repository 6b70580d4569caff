// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reductions on host memory, element by element, with the semantics {@link DataType} and
 * {@link ReduceOp} document: {@code acc[i] = acc[i] op in[i]}. Used where Ferry reduces itself (the
 * types MPI lacks) and as the reference that device reductions must match exactly.
 */
public final class HostReduction {
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble D = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private HostReduction() {
    }

    /** {@code acc = acc op in} over {@code count} elements of {@code type}; {@code op} must apply to {@code type}. */
    public static void apply(DataType type, ReduceOp op, MemorySegment acc, MemorySegment in, long count) {
        op.check("reduction", type);
        long size = type.size();
        for (long i = 0; i < count; i++) {
            long at = i * size;
            switch (type) {
                case BYTE -> acc.set(ValueLayout.JAVA_BYTE, at, (byte) integer(op, acc.get(ValueLayout.JAVA_BYTE, at) & 0xFF, in.get(ValueLayout.JAVA_BYTE, at) & 0xFF));
                case SHORT -> acc.set(S, at, (short) integer(op, acc.get(S, at), in.get(S, at)));
                case INT -> acc.set(I, at, (int) integer(op, acc.get(I, at), in.get(I, at)));
                case LONG -> acc.set(L, at, integer(op, acc.get(L, at), in.get(L, at)));
                case FLOAT -> acc.set(F, at, (float) floating(op, acc.get(F, at), in.get(F, at)));
                case DOUBLE -> acc.set(D, at, floating(op, acc.get(D, at), in.get(D, at)));
                case FLOAT16 -> acc.set(S, at, Float.floatToFloat16(binary32(op, Float.float16ToFloat(acc.get(S, at)), Float.float16ToFloat(in.get(S, at)))));
                case BFLOAT16 -> acc.set(S, at, toBfloat16(binary32(op, fromBfloat16(acc.get(S, at)), fromBfloat16(in.get(S, at)))));
                default -> pair(type, op, acc, in, at);
            }
        }
    }

    private static long integer(ReduceOp op, long a, long b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MAX -> Math.max(a, b);
            case MIN -> Math.min(a, b);
            case LAND -> (a != 0 && b != 0) ? 1 : 0;
            case LOR -> (a != 0 || b != 0) ? 1 : 0;
            case BAND -> a & b;
            case BOR -> a | b;
            case BXOR -> a ^ b;
            default -> throw new IllegalArgumentException(op + " on an integer");
        };
    }

    private static double floating(ReduceOp op, double a, double b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MAX -> a >= b || Double.isNaN(a) ? a : b;
            case MIN -> a <= b || Double.isNaN(a) ? a : b;
            default -> throw new IllegalArgumentException(op + " on a floating-point type");
        };
    }

    /** One step in binary32, as the 16-bit types are computed (then rounded to nearest even by the caller). */
    private static float binary32(ReduceOp op, float a, float b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MAX -> a >= b || Float.isNaN(a) ? a : b;
            case MIN -> a <= b || Float.isNaN(a) ? a : b;
            default -> throw new IllegalArgumentException(op + " on a floating-point type");
        };
    }

    /** The binary32 value of a bfloat16. */
    public static float fromBfloat16(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** A binary32 value rounded to the nearest bfloat16, ties to even; NaN stays NaN. */
    public static short toBfloat16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    private static void pair(DataType type, ReduceOp op, MemorySegment acc, MemorySegment in, long at) {
        long ix = at + type.indexOffset();
        int ai = acc.get(I, ix), bi = in.get(I, ix);
        int c; // compare values: <0 when acc's is smaller
        switch (type.valueType()) {
            case SHORT -> c = Short.compare(acc.get(S, at), in.get(S, at));
            case INT -> c = Integer.compare(acc.get(I, at), in.get(I, at));
            case LONG -> c = Long.compare(acc.get(L, at), in.get(L, at));
            case FLOAT -> c = Float.compare(acc.get(F, at), in.get(F, at));
            case DOUBLE -> c = Double.compare(acc.get(D, at), in.get(D, at));
            default -> throw new IllegalArgumentException(type + " is not a pair type");
        }
        boolean takeIn = op == ReduceOp.MINLOC ? c > 0 : c < 0;
        if (c == 0) {
            acc.set(I, ix, Math.min(ai, bi));
        } else if (takeIn) {
            MemorySegment.copy(in, at, acc, at, type.size());
        }
    }
}
