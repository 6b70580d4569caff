// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.testing.CollectiveAlgorithmsContract;

/** Every collective algorithm of the planner on backend staged (run by {@link StagedConformanceIT#algorithms()}). */
public class StagedAlgorithms extends CollectiveAlgorithmsContract {
}
