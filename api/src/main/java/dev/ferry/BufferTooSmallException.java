// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** The buffer holds fewer bytes than {@code count * type.size()} (times the number of ranks for rooted collectives). */
public class BufferTooSmallException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public BufferTooSmallException(String message) {
        super(message);
    }
}
