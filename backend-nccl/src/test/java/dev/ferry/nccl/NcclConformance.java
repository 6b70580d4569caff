// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.testing.CommunicatorContract;

/**
 * The conformance suite on backend nccl's stack over the inner backend's world, for machines
 * without a GPU (NCCL stays off: the planner's other algorithms run). {@link NcclOverMpiIT} runs
 * the tests of the non-blocking collectives' start with it.
 */
public class NcclConformance extends CommunicatorContract {
    @Override
    protected Communicator newCommunicator() {
        return NcclOverMpiRanks.open();
    }
}
