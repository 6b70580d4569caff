// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on backend mvapich (run by {@link MvapichConformanceIT#badInputMatrix()}). */
public class MvapichBadInputMatrix extends BadInputMatrix {
}
