// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.FerryException;

/**
 * An NCCL call failed, NCCL reported an asynchronous error, or a device collective on NCCL did not
 * complete in time. The message names the call, NCCL's error string and last error text, and what
 * to do; {@link #result()} is the {@code ncclResult_t} (or -1 when no NCCL call returned one).
 */
public class NcclException extends FerryException {
    private static final long serialVersionUID = 1L;
    private final int result;

    public NcclException(String message) {
        this(message, -1, null);
    }

    public NcclException(String message, Throwable cause) {
        this(message, -1, cause);
    }

    public NcclException(String message, int result, Throwable cause) {
        super(message, cause);
        this.result = result;
    }

    /** The {@code ncclResult_t} of the failed call ({@link NcclTypes#RESULT_NAMES}), or -1. */
    public int result() {
        return result;
    }
}
