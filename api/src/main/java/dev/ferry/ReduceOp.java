package dev.ferry;

/** Reduction operators, defined for every {@link DataType}. */
public enum ReduceOp {
    SUM,
    MAX,
    MIN,
    PROD
}
