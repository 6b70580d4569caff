// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import java.util.List;

/**
 * The algorithms of this module: the backend's own collectives, point-to-point messages, the host
 * fold, the GPU folds through the backend's collectives or through pinned host memory, the chain and
 * the node-by-node reductions, and the collectives over CUDA IPC within a node.
 */
public final class CoreAlgorithms implements AlgorithmProvider {
    /** For {@link java.util.ServiceLoader}. */
    public CoreAlgorithms() {
    }

    @Override
    public List<Algorithm> algorithms(Group group) {
        GpuFolds folds = new GpuFolds(group);
        ChainReductions chain = new ChainReductions(group);
        List<Algorithm> all = new java.util.ArrayList<>(List.of(new Native(group), new PointToPoint(group), new HostFold(group), folds.gathered(),
                folds.byBlocks(), new HostGathered(group), chain, new HierarchicalReductions(group, chain)));
        all.addAll(IpcAlgorithms.of(group, dev.ferry.Settings.process()));
        return all;
    }
}
