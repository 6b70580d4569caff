// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/** A CUDA driver call failed. The message names the call, the CUresult and what to check. */
public class CudaException extends FerryException {
    private static final long serialVersionUID = 1L;
    private final int result;

    public CudaException(String message, int result) {
        super(message);
        this.result = result;
    }

    public CudaException(String message, Throwable cause) {
        super(message, cause);
        this.result = -1;
    }

    /** The CUresult, or -1 when the failure was not a driver result (library not loadable). */
    public int result() {
        return result;
    }
}
