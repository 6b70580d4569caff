package dev.ferry.staged;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on backend staged (run by {@link StagedConformanceIT#badInputMatrix()}). */
public class StagedBadInputMatrix extends BadInputMatrix {
}
