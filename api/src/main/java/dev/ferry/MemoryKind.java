// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** Where a buffer's bytes live, as far as a transport needs to know. */
public enum MemoryKind {
    /** Ordinary host memory; the OS may page it, so DMA engines cannot use it directly. */
    HOST_PAGEABLE,
    /** Page-locked host memory registered with the CUDA driver (cuMemAllocHost): DMA-able. */
    HOST_PINNED,
    /** Memory of one GPU (cuMemAlloc); not dereferenceable by the CPU. */
    DEVICE,
    /** CUDA managed (unified) memory; migrates between host and device. */
    MANAGED;

    /** True for memory the CPU can read and write. */
    public boolean isHostAccessible() {
        return this != DEVICE;
    }

    /** True for memory that only a CUDA-aware path (or staging) can move. */
    public boolean needsCuda() {
        return this == DEVICE || this == MANAGED;
    }
}
