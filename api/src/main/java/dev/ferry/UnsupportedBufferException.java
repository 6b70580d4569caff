// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * The backend cannot carry this kind of memory (typically a device buffer on an MPI that did
 * not declare CUDA support). The message names the backend that can.
 */
public class UnsupportedBufferException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public UnsupportedBufferException(String message) {
        super(message);
    }
}
