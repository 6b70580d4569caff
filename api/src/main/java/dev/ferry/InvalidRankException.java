// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A rank (peer or root) is outside {@code [0, size)} and is not an allowed wildcard. */
public class InvalidRankException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidRankException(String message) {
        super(message);
    }
}
