// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * The buffer and the datatype do not fit together: a buffer whose length is not a whole number
 * of elements where whole elements are needed (reductions, typed views), or send and receive
 * sides that describe different amounts of data in one operation.
 */
public class DataTypeMismatchException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public DataTypeMismatchException(String message) {
        super(message);
    }
}
