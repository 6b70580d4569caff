// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import java.lang.foreign.MemorySegment;

/**
 * Memory a call needs for a while, of the same kind as a buffer of the call: host memory beside
 * host buffers, memory of the same device beside device buffers (the input of an in-place
 * collective, or a block a transport writes and nobody reads). Closed at the end of the call.
 */
final class Scratch implements AutoCloseable {
    private final Buffer buffer;

    private Scratch(Buffer buffer) {
        this.buffer = buffer;
    }

    /** {@code bytes} of new memory where {@code like} lives. */
    static Scratch like(Buffer like, long bytes) {
        return new Scratch(like.kind().needsCuda() ? DeviceSupport.get().allocateLike(like, bytes) : HostBuffer.allocate(bytes));
    }

    Buffer buffer() {
        return buffer;
    }

    /** Copies {@code bytes} at {@code offset} of {@code src} to the start of this memory; returns when they are there. */
    void copyFrom(Buffer src, long offset, long bytes) {
        if (bytes == 0) {
            return;
        }
        Buffer from = src.slice(offset, bytes);
        if (buffer instanceof HostBuffer to && from instanceof HostBuffer h) {
            MemorySegment.copy(h.segment(), 0, to.segment(), 0, bytes);
        } else {
            DeviceSupport.get().copy(buffer, from, bytes);
        }
    }

    @Override
    public void close() {
        if (buffer instanceof HostBuffer h) {
            h.close();
        } else {
            ((DeviceBuffer) buffer).close();
        }
    }
}
