// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A blocking operation did not complete within {@code ferry.timeout}. The message names the
 * operation, the peer or root, the tag and how long it waited.
 */
public class OperationTimeoutException extends FerryException {
    private static final long serialVersionUID = 1L;

    public OperationTimeoutException(String message) {
        super(message);
    }
}
