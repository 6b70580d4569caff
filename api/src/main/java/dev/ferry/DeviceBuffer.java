// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import java.util.Objects;

/**
 * GPU memory as a buffer: device ordinal, address and length. The CPU never dereferences it;
 * transports either hand the address to a CUDA-aware MPI or stage it through pinned host memory.
 *
 * <p>Allocate with {@code dev.ferry.cuda.Cuda#allocate}; borrow memory allocated elsewhere
 * (a JCuda {@code CUdeviceptr}, another library) with {@link #wrap(int, long, long)}. Slices
 * share the allocation and its lifetime.
 */
public final class DeviceBuffer implements Buffer, AutoCloseable {
    private final DeviceAllocation allocation;
    private final long offset;
    private final long length;
    private final boolean root;

    private DeviceBuffer(DeviceAllocation allocation, long offset, long length, boolean root) {
        this.allocation = allocation;
        this.offset = offset;
        this.length = length;
        this.root = root;
    }

    /**
     * Borrows device memory that the caller allocated and keeps alive; {@link #close()} does not
     * free it. {@code address} must be a device pointer of {@code device} covering {@code bytes}.
     */
    public static DeviceBuffer wrap(int device, long address, long bytes) {
        return create(device, address, bytes, MemoryKind.DEVICE, null);
    }

    /**
     * Takes ownership of device memory: {@code free} runs once, on {@link #close()}. For memory
     * providers such as {@code dev.ferry.cuda}; applications use {@code Cuda.allocate}.
     */
    public static DeviceBuffer adopt(int device, long address, long bytes, MemoryKind kind, Runnable free) {
        return create(device, address, bytes, kind, Objects.requireNonNull(free, "free"));
    }

    private static DeviceBuffer create(int device, long address, long bytes, MemoryKind kind, Runnable free) {
        if (device < 0) {
            throw new InvalidArgumentException("device ordinal " + device + " is negative");
        }
        if (address == 0 && bytes > 0) {
            throw new InvalidArgumentException("device address is null");
        }
        if (bytes < 0) {
            throw new InvalidCountException("device buffer size " + bytes + " is negative");
        }
        if (kind != MemoryKind.DEVICE && kind != MemoryKind.MANAGED) {
            throw new InvalidArgumentException(kind + " is not device memory");
        }
        return new DeviceBuffer(new DeviceAllocation(device, address, bytes, kind, free), 0, bytes, true);
    }

    /** The allocation this buffer is a view of. */
    public DeviceAllocation allocation() {
        return allocation;
    }

    /** Offset of this view from the allocation's base address. */
    public long offset() {
        return offset;
    }

    @Override
    public MemoryKind kind() {
        return allocation.kind();
    }

    @Override
    public long byteSize() {
        return length;
    }

    @Override
    public long address() {
        return allocation.baseAddress() + offset;
    }

    @Override
    public int device() {
        return allocation.device();
    }

    @Override
    public boolean isAlive() {
        return allocation.isAlive();
    }

    @Override
    public BufferLifetime lifetime() {
        return allocation.lifetime();
    }

    @Override
    public DeviceBuffer slice(long offset, long length) {
        Buffer.checkSlice(this, offset, length);
        // a closed buffer whose memory is still in use by an operation in flight may be sliced (by that
        // operation's transport); the slice is not alive, so a new operation refuses it
        if (allocation.lifetime().isFreed()) {
            throw new BufferFreedException("buffer " + this + " was freed");
        }
        return new DeviceBuffer(allocation, this.offset + offset, length, false);
    }

    @Override
    public DeviceBuffer slice(long offset) {
        return slice(offset, byteSize() - offset);
    }

    /**
     * Frees the allocation if Ferry owns it and this is the buffer it was allocated as; slices
     * and borrowed memory are left alone. With operations in flight on the allocation (an isend
     * or irecv not yet completed), the buffer is closed at once and the memory is freed when the
     * last of them completes. Idempotent.
     */
    @Override
    public void close() {
        if (root) {
            if (allocation.isOwned()) {
                allocation.release();
            }
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer[" + kind() + " on device " + device() + ", " + length + " bytes @0x" + Long.toHexString(address()) + (isAlive() ? "" : allocation.lifetime().isFreed() ? ", freed" : ", closed") + "]";
    }
}
