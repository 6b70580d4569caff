// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Backend {@code staged}: device buffers through pinned host memory over an inner MPI backend,
 * and CUDA IPC within a node. It has no API: found as a {@link dev.ferry.spi.TransportProvider}
 * and chosen by name or probing.
 */
module dev.ferry.staged {
    requires dev.ferry.api;
    requires dev.ferry.collectives;
    requires dev.ferry.cuda;

    provides dev.ferry.spi.TransportProvider with dev.ferry.staged.StagedProvider;
    provides dev.ferry.spi.SettingsCatalog with dev.ferry.staged.StagedSettings.Catalog;
}
