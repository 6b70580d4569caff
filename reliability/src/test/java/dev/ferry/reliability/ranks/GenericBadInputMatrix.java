// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.testing.BadInputMatrix;

/** The bad-input matrix on whichever backend {@code -Dferry.backend} names (for the runs under Slurm's srun). */
public class GenericBadInputMatrix extends BadInputMatrix {
}
