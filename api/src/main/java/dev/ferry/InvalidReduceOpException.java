// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A reduction operator applied to a datatype it is not defined for (MINLOC on INT, BXOR on FLOAT, e.g.). */
public class InvalidReduceOpException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidReduceOpException(String message) {
        super(message);
    }
}
