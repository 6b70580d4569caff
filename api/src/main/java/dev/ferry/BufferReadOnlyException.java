// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A read-only buffer (a read-only MemorySegment or ByteBuffer) was given where a call writes: a receive buffer. */
public class BufferReadOnlyException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public BufferReadOnlyException(String message) {
        super(message);
    }
}
