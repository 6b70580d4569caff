// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** The buffer's memory was already freed (its arena closed, or its device allocation released). */
public class BufferFreedException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public BufferFreedException(String message) {
        super(message);
    }
}
