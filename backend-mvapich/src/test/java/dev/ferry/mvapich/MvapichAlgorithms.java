// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.CollectiveAlgorithmsContract;

/** Every collective algorithm of the planner on backend mvapich (run by {@link MvapichConformanceIT#algorithms()}). */
public class MvapichAlgorithms extends CollectiveAlgorithmsContract {
}
