// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A message was longer than the receive buffer's count (MPI_ERR_TRUNCATE). The receive buffer
 * holds the first bytes of the message; the communicator stays usable.
 */
public class TruncationException extends MpiException {
    private static final long serialVersionUID = 1L;

    public TruncationException(String operation, int errorCode, int errorClass, String mpiMessage, Throwable cause) {
        super(operation, errorCode, errorClass, mpiMessage, cause);
    }
}
