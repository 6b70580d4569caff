// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * The MPI library returned an error for a call that passed Ferry's own checks. Carries the MPI
 * error code and class and the library's error string.
 */
public class MpiException extends FerryException {
    private static final long serialVersionUID = 1L;
    private final int errorCode;
    private final int errorClass;

    public MpiException(String operation, int errorCode, int errorClass, String mpiMessage, Throwable cause) {
        super(operation + " failed in MPI: " + mpiMessage + " (error code " + errorCode + ", class " + errorClass + ")", cause);
        this.errorCode = errorCode;
        this.errorClass = errorClass;
    }

    public int errorCode() {
        return errorCode;
    }

    public int errorClass() {
        return errorClass;
    }
}
