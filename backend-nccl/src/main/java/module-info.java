// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * NVIDIA NCCL for Ferry: the {@code nccl} algorithm, offered to every communicator's planner, and
 * backend {@code nccl} (an inner MPI backend whose planner prefers it); {@link dev.ferry.nccl.Nccl}
 * tells whether NCCL loaded and which.
 */
@SuppressWarnings("requires-automatic") // JCuda has no module descriptor
module dev.ferry.nccl {
    requires transitive dev.ferry.api;
    requires transitive dev.ferry.collectives;
    requires transitive dev.ferry.cuda; // NcclCollectives.device() is a CudaDevice
    requires jcuda;

    exports dev.ferry.nccl;

    provides dev.ferry.spi.TransportProvider with dev.ferry.nccl.NcclProvider;
    provides dev.ferry.collectives.AlgorithmProvider with dev.ferry.nccl.NcclAlgorithms;
    provides dev.ferry.spi.SettingsCatalog with dev.ferry.nccl.NcclSettings;
}
