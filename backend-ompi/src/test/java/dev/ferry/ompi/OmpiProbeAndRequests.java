// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.testing.ProbeAndRequestsContract;

/** Probes, matched messages, waitAny/testAny/testAll and cancel on backend ompi (either path). */
public class OmpiProbeAndRequests extends ProbeAndRequestsContract {
}
