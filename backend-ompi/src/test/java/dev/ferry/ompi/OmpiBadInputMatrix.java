// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on backend ompi (run by {@link OmpiConformanceIT#badInputMatrix()}). */
public class OmpiBadInputMatrix extends BadInputMatrix {
}
