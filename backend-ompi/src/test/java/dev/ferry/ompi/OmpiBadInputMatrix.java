package dev.ferry.ompi;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on backend ompi (run by {@link OmpiConformanceIT#badInputMatrix()}). */
public class OmpiBadInputMatrix extends BadInputMatrix {
}
