// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Communicator;
import dev.ferry.InvalidArgumentException;
import mpi.Intracomm;
import mpi.MPIException;

/** Interop with code that uses Open MPI's Java bindings directly. */
public final class Ompi {
    private Ompi() {
    }

    /**
     * Wraps an existing {@link Intracomm} without copying it: Ferry operations run on it directly,
     * and {@link Communicator#close()} leaves it to its owner. MPI must have been initialized
     * through mpi.jar already (or by {@code Ferry.open()}); its error handler is set to
     * MPI_ERRORS_RETURN so that errors become exceptions.
     */
    public static Communicator wrap(Intracomm comm) {
        if (comm == null || comm.isNull()) {
            throw new InvalidArgumentException("cannot wrap a null communicator");
        }
        try {
            return new dev.ferry.spi.CheckedCommunicator(dev.ferry.spi.CollectivePlanning.planned(new OmpiJavaTransport(OmpiRuntime.get(), comm, false),
                    dev.ferry.Settings.process(), Ompi.class.getClassLoader()));
        } catch (MPIException e) {
            throw OmpiRuntime.error("wrapping an Intracomm", e);
        }
    }

    /** The mpi.jar communicator under a Ferry communicator of the ompi backend. */
    public static Intracomm unwrap(Communicator c) {
        if (c instanceof dev.ferry.spi.CheckedCommunicator f && f.transport(OmpiJavaTransport.class) instanceof OmpiJavaTransport o) {
            return o.intracomm();
        }
        throw new InvalidArgumentException(c + " is not an ompi communicator");
    }
}
