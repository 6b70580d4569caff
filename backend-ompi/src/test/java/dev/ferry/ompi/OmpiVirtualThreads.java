// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.ompi;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend ompi. */
public class OmpiVirtualThreads extends VirtualThreadsContract {
}
