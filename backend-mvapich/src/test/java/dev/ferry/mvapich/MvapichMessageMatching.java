// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.MessageMatchingContract;

/** MPI's matching semantics for messages over the piece limit, on backend mvapich. */
public class MvapichMessageMatching extends MessageMatchingContract {
}
