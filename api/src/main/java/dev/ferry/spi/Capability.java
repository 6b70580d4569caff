// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/** Things a backend can do, each a separate yes/no question answered by its {@link Probe}. */
public enum Capability {
    /** Host memory (pageable and pinned) in every operation. */
    HOST_BUFFERS,
    /** CUDA device memory in every operation, handed to MPI or staged by Ferry. */
    CUDA_DEVICE_BUFFERS,
    /** Device memory handed straight to a CUDA-aware MPI (no staging by Ferry). */
    CUDA_AWARE_MPI,
    /** Device-to-device copies between ranks of one node through CUDA IPC handles. */
    CUDA_IPC,
    /**
     * The MPI library says it takes CUDA device memory, whether or not this process can use CUDA:
     * the same answer on every rank of a job that loads one library (the selection decides from it
     * what must be alike on every rank).
     */
    CUDA_AWARE_LIBRARY
}
