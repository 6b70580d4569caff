// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on backend staged (run by {@link StagedConformanceIT#badInputMatrix()}). */
public class StagedBadInputMatrix extends BadInputMatrix {
}
