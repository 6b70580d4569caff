package dev.ferry.staged;

import dev.ferry.testing.CollectiveAlgorithmsContract;

/** Every collective algorithm of the planner on backend staged (run by {@link StagedConformanceIT#algorithms()}). */
public class StagedAlgorithms extends CollectiveAlgorithmsContract {
}
