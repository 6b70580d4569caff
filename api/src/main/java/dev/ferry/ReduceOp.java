// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * Reduction operators, as MPI defines them, each for the {@link DataType.Kind kinds} of type MPI
 * defines it for ({@link #appliesTo}); a reduction with any other pairing throws
 * {@link InvalidReduceOpException} before anything is sent.
 *
 * <ul>
 *   <li>SUM, PROD, MAX, MIN: integers and floating point. Integer arithmetic wraps (two's
 *       complement; BYTE unsigned); FLOAT16 and BFLOAT16 are computed in binary32 and rounded to
 *       the nearest 16-bit value, ties to even.</li>
 *   <li>LAND, LOR: integers; 1 when both (either) operands are non-zero, else 0.</li>
 *   <li>BAND, BOR, BXOR: integers; bit by bit.</li>
 *   <li>MINLOC, MAXLOC: pair types; the smaller (larger) value with its index, and of equal values
 *       the smaller index.</li>
 * </ul>
 */
public enum ReduceOp {
    SUM, MAX, MIN, PROD, LAND, LOR, BAND, BOR, BXOR, MINLOC, MAXLOC;

    /** True when MPI defines this operator for {@code type}. */
    public boolean appliesTo(DataType type) {
        return switch (this) {
            case SUM, MAX, MIN, PROD -> type.kind() != DataType.Kind.PAIR;
            case LAND, LOR, BAND, BOR, BXOR -> type.kind() == DataType.Kind.INTEGER;
            case MINLOC, MAXLOC -> type.kind() == DataType.Kind.PAIR;
        };
    }

    /** Throws {@link InvalidReduceOpException} unless {@link #appliesTo}{@code (type)}. */
    public void check(String operation, DataType type) {
        if (!appliesTo(type)) {
            String which = switch (this) {
                case SUM, MAX, MIN, PROD -> "integer and floating-point types";
                case LAND, LOR, BAND, BOR, BXOR -> "integer types (BYTE, SHORT, INT, LONG)";
                case MINLOC, MAXLOC -> "value/index pair types (SHORT_INT, INT_INT, LONG_INT, FLOAT_INT, DOUBLE_INT)";
            };
            throw new InvalidReduceOpException(operation + ": " + this + " is not defined for " + type + "; MPI defines it for " + which);
        }
    }
}
