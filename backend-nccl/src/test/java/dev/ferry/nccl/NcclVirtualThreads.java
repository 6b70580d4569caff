// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers on backend nccl's stack over the inner backend's world, for machines without a GPU. */
public class NcclVirtualThreads extends VirtualThreadsContract {
    @Override
    protected Communicator newCommunicator() {
        return NcclOverMpiRanks.open();
    }
}
