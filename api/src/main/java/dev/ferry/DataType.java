package dev.ferry;

/**
 * Element types that every backend carries and reduces, with Java's sizes. They map to MPI's
 * fixed-width types: BYTE to MPI_UINT8_T, INT to MPI_INT32_T, LONG to MPI_INT64_T, FLOAT and DOUBLE
 * to MPI_FLOAT and MPI_DOUBLE (as Open MPI's Java bindings do).
 */
public enum DataType {
    /** 8 bits. Reductions treat a byte as unsigned (0..255), as MPI_UINT8_T does: MAX of -1 and 1 is -1 (0xFF). */
    BYTE(1),
    /** 32-bit signed integer. */
    INT(4),
    /** 64-bit signed integer. */
    LONG(8),
    /** IEEE 754 binary32. */
    FLOAT(4),
    /** IEEE 754 binary64. */
    DOUBLE(8);

    private final int size;

    DataType(int size) {
        this.size = size;
    }

    /** Size of one element in bytes. */
    public int size() {
        return size;
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
