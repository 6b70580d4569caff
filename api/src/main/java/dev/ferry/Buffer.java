// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A contiguous range of bytes that a communicator can send from or receive into: host memory
 * ({@link HostBuffer}) or GPU memory ({@link DeviceBuffer}). Buffers know their kind, so the
 * transport can check that it can carry them before any native call.
 */
public sealed interface Buffer permits HostBuffer, DeviceBuffer {
    /** Where the bytes live. */
    MemoryKind kind();

    /** Length in bytes. */
    long byteSize();

    /** Native address of the first byte (a device address for device memory). */
    long address();

    /** CUDA device ordinal for device and managed memory; -1 for host memory. */
    int device();

    /** False once the buffer was closed (its memory freed, or freed when the operations in flight on it end). */
    boolean isAlive();

    /** True for memory that must not be written (a read-only segment or ByteBuffer): never a receive buffer. */
    default boolean isReadOnly() {
        return false;
    }

    /** The life of the memory under this buffer, shared with its slices (see {@link BufferLifetime}). */
    BufferLifetime lifetime();

    /** A view of {@code length} bytes starting at {@code offset}; no copy, same lifetime. */
    Buffer slice(long offset, long length);

    /** A view from {@code offset} to the end. */
    default Buffer slice(long offset) {
        return slice(offset, byteSize() - offset);
    }

    /** Throws {@link BufferFreedException} when the memory was freed. */
    default void checkAlive() {
        if (!isAlive()) {
            throw new BufferFreedException("buffer " + this + " was closed");
        }
    }

    /**
     * Throws {@link BufferFreedException} when the memory itself was given back. Unlike
     * {@link #checkAlive()}, a closed buffer whose memory an operation in flight still uses passes:
     * this is the check for transports and copies working for that operation.
     */
    default void checkMemory() {
        if (lifetime().isFreed()) {
            throw new BufferFreedException("buffer " + this + " was freed");
        }
    }

    static void checkSlice(Buffer b, long offset, long length) {
        if (offset < 0 || length < 0 || offset > b.byteSize() - length) {
            throw new IndexOutOfBoundsException("slice [" + offset + ", +" + length + ") is outside a buffer of " + b.byteSize() + " bytes");
        }
    }
}
