// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A message tag is negative (other than {@link Communicator#ANY_TAG} on receives) or above the MPI tag bound. */
public class InvalidTagException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidTagException(String message) {
        super(message);
    }
}
