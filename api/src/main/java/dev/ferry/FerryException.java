// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * Base of every exception Ferry throws. Unchecked: a failed transfer is rarely something the
 * immediate caller can repair, and MPI codes are full of calls that would otherwise all declare it.
 */
public class FerryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public FerryException(String message) {
        super(message);
    }

    public FerryException(String message, Throwable cause) {
        super(message, cause);
    }
}
