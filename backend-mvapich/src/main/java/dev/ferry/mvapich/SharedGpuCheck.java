// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Settings;
import dev.ferry.Ferry;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.Mpi;
import dev.ferry.cuda.CudaDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * Whether device buffers may go to an MPICH before 4.1 when ranks share a GPU.
 *
 * <p>MPICH 4.0.2 built with CUDA, with two ranks of one node on the same GPU, delivers zeros for
 * a one-byte-per-pair device all-to-all and hangs in a device broadcast (seen on an H200, whether
 * the ranks see both GPUs or only that one, with or without MPICH's IPC handle cache); with one
 * GPU per rank the whole conformance suite passes. Wrong bytes without an error are the one thing
 * Ferry must never let through, so, at start-up, every rank contributes its node and GPU (host
 * name and PCI bus id of Ferry's device for the rank) to one MPI_Allgather; when two ranks of a
 * node share a GPU, {@code mvapich} takes no device buffers (a clear exception that names
 * {@code staged}, and {@code staged} in auto mode), host buffers are unaffected.
 * {@code -Dferry.mvapich.sharedGpu=allow} lifts this; {@code refuse} applies it to every version.
 */
final class SharedGpuCheck {
    private SharedGpuCheck() {
    }

    /** Whether the check applies to this library: CUDA-aware MPICH before 4.1 (or always with refuse, never with allow). */
    static boolean applies(Settings settings, LibraryVersion version, boolean cudaAware) {
        String setting = settings.get(MvapichSettings.SHARED_GPU);
        return switch (setting) {
            case "allow" -> false;
            case "refuse" -> cudaAware;
            case "auto" -> cudaAware && version.flavor() == LibraryVersion.Flavor.MPICH && DeviceReductionStaging.isBefore41(version.name());
            default -> throw new IllegalStateException(setting);
        };
    }

    /**
     * Collective over MPI_COMM_WORLD (every rank calls it at start-up): null when no two ranks of a
     * node use the same GPU, else why device buffers are refused.
     */
    static String run(LibraryVersion version, int worldSize) {
        long mine = Cuda.isAvailable() ? key(hostName(), Cuda.defaultDevice()) : 0; // 0: no GPU here, shares nothing
        try (Arena a = Arena.ofConfined()) {
            MemorySegment in = a.allocate(8), all = a.allocate(8L * worldSize);
            in.set(ValueLayout.JAVA_LONG, 0, mine);
            int rc = Mpi.allgather(in.address(), 8, Mpi.ABI.byte_, all.address(), 8, Mpi.ABI.byte_, Mpi.ABI.commWorld);
            if (rc != 0) {
                throw Mpi.error("MPI_Allgather of the ranks' GPUs at start-up", rc);
            }
            Set<Long> seen = new HashSet<>();
            for (int r = 0; r < worldSize; r++) {
                long k = all.getAtIndex(ValueLayout.JAVA_LONG, r);
                if (k != 0 && !seen.add(k)) {
                    return "two ranks of one node share a GPU, where " + version.name() + " delivers wrong data (device all-to-all)"
                            + " and hangs (device broadcast); use -Dferry.backend=staged (auto picks it), one GPU per rank,"
                            + " or MPICH 4.1 or newer (-Dferry.mvapich.sharedGpu=allow overrides this)";
                }
            }
            return null;
        }
    }

    /** A 64-bit key of (host, GPU); never 0. */
    static long key(String host, CudaDevice device) {
        String id = host + "/" + (device.pciBusId() == null || device.pciBusId().isEmpty() ? "ordinal " + device.ordinal() : device.pciBusId());
        long h = 0xcbf29ce484222325L; // FNV-1a
        for (byte b : id.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h == 0 ? 1 : h;
    }

    private static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            try {
                return java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException e2) {
                return "unknown-host";
            }
        }
    }
}
