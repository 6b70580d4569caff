// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.staged;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend staged. */
public class StagedVirtualThreads extends VirtualThreadsContract {
}
