// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.util.Locale;

/**
 * The memory a benchmark's buffers live in: host pageable ({@link HostBuffer#allocate}), host
 * pinned ({@link Cuda#allocatePinned}) or device ({@link Cuda#allocate}, the process's GPU picked
 * from the node-local rank).
 */
public enum Memory {
    /** Ordinary host memory. */
    PAGEABLE,
    /** Page-locked host memory registered with the CUDA driver. */
    PINNED,
    /** GPU memory. */
    DEVICE;

    /** Lower-case name used on the command line, in parameters and in the C reference's output. */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The kind named {@code s} ({@code pageable}, {@code pinned}, {@code device}; {@code host} means pageable). */
    public static Memory parse(String s) {
        String k = s.trim().toLowerCase(Locale.ROOT);
        return switch (k) {
            case "pageable", "host" -> PAGEABLE;
            case "pinned" -> PINNED;
            case "device", "cuda", "gpu" -> DEVICE;
            default -> throw new IllegalArgumentException("unknown memory kind '" + s + "'; known: pageable, pinned, device");
        };
    }

    /** Why this kind cannot be measured on {@code comm} in this process, or null when it can. */
    public String unavailableReason(Communicator comm) {
        if (this == PAGEABLE) {
            return null;
        }
        if (!Cuda.isAvailable()) {
            return Cuda.unavailabilityCause().getMessage();
        }
        if (this == DEVICE && !comm.supportsDeviceBuffers()) {
            return "backend " + comm.backend() + " does not carry device buffers here";
        }
        return null;
    }

    /**
     * Makes the process's GPU current on the calling thread (JMH may call benchmarks from a thread
     * of its own); nothing for pageable memory.
     */
    public void prepareThread() {
        if (this != PAGEABLE) {
            Cuda.defaultDevice();
        }
    }

    /** Allocates {@code bytes} of this kind, zeroed; the caller frees it with {@link #free}. */
    public Buffer allocate(long bytes) {
        Buffer b = switch (this) {
            case PAGEABLE -> HostBuffer.allocate(bytes); // zeroed, so its pages are touched before timing
            case PINNED -> Cuda.allocatePinned(bytes);
            case DEVICE -> Cuda.allocate(bytes);
        };
        if (this != PAGEABLE) {
            Cuda.fill(b, (byte) 0);
        }
        return b;
    }

    /** Frees a buffer from {@link #allocate}; null is ignored. */
    public static void free(Buffer b) {
        if (b instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                throw new IllegalStateException("could not free " + b, e);
            }
        }
    }
}
