// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry;

/**
 * A GPU stream that a {@link StreamCommunicator} enqueues its operations on: work queued on it runs
 * in order. {@code dev.ferry.cuda.CudaStream} is one ({@code Cuda.newStream()}, or
 * {@code Cuda.wrapStream} for a stream of the program's own, as a JCuda {@code CUstream}).
 */
public interface DeviceStream {
    /** The driver's handle of the stream ({@code CUstream}), as an address. */
    long streamHandle();

    /** The ordinal of the device whose work the stream runs. */
    int deviceOrdinal();
}
