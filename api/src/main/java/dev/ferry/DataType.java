// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * Element types that every backend carries and reduces, with their sizes in bytes.
 *
 * <p>Integers map to MPI's fixed-width types (BYTE to MPI_UINT8_T, SHORT to MPI_INT16_T, INT to
 * MPI_INT32_T, LONG to MPI_INT64_T); FLOAT and DOUBLE to MPI_FLOAT and MPI_DOUBLE. FLOAT16
 * (IEEE 754 binary16) and BFLOAT16 (the upper half of a binary32) have no MPI type: Ferry carries
 * them as 2-byte elements and reduces them itself, on the host or on the GPU, with the same
 * results: every SUM or PROD step computes in binary32 and rounds to the nearest 16-bit value
 * (ties to even), which is the correctly rounded 16-bit result.
 *
 * <p>The pair types hold a value and an {@code int} index laid out as MPI's C structs
 * (MPI_SHORT_INT, MPI_2INT, MPI_LONG_INT, MPI_FLOAT_INT, MPI_DOUBLE_INT): the value at offset 0,
 * the index at {@link #indexOffset()}, padded to the alignment of the larger member. They are
 * what {@link ReduceOp#MINLOC} and {@link ReduceOp#MAXLOC} reduce, and they are carried like any
 * other type.
 */
public enum DataType {
    /** 8 bits. Reductions treat a byte as unsigned (0..255), as MPI_UINT8_T does: MAX of -1 and 1 is -1 (0xFF). */
    BYTE(1, Kind.INTEGER, null, 0),
    /** 32-bit signed integer. */
    INT(4, Kind.INTEGER, null, 0),
    /** 64-bit signed integer. */
    LONG(8, Kind.INTEGER, null, 0),
    /** IEEE 754 binary32. */
    FLOAT(4, Kind.FLOATING, null, 0),
    /** IEEE 754 binary64. */
    DOUBLE(8, Kind.FLOATING, null, 0),
    /** 16-bit signed integer. */
    SHORT(2, Kind.INTEGER, null, 0),
    /** IEEE 754 binary16 (half precision), as {@link Float#float16ToFloat} reads it. */
    FLOAT16(2, Kind.FLOATING, null, 0),
    /** bfloat16: the sign, exponent and upper 7 fraction bits of a binary32. */
    BFLOAT16(2, Kind.FLOATING, null, 0),
    /** A 16-bit value and an {@code int} index (MPI_SHORT_INT): value at 0, index at 4; 8 bytes. */
    SHORT_INT(8, Kind.PAIR, SHORT, 4),
    /** Two {@code int}s, value and index (MPI_2INT); 8 bytes. */
    INT_INT(8, Kind.PAIR, INT, 4),
    /** A 64-bit value and an {@code int} index (MPI_LONG_INT): index at 8; 16 bytes. */
    LONG_INT(16, Kind.PAIR, LONG, 8),
    /** A binary32 value and an {@code int} index (MPI_FLOAT_INT); 8 bytes. */
    FLOAT_INT(8, Kind.PAIR, FLOAT, 4),
    /** A binary64 value and an {@code int} index (MPI_DOUBLE_INT): index at 8; 16 bytes. */
    DOUBLE_INT(16, Kind.PAIR, DOUBLE, 8);

    /** What arithmetic a type has, which decides the operators that apply to it. */
    public enum Kind {
        /** Two's complement integers (BYTE unsigned): arithmetic, comparison, logical and bitwise operators. */
        INTEGER,
        /** Floating point: arithmetic and comparison operators. */
        FLOATING,
        /** Value and index: MINLOC and MAXLOC only. */
        PAIR
    }

    private final int size;
    private final Kind kind;
    private final DataType valueType;
    private final int indexOffset;

    DataType(int size, Kind kind, DataType valueType, int indexOffset) {
        this.size = size;
        this.kind = kind;
        this.valueType = valueType;
        this.indexOffset = indexOffset;
    }

    /** Size of one element in bytes. */
    public int size() {
        return size;
    }

    /** Integer, floating point, or value/index pair. */
    public Kind kind() {
        return kind;
    }

    /** For a pair type, the type of its value; null otherwise. */
    public DataType valueType() {
        return valueType;
    }

    /** For a pair type, where its {@code int} index starts; 0 otherwise. */
    public int indexOffset() {
        return indexOffset;
    }

    /** {@code count * size()}, or an exception when that does not fit in a long. */
    public long bytes(long count) {
        try {
            return Math.multiplyExact(count, (long) size);
        } catch (ArithmeticException e) {
            throw new InvalidCountException("count " + count + " of " + this + " overflows a byte size");
        }
    }
}
