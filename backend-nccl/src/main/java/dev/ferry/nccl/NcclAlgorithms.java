// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.collectives.Algorithm;
import dev.ferry.collectives.AlgorithmProvider;
import dev.ferry.collectives.Group;
import java.util.List;

/** Offers NCCL ({@link NcclCollectives}) to the collectives planner of every communicator, whatever its backend. */
public final class NcclAlgorithms implements AlgorithmProvider {
    /** For {@link java.util.ServiceLoader}. */
    public NcclAlgorithms() {
    }

    @Override
    public List<Algorithm> algorithms(Group group) {
        return List.of(new NcclCollectives(group));
    }
}
