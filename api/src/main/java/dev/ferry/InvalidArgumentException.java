// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A call was rejected before any native code ran, because an argument cannot be right.
 * The communicator is unchanged and stays usable. Subclasses say which argument.
 */
public class InvalidArgumentException extends FerryException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message) {
        super(message);
    }
}
