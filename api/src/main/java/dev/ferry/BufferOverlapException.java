// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** Send and receive buffers of one collective overlap; MPI forbids aliased buffers. Use distinct buffers. */
public class BufferOverlapException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public BufferOverlapException(String message) {
        super(message);
    }
}
