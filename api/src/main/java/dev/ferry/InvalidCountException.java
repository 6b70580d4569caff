// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A count is negative, or the bytes it stands for cannot be addressed. */
public class InvalidCountException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidCountException(String message) {
        super(message);
    }
}
