// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Host memory as a buffer: a native {@link MemorySegment}, pageable or pinned.
 *
 * <p>{@link #allocate(long)} gives pageable memory that this buffer owns and frees on
 * {@link #close()}; pinned memory comes from {@code dev.ferry.cuda.Cuda#allocatePinned}.
 * {@link #wrap(MemorySegment)} borrows memory the caller keeps alive. Slices share the memory
 * and its lifetime: once the owner is closed, every slice reports {@link #isAlive()} false and
 * communicators reject it with {@link BufferFreedException}. Closing a buffer while a non-blocking
 * operation uses it is safe: the memory is freed when the operation completes
 * ({@link BufferLifetime}). A read-only segment or ByteBuffer is never a receive buffer
 * ({@link BufferReadOnlyException}).
 */
public final class HostBuffer implements Buffer, AutoCloseable {
    private final MemorySegment segment;
    private final MemoryKind kind;
    private final boolean owner; // false for wrapped memory and for slices
    private final BufferLifetime lifetime;

    private HostBuffer(MemorySegment segment, MemoryKind kind, Arena owner) {
        this(segment, kind, owner != null, new BufferLifetime(owner == null ? null : owner::close));
    }

    private HostBuffer(MemorySegment segment, MemoryKind kind, boolean owner, BufferLifetime lifetime) {
        this.segment = segment;
        this.kind = kind;
        this.owner = owner;
        this.lifetime = lifetime;
    }

    /** {@link Communicator#IN_PLACE}: no memory, never handed to a transport. */
    static HostBuffer inPlaceMarker() {
        return new HostBuffer(MemorySegment.NULL, MemoryKind.HOST_PAGEABLE, false, new BufferLifetime(null));
    }

    /** Allocates {@code bytes} of zeroed, 64-byte-aligned pageable memory owned by the buffer. */
    public static HostBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new InvalidCountException("cannot allocate " + bytes + " bytes");
        }
        Arena arena = Arena.ofShared();
        try {
            return new HostBuffer(arena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes), MemoryKind.HOST_PAGEABLE, arena);
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            throw e;
        }
    }

    /** Borrows a native segment as pageable host memory; the caller keeps it alive. */
    public static HostBuffer wrap(MemorySegment segment) {
        return wrap(segment, MemoryKind.HOST_PAGEABLE);
    }

    /** Borrows a native segment whose kind the caller knows (e.g. memory pinned elsewhere). */
    public static HostBuffer wrap(MemorySegment segment, MemoryKind kind) {
        checkNative(segment, kind);
        return new HostBuffer(segment, kind, null);
    }

    /** Borrows a direct {@link ByteBuffer}, from position 0 to its capacity. */
    public static HostBuffer wrap(ByteBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect()) {
            throw new UnsupportedBufferException("heap ByteBuffers cannot be handed to MPI without a copy; use ByteBuffer.allocateDirect or HostBuffer.allocate");
        }
        return new HostBuffer(MemorySegment.ofBuffer(buffer.duplicate().clear()), MemoryKind.HOST_PAGEABLE, null);
    }

    /**
     * Takes ownership of a native segment allocated in {@code arena}: closing the buffer closes
     * the arena, which runs the segment's cleanup (e.g. cuMemFreeHost for pinned memory).
     */
    public static HostBuffer adopt(MemorySegment segment, MemoryKind kind, Arena arena) {
        checkNative(segment, kind);
        return new HostBuffer(segment, kind, Objects.requireNonNull(arena, "arena"));
    }

    private static void checkNative(MemorySegment segment, MemoryKind kind) {
        Objects.requireNonNull(segment, "segment");
        Objects.requireNonNull(kind, "kind");
        if (!segment.isNative()) {
            throw new UnsupportedBufferException("heap segments cannot be handed to MPI; allocate native memory (HostBuffer.allocate or an Arena)");
        }
        if (!kind.isHostAccessible() || kind == MemoryKind.MANAGED) {
            throw new UnsupportedBufferException(kind + " memory is not host memory; use DeviceBuffer");
        }
    }

    /** The memory, for reading and writing from Java. */
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public MemoryKind kind() {
        return kind;
    }

    @Override
    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    public long address() {
        return segment.address();
    }

    @Override
    public int device() {
        return -1;
    }

    @Override
    public boolean isAlive() {
        return lifetime.isOpen() && segment.scope().isAlive();
    }

    @Override
    public void checkMemory() {
        if (lifetime.isFreed() || !segment.scope().isAlive()) {
            throw new BufferFreedException("buffer " + this + " was freed");
        }
    }

    @Override
    public boolean isReadOnly() {
        return segment.isReadOnly();
    }

    @Override
    public BufferLifetime lifetime() {
        return lifetime;
    }

    @Override
    public HostBuffer slice(long offset, long length) {
        Buffer.checkSlice(this, offset, length);
        // a closed buffer whose memory is still in use by an operation in flight may be sliced (by that
        // operation's transport); the slice is not alive, so a new operation refuses it
        if (lifetime.isFreed() || !segment.scope().isAlive()) {
            throw new BufferFreedException("buffer " + this + " was freed");
        }
        return new HostBuffer(segment.asSlice(offset, length), kind, false, lifetime);
    }

    @Override
    public HostBuffer slice(long offset) {
        return slice(offset, byteSize() - offset);
    }

    /** True when this buffer owns its memory and frees it on {@link #close()}. */
    public boolean isOwner() {
        return owner;
    }

    /**
     * Frees the memory if this buffer owns it (slices taken from it become dead); does nothing
     * for wrapped memory and for slices. With operations in flight on the memory (an isend or
     * irecv not yet completed), the buffer is closed at once and the memory is freed when the
     * last of them completes. Idempotent.
     */
    @Override
    public void close() {
        if (owner) {
            lifetime.close();
        }
    }

    @Override
    public String toString() {
        if (this == Communicator.IN_PLACE) {
            return "Communicator.IN_PLACE";
        }
        return "HostBuffer[" + kind + ", " + byteSize() + " bytes @0x" + Long.toHexString(address()) + (isReadOnly() ? ", read-only" : "") + (isAlive() ? "" : lifetime.isFreed() || !segment.scope().isAlive() ? ", freed" : ", closed") + "]";
    }
}
