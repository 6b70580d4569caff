// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.ValueLayout;

/**
 * Which version of an example runs, the same on every rank ({@link #agree}):
 * <ul>
 *   <li>{@link #DEVICE}: kernels on the GPUs, and device buffers go straight to the communicator
 *       (a CUDA-aware MPI, or the {@code staged} backend);</li>
 *   <li>{@link #GPU}: kernels on the GPUs, but the backend carries host buffers only, so the
 *       example copies between device and pinned host memory itself;</li>
 *   <li>{@link #HOST}: no usable GPU: the computation runs in Java on host buffers.</li>
 * </ul>
 */
public enum Mode {
    /** GPU kernels; device buffers through the communicator. */
    DEVICE,
    /** GPU kernels; host buffers through the communicator (the backend carries no device buffers). */
    GPU,
    /** CPU only; host buffers. */
    HOST;

    /**
     * The best version every rank can run, limited by {@code requested} ({@code auto}, {@code device},
     * {@code gpu}, {@code host}). Collective. Throws when a version was requested that some rank cannot run.
     */
    public static Mode agree(Communicator comm, String requested) {
        Mode local = Cuda.isAvailable() ? (comm.supportsDeviceBuffers() ? DEVICE : GPU) : HOST;
        Mode wanted = switch (requested) {
            case "device" -> DEVICE;
            case "gpu" -> GPU;
            case "host" -> HOST;
            default -> null;
        };
        Mode mine = wanted != null && wanted.ordinal() > local.ordinal() ? wanted : local;
        int[] both = new int[2];
        try (HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mine.ordinal());
            in.segment().set(ValueLayout.JAVA_INT, 4, local.ordinal());
            comm.allReduce(in, out, 2, DataType.INT, ReduceOp.MAX);
            both[0] = out.segment().get(ValueLayout.JAVA_INT, 0);
            both[1] = out.segment().get(ValueLayout.JAVA_INT, 4);
        }
        Mode agreed = values()[both[0]];
        if (wanted != null && agreed != wanted) {
            Mode best = values()[both[1]];
            throw new FerryException("--mode " + requested + " cannot run on every rank; the best they all can run is the "
                    + best.describe(comm) + (Cuda.isAvailable() ? "" : " (" + Cuda.unavailabilityCause().getMessage() + ")"));
        }
        return agreed;
    }

    /** True when kernels run on GPUs. */
    public boolean usesGpu() {
        return this != HOST;
    }

    /** One line: what runs where, and how the data travels. */
    public String describe(Communicator comm) {
        return switch (this) {
            case DEVICE -> "device version: kernels on the GPUs, device buffers through " + comm.backend();
            case GPU -> "GPU version with host transfers: kernels on the GPUs, but " + comm.backend()
                    + " carries host buffers only, so data is copied through pinned host memory";
            case HOST -> "host version: no GPU, the computation runs in Java on host buffers";
        };
    }

    /** A short tag for result lines: "GPU, device buffers", "GPU, host buffers", "CPU". */
    public String tag() {
        return switch (this) {
            case DEVICE -> "GPU kernels, device buffers";
            case GPU -> "GPU kernels, host buffers";
            case HOST -> "CPU, host buffers";
        };
    }

    /** Host memory for transfers: pinned when a GPU is used (fast copies), pageable otherwise. */
    public HostBuffer allocateHost(long bytes) {
        return usesGpu() ? Cuda.allocatePinned(bytes) : HostBuffer.allocate(bytes);
    }
}
