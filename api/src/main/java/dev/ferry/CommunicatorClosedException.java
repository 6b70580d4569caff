// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** The communicator was closed (or MPI finalized) before this call. */
public class CommunicatorClosedException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public CommunicatorClosedException(String message) {
        super(message);
    }
}
