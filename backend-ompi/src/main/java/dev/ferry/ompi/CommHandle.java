// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.FerryException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The C {@code MPI_Comm} of an mpi.jar communicator: Open MPI's Java bindings keep it in the
 * protected {@code long handle} field of {@code mpi.Comm} (the pointer their JNI code passes to
 * the C API), read here with a private lookup (mpi.jar lives in the unnamed module, which opens
 * every package).
 */
final class CommHandle {
    private static final VarHandle HANDLE;

    static {
        try {
            HANDLE = MethodHandles.privateLookupIn(mpi.Comm.class, MethodHandles.lookup()).findVarHandle(mpi.Comm.class, "handle", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(new FerryException("this mpi.jar has no long field mpi.Comm.handle: " + e, e));
        }
    }

    private CommHandle() {
    }

    static long of(mpi.Comm comm) {
        return (long) HANDLE.get(comm);
    }
}
