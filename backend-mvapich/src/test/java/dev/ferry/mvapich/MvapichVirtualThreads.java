// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.mvapich;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend mvapich. */
public class MvapichVirtualThreads extends VirtualThreadsContract {
}
