// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Assumptions;

/**
 * The memory kinds the conformance suite runs each data test with. Pinned and device memory need
 * a CUDA driver; device memory also a backend that carries it. Where they are missing the test is
 * skipped with the reason, on every rank alike.
 */
public enum Mem {
    PAGEABLE, PINNED, DEVICE;

    /** Skips the current test (with the reason) unless this kind is usable with {@code c}. */
    public void assume(Communicator c) {
        if (this == PAGEABLE) return;
        Required.assume("cuda", Cuda.isAvailable(), () -> name().toLowerCase() + " memory needs CUDA: " + Cuda.unavailabilityCause().getMessage());
        if (this == DEVICE) {
            Assumptions.assumeTrue(c.supportsDeviceBuffers(), () -> "backend " + c.backend() + " does not carry device buffers here");
        }
    }

    /** A new buffer of this kind; the caller closes it. */
    public Buffer allocate(long bytes) {
        return switch (this) {
            case PAGEABLE -> HostBuffer.allocate(bytes);
            case PINNED -> Cuda.allocatePinned(bytes);
            case DEVICE -> Cuda.allocate(bytes);
        };
    }

    /** Writes {@code data} at the start of {@code b} (through a host copy for device memory). */
    public static void write(Buffer b, byte[] data) {
        if (b instanceof HostBuffer h) {
            MemorySegment.copy(MemorySegment.ofArray(data), 0, h.segment(), 0, data.length);
        } else {
            try (HostBuffer tmp = HostBuffer.allocate(data.length)) {
                MemorySegment.copy(MemorySegment.ofArray(data), 0, tmp.segment(), 0, data.length);
                Cuda.copy(b, tmp, data.length);
            }
        }
    }

    /** The whole content of {@code b}. */
    public static byte[] read(Buffer b) {
        byte[] out = new byte[Math.toIntExact(b.byteSize())];
        if (b instanceof HostBuffer h) {
            MemorySegment.copy(h.segment(), 0, MemorySegment.ofArray(out), 0, out.length);
        } else {
            try (HostBuffer tmp = HostBuffer.allocate(out.length)) {
                Cuda.copy(tmp, b, out.length);
                MemorySegment.copy(tmp.segment(), 0, MemorySegment.ofArray(out), 0, out.length);
            }
        }
        return out;
    }

    /** The byte receive buffers are filled with before a test, so that unwritten bytes show. */
    public static final byte POISON = (byte) 0xA5;

    /** Fills {@code b} with {@link #POISON}. */
    public static void poison(Buffer b) {
        byte[] p = new byte[Math.toIntExact(b.byteSize())];
        java.util.Arrays.fill(p, POISON);
        write(b, p);
    }
}
