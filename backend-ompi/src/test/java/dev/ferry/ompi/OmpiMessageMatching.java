// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.MessageMatchingContract;

/** MPI's matching semantics for messages over the piece limit, on backend ompi (either path). */
public class OmpiMessageMatching extends MessageMatchingContract {
}
