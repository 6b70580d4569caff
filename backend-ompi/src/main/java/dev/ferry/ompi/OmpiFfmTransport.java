// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.FfmTransport;
import dev.ferry.mpi.Mpi;

/**
 * A communicator of backend ompi over an Open MPI {@code MPI_Comm} (a pointer) through the shared
 * java.lang.foreign binding ({@link FfmTransport}): the path that needs no mpi.jar and no
 * libmpi_java (Open MPI 6 ships neither).
 */
final class OmpiFfmTransport extends FfmTransport {
    private final OmpiFfmRuntime runtime;

    OmpiFfmTransport(OmpiFfmRuntime runtime, long comm, boolean owned) {
        super("ompi", comm, owned, runtime.tagUpperBound);
        this.runtime = runtime;
    }

    /** A duplicate of MPI_COMM_WORLD. */
    static OmpiFfmTransport world(OmpiFfmRuntime runtime) {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_dup(MPI_COMM_WORLD)", Mpi.commDup(Mpi.ABI.commWorld, s.handle));
        return new OmpiFfmTransport(runtime, s.handle(), true);
    }

    @Override
    protected FfmTransport create(long newComm) {
        return new OmpiFfmTransport(runtime, newComm, true);
    }

    /** Open MPI's own reductions, but for those it may get wrong ({@link KnownBugWorkarounds#libraryReduces}). */
    @Override
    protected boolean mpiReduces(DataType type, ReduceOp op) {
        return KnownBugWorkarounds.libraryReduces(type, op) && super.mpiReduces(type, op);
    }

    @Override
    public boolean supportsDeviceBuffers() {
        return runtime.cuda.cudaAware() && Cuda.isAvailable();
    }

    @Override
    public String deviceBuffersUnsupportedReason() {
        if (!Cuda.isAvailable()) {
            return "CUDA is unavailable in this process (" + Cuda.unavailabilityCause().getMessage() + ")";
        }
        return runtime.version + " is not CUDA-aware (" + runtime.cuda.explanation() + "), so ompi never hands it device memory; "
                + "use -Dferry.backend=staged (auto picks it), or launch with a CUDA-aware Open MPI";
    }
}
