// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;


import dev.ferry.spi.ProcessEnvironment;
import java.util.List;

/**
 * The process environment that native libraries read, prepared for life inside a JVM before the
 * MPI library is loaded.
 *
 * <p>UCX (MPICH's ch4:ucx device, MVAPICH-Plus, Open MPI's pml/ucx) installs handlers for SIGSEGV,
 * SIGBUS, SIGILL and SIGFPE when its {@code libucs} is loaded, to print a backtrace and abort. The
 * JVM uses those very signals in normal operation (implicit null checks, safepoint polls, integer
 * division), so a JVM with UCX's handlers dies at its first NullPointerException ("Caught signal 11
 * (Segmentation fault)" from libucs). Setting {@code UCX_ERROR_SIGNALS} to the empty list before
 * the library is loaded keeps the JVM's handlers; a value the user set is left alone.
 *
 * <p>MPICH's ch4 GPU IPC path caches, on the sender, which device allocations it has already
 * exported to a peer (keyed by base address and length), and trusts the cache until its hook on
 * {@code cuMemFree}/{@code cudaFree} says the allocation is gone. That hook works by symbol
 * interposition: libmpi defines {@code cuMemFree} itself. In a JVM, libmpi is loaded by FFM and
 * CUDA is called through JCuda's own native library, bound straight to libcuda, so the hook never
 * runs: a buffer freed and allocated again at the same address and length is announced to the
 * receiver as "handle still valid", and the receiver copies from its stale mapping of the freed
 * memory (wrong bytes, no error; seen on MPICH 4.0.2 with CUDA). {@code
 * MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0} makes MPICH export and map afresh for every message; again
 * a value the user set is left alone. Libraries that do not know the variable ignore it.
 */
public final class NativeEnvironment {
    /** MPICH ch4's switch for its sender-side cache of exported GPU IPC handles. */
    static final String IPC_HANDLE_CACHE = "MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE";

    private NativeEnvironment() {
    }

    /**
     * Sets what the JVM needs, unless the user set it; called before the MPI library is loaded (a
     * CUDA-aware one starts the CUDA driver in MPI_Init: {@link ProcessEnvironment#prepareForCuda}).
     */
    public static void prepareForJvm() {
        ProcessEnvironment.setIfUnset("UCX_ERROR_SIGNALS", "", "keeps the JVM's SIGSEGV/SIGBUS handlers");
        ProcessEnvironment.setIfUnset(IPC_HANDLE_CACHE, "0", "MPICH's GPU IPC handle cache misses frees made through JCuda and then"
                + " delivers stale device data");
        ProcessEnvironment.prepareForCuda();
    }

    /** The variables Ferry set in this process, for the report ({@link ProcessEnvironment#changes}). */
    public static List<String> changes() {
        return ProcessEnvironment.changes();
    }
}
