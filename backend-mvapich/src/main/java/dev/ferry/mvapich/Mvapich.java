// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Communicator;
import dev.ferry.InvalidArgumentException;
import dev.ferry.mpi.MpichConstants;

/**
 * Interop with native code that uses the same MPICH-family library in this process (C through
 * JNI/FFM, or another binding): communicators cross as their {@code MPI_Comm} handles, which in
 * the MPICH ABI are plain {@code int}s ({@code MPI_COMM_WORLD} is {@code 0x44000000}).
 */
public final class Mvapich {
    /** The handle of MPI_COMM_WORLD in the MPICH ABI. */
    public static final int MPI_COMM_WORLD = MpichConstants.MPI_COMM_WORLD;

    private Mvapich() {
    }

    /**
     * Wraps an existing {@code MPI_Comm} without copying it: Ferry operations run on it directly,
     * and {@link Communicator#close()} leaves it to its owner. MPI is initialized first if nobody
     * did (as {@code Ferry.open()} would); the communicator's error handler is set to
     * MPI_ERRORS_RETURN so that errors become exceptions.
     *
     * @param mpiComm an {@code MPI_Comm} handle of this process's MPICH-family library
     * @return a Ferry communicator over it, of backend {@code mvapich}
     * @throws InvalidArgumentException when {@code mpiComm} is MPI_COMM_NULL or no communicator handle
     */
    public static Communicator wrap(int mpiComm) {
        if (mpiComm == MpichConstants.MPI_COMM_NULL) {
            throw new InvalidArgumentException("cannot wrap MPI_COMM_NULL");
        }
        // MPICH encodes the object type in bits 26-29 of a handle (communicators: 1) and "built-in"
        // in bits 30-31; a built-in handle that is not a predefined communicator fails an
        // assertion inside MPICH that aborts the job, so such handles are refused here.
        if ((mpiComm & 0x3c000000) != 0x04000000
                || (mpiComm >>> 30 == 1 && mpiComm != MpichConstants.MPI_COMM_WORLD && mpiComm != MpichConstants.MPI_COMM_SELF)) {
            throw new InvalidArgumentException("0x" + Integer.toHexString(mpiComm) + " is not an MPI_Comm handle of the MPICH ABI "
                    + "(MPI_COMM_WORLD is 0x44000000; communicators made by MPI_Comm_dup/split are 0x84... or 0xc4...)");
        }
        return new dev.ferry.spi.CheckedCommunicator(dev.ferry.spi.CollectivePlanning.planned(new MvapichTransport(MvapichRuntime.get(), mpiComm, false),
                dev.ferry.Settings.process(), Mvapich.class.getClassLoader()));
    }

    /**
     * The {@code MPI_Comm} handle under a Ferry communicator of the mvapich backend, for native
     * code; it stays owned by {@code c}.
     *
     * @param c a communicator opened or wrapped by backend mvapich
     * @return its {@code MPI_Comm} handle
     * @throws InvalidArgumentException when {@code c} is of another backend
     */
    public static int handle(Communicator c) {
        if (c instanceof dev.ferry.spi.CheckedCommunicator f && f.transport(MvapichTransport.class) instanceof MvapichTransport m) {
            return m.intHandle();
        }
        throw new InvalidArgumentException(c + " is not an mvapich communicator");
    }

    /**
     * {@code MPI_Wtime} of the library (initializing MPI if nobody did).
     *
     * @return seconds since an arbitrary time in the past
     */
    public static double wtime() {
        MvapichRuntime.get();
        return MvapichRuntime.wtime();
    }

    /**
     * The library's version string, whole (initializing MPI if nobody did).
     *
     * @return what {@code MPI_Get_library_version} wrote
     */
    public static String libraryVersion() {
        return MvapichRuntime.get().version.full();
    }
}
