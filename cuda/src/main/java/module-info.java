// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * CUDA for Ferry through JCuda: devices, memory, streams, events, IPC and the reduction kernels
 * ({@code dev.ferry.cuda}), and the API's GPU runtime ({@link dev.ferry.spi.DeviceSupport}).
 *
 * <p>JCuda's native libraries come from {@code jcuda-natives} (automatic module
 * {@code jcuda.natives}, which nothing requires by name): on the module path, resolve it with
 * {@code --add-modules ALL-MODULE-PATH}.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // JCuda has no module descriptor
module dev.ferry.cuda {
    requires transitive dev.ferry.api;
    requires transitive jcuda; // JCuda's pointers and streams cross the API (wrap, unwrap)

    exports dev.ferry.cuda;

    provides dev.ferry.spi.DeviceSupport with dev.ferry.cuda.CudaDeviceSupport;
}
