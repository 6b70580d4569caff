// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.testing.ProbeAndRequestsContract;

/** Probes and requests on backend nccl's stack over the inner backend's world, for machines without a GPU; {@link NcclOverMpiIT} runs the futures of requests with it. */
public class NcclProbeAndRequests extends ProbeAndRequestsContract {
    @Override
    protected Communicator newCommunicator() {
        return NcclOverMpiRanks.open();
    }
}
