// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

/**
 * A duplicate of a transport that was started without waiting for the other ranks
 * ({@link Transport#startDuplicate()}, a local call as MPI_Comm_idup) and is finished later, once,
 * on one thread. Every started duplicate must be finished: until then the MPI library holds its
 * request.
 */
@FunctionalInterface
public interface PendingDuplicate {
    /**
     * Waits until every rank has started the duplicate, then sets up what the duplicate needs with
     * collectives on the new communicator alone, and returns it; the caller owns it (and closes it).
     */
    Transport finish();

    /** A duplicate made already (by a collective call): finishing it only hands it over. */
    static PendingDuplicate done(Transport duplicate) {
        return () -> duplicate;
    }
}
