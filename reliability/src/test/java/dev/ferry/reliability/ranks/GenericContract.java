// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.testing.CommunicatorContract;

/** The conformance suite on whichever backend {@code -Dferry.backend} names (for runs across hosts). */
public class GenericContract extends CommunicatorContract {
}
