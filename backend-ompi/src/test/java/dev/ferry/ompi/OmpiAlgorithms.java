// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.CollectiveAlgorithmsContract;

/** Every collective algorithm of the planner on backend ompi (run by {@link OmpiConformanceIT#algorithms()}). */
public class OmpiAlgorithms extends CollectiveAlgorithmsContract {
}
