// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.DeviceBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.MemoryKind;
import dev.ferry.cuda.Cuda;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * NCCL as this process sees it: whether {@code libnccl.so.2} loaded (and from where), its version,
 * its error strings, and the {@code NCCL_*} environment in effect. Loading happens on first use
 * of this class and never touches a GPU; it is safe on machines without one.
 *
 * <p>Ferry never sets NCCL's environment: in particular it never sets {@code NCCL_NVLS_ENABLE} or
 * anything else that turns on NVLink multicast. What the user set is what NCCL reads.
 */
public final class Nccl {
    private Nccl() {
    }

    /** True when the library loaded, is complete, and is NCCL 2.7 or newer. */
    public static boolean isAvailable() {
        return NcclAbi.unavailabilityCause() == null;
    }

    /** Why the library is unavailable (with what to do), or null. */
    public static Throwable unavailabilityCause() {
        return NcclAbi.unavailabilityCause();
    }

    /** NCCL_VERSION_CODE of the loaded library (e.g. 23007); throws when unavailable. */
    public static int versionCode() {
        return NcclAbi.version();
    }

    /** "2.30.7"; throws when unavailable. */
    public static String version() {
        return NcclTypes.versionString(NcclAbi.version());
    }

    /** The loaded file; throws when unavailable. */
    public static Path library() {
        return NcclAbi.library().path();
    }

    /** How the library was found ("the project's NCCL wheel folder ...", "-Dferry.nccl.lib=..."); throws when unavailable. */
    public static String foundBy() {
        return NcclAbi.library().how();
    }

    /** Whether ncclCommSplit is there (NCCL 2.18 or newer): split and duplicate use it, else a new unique id. */
    public static boolean hasCommSplit() {
        return NcclAbi.hasSplit();
    }

    /**
     * Why the device collectives of {@code c} do not run on NCCL (ranks sharing a GPU, an init that
     * failed on some rank, an aborted NCCL communicator), or empty when they do.
     *
     * @param c a communicator of any backend (NCCL is an algorithm of every communicator's planner)
     * @throws InvalidArgumentException when {@code c} has no NCCL algorithm
     */
    public static Optional<String> inactiveReason(Communicator c) {
        return Optional.ofNullable(of(c).inactiveReason());
    }

    /** The NCCL algorithm of {@code c}'s collectives planner; {@link InvalidArgumentException} where there is none. */
    static NcclCollectives of(Communicator c) {
        if (c instanceof dev.ferry.spi.CheckedCommunicator f && f.transport() instanceof dev.ferry.collectives.PlannedTransport p
                && p.planner().byName("nccl") instanceof NcclCollectives n) {
            return n;
        }
        throw new InvalidArgumentException((c == null ? "null" : c + " of backend " + c.backend()) + " has no NCCL collectives (ferry-backend-nccl "
                + "and the collectives planner on the class path)");
    }

    /** Whether ncclMemAlloc/ncclMemFree are there (NCCL 2.19 or newer). */
    public static boolean hasMemAlloc() {
        return NcclAbi.hasMemAlloc();
    }

    /**
     * Device memory from {@code ncclMemAlloc} (NCCL 2.19 or newer) on {@code device}: memory that
     * NCCL's zero-copy and NVLS paths can register; freed with {@code ncclMemFree} when the buffer
     * is closed. Throws {@link NcclException} when NCCL lacks it or the allocation fails.
     */
    public static DeviceBuffer allocate(int device, long bytes) {
        if (!NcclAbi.hasMemAlloc()) {
            throw new NcclException("ncclMemAlloc is not in NCCL " + version() + " (2.19 or newer has it); use Cuda.allocate");
        }
        Cuda.device(device).makeCurrent();
        long address = NcclAbi.memAlloc(bytes);
        return DeviceBuffer.adopt(device, address, bytes, MemoryKind.DEVICE, () -> {
            Cuda.device(device).makeCurrent();
            check("ncclMemFree", NcclAbi.memFree(address), 0);
        });
    }

    /** ncclGetErrorString. */
    public static String errorString(int result) {
        return NcclAbi.errorString(result);
    }

    /** The {@code NCCL_*} variables of this process's environment, sorted (what NCCL will read). */
    public static Map<String, String> environment() {
        return environment(System.getenv());
    }

    static Map<String, String> environment(Map<String, String> env) {
        Map<String, String> out = new TreeMap<>();
        env.forEach((k, v) -> {
            if (k.startsWith("NCCL_")) out.put(k, v);
        });
        return out;
    }

    /** "NCCL_DEBUG=WARN, NCCL_IB_DISABLE=1", or "none (NCCL's defaults)". */
    public static String describeEnvironment() {
        Map<String, String> e = environment();
        if (e.isEmpty()) {
            return "none (NCCL's defaults)";
        }
        StringBuilder sb = new StringBuilder();
        e.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : ", ").append(k).append('=').append(v));
        return sb.toString();
    }

    /**
     * Throws {@link NcclException} unless {@code result} is ncclSuccess: the message names the call,
     * NCCL's error string, NCCL's last-error text (of {@code comm}, or of the process for 0), and
     * what to do.
     */
    public static void check(String call, int result, long comm) {
        if (result != NcclTypes.SUCCESS) {
            throw error(call, result, comm);
        }
    }

    /** The exception {@link #check} throws. */
    static NcclException error(String call, int result, long comm) {
        String last = NcclAbi.lastError(comm);
        return new NcclException(call + " failed: " + NcclTypes.resultName(result) + " \"" + NcclAbi.errorString(result) + "\""
                + (last.isBlank() ? "" : "; NCCL says: " + last.trim()) + ". " + advice(result), result, null);
    }

    /** What to do about a result, in one sentence. */
    static String advice(int result) {
        String debug = System.getenv("NCCL_DEBUG") == null ? " Rerun with NCCL_DEBUG=WARN (or INFO) to see NCCL's own report." : "";
        return switch (result) {
            case NcclTypes.UNHANDLED_CUDA_ERROR -> "A CUDA call inside NCCL failed: check nvidia-smi, the driver, and that every buffer is device memory"
                    + " of this rank's GPU." + debug;
            case NcclTypes.SYSTEM_ERROR -> "A system call or the network failed (sockets, shared memory: check NCCL_SOCKET_IFNAME and the size of"
                    + " /dev/shm)." + debug;
            case NcclTypes.INTERNAL_ERROR -> "NCCL hit an internal error; this communicator cannot be used any more." + debug;
            case NcclTypes.INVALID_ARGUMENT -> "An argument was refused (a pointer that is not device memory of this GPU, a count, type, root,"
                    + " or two ranks on one GPU)." + debug;
            case NcclTypes.INVALID_USAGE -> "Calls were out of order, or ranks called different collectives, counts or roots." + debug;
            case NcclTypes.REMOTE_ERROR -> "Another rank failed or went away: see that rank's output.";
            case NcclTypes.IN_PROGRESS -> "The operation is still in progress (non-blocking communicator).";
            case NcclTypes.TIMEOUT -> "NCCL timed out waiting for a peer: see the other ranks' output.";
            default -> "Unknown result: check the NCCL version and its release notes." + debug;
        };
    }
}
