// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

/** The two C ABIs of MPI that Ferry binds: they differ in how handles and MPI_Status look. */
public enum MpiFamily {
    /** MPICH, MVAPICH2, Intel MPI, Cray MPICH: {@code libmpi.so.12}, handles are {@code int}s with fixed values. */
    MPICH_ABI("the MPICH ABI"),
    /** Open MPI 4.1, 5.0, 6: {@code libmpi.so.40}, handles are pointers to objects the library exports. */
    OPEN_MPI("Open MPI");

    private final String label;

    MpiFamily(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
