// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Settings;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.BindingTransport.Region;
import java.lang.foreign.MemorySegment;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reductions on device buffers done on host copies, for libraries whose own GPU reductions fail;
 * and gathers and scatters, for libraries whose trees cannot forward device memory
 * ({@link #decideTrees}).
 *
 * <p>MPICH up to 4.0.x creates its yaksa CUDA streams at MPI_Init; with device buffers, MPI_Reduce
 * and MPI_Allreduce then fail inside yaksa's pack kernels ("CUDA Error ... invalid resource
 * handle") and the ranks hang (seen with MPICH 4.0.2 built with CUDA on two H200s; fixed upstream
 * by delaying stream creation, pmodels/mpich#5810). Point-to-point and the other collectives on
 * device buffers work there. So for those versions the reduction inputs are copied to host memory,
 * reduced by MPI on the host, and the result copied back: correct, at PCIe cost.
 *
 * <p>{@code -Dferry.mvapich.stageDeviceReductions=auto|true|false} (default auto: on for MPICH
 * versions before 4.1).
 */
final class DeviceReductionStaging {
    private static final Pattern MPICH_VERSION = Pattern.compile("^(\\d+)\\.(\\d+)");

    private DeviceReductionStaging() {
    }

    /** Whether this library's device reductions go through host copies, and why (for the probe). */
    static String decide(Settings settings, LibraryVersion version, boolean cudaAware) {
        String setting = settings.get(MvapichSettings.STAGE_DEVICE_REDUCTIONS);
        if (!cudaAware || setting.equals("false")) {
            return null;
        }
        if (setting.equals("true")) {
            return "device reductions through host copies (-Dferry.mvapich.stageDeviceReductions=true)";
        }
        if (version.flavor() == LibraryVersion.Flavor.MPICH && isBefore41(version.name())) {
            return "device reductions through host copies: " + version.name()
                    + "'s GPU reductions fail in yaksa (pmodels/mpich#5810); -Dferry.mvapich.stageDeviceReductions=false to use them";
        }
        return null;
    }

    /**
     * Whether this library's gathers and scatters of device buffers go through host copies, and why:
     * MPICH 4.0.2 built with CUDA ends the process with SIGSEGV in libc inside {@code MPI_Gather} of
     * device buffers at 4 ranks (one per GPU; 2 and 3 ranks pass): its binomial tree copies a rank's
     * data through a host buffer with memcpy at ranks that forward their children's blocks, which
     * only exist from 4 ranks on. Scatter's tree forwards the same way. Versions before 4.1, as
     * for reductions; null where they go to MPI.
     */
    static String decideTrees(LibraryVersion version, boolean cudaAware) {
        if (cudaAware && version.flavor() == LibraryVersion.Flavor.MPICH && isBefore41(version.name())) {
            return "device gathers and scatters through host copies: " + version.name()
                    + "'s binomial trees copy device memory with memcpy at the ranks that forward (SIGSEGV in MPI_Gather at 4 ranks)";
        }
        return null;
    }

    static boolean isBefore41(String name) {
        Matcher m = MPICH_VERSION.matcher(name.replaceAll("^[^0-9]*", ""));
        if (!m.find()) {
            return false;
        }
        int major = Integer.parseInt(m.group(1)), minor = Integer.parseInt(m.group(2));
        return major < 4 || (major == 4 && minor < 1);
    }

    /** True when any of the regions is device memory. */
    static boolean involvesDevice(Region... regions) {
        for (Region r : regions) {
            if (r != null && r.kind().needsCuda()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs {@code reduction} (or a gather or scatter) on host copies: {@code send} copied in, the
     * result copied back into {@code recv} (either may be null: a non-root rank of a reduce or
     * gather has no result, one of a scatter no input).
     */
    static void onHost(Region send, Region recv, BiConsumer<Region, Region> reduction) {
        try (HostBuffer in = send == null ? null : toHost(send, true); HostBuffer out = recv == null ? null : toHost(recv, false)) {
            reduction.accept(in == null ? null : region(in), out == null ? null : region(out));
            if (out != null) {
                fromHost(out, recv);
            }
        }
    }

    private static Region region(HostBuffer h) {
        return new Region(h.address(), h.byteSize(), h.kind());
    }

    /** A host copy of {@code r} (its bytes when {@code copyIn}). */
    private static HostBuffer toHost(Region r, boolean copyIn) {
        HostBuffer h = HostBuffer.allocate(r.bytes());
        if (copyIn) {
            if (r.kind().needsCuda()) {
                Cuda.copy(h, device(r), r.bytes());
            } else {
                h.segment().copyFrom(MemorySegment.ofAddress(r.address()).reinterpret(r.bytes()));
            }
        }
        return h;
    }

    /** Copies {@code h} back into {@code r}. */
    private static void fromHost(HostBuffer h, Region r) {
        if (r.kind().needsCuda()) {
            Cuda.copy(device(r), h, r.bytes());
        } else {
            MemorySegment.ofAddress(r.address()).reinterpret(r.bytes()).copyFrom(h.segment());
        }
    }

    private static DeviceBuffer device(Region r) {
        return DeviceBuffer.wrap(Cuda.deviceOf(r.address()), r.address(), r.bytes());
    }
}
