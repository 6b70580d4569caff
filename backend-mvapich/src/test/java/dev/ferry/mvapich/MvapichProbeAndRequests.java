// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.ProbeAndRequestsContract;

/** Probes, matched messages, waitAny/testAny/testAll and cancel on backend mvapich. */
public class MvapichProbeAndRequests extends ProbeAndRequestsContract {
}
