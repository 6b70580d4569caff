// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.Optional;

/**
 * A request of MPI: the handle, completed by MPI_Wait or MPI_Test through this thread's scratch.
 * After an error the request is not retried: the same exception is thrown again, so that a freed
 * handle is never handed to MPI twice. A receive of a large message may own a derived datatype,
 * freed on completion.
 */
final class FfmRequest implements Request {
    /** {@code countType} of a receive whose byte count comes from MPI_Get_count_c. */
    static final long LARGE_COUNT = -1;

    private final int peer;
    private final int peerTag;
    private final Status sendStatus; // null for receives
    /** 0: MPI_Get_count(MPI_BYTE); LARGE_COUNT: MPI_Get_count_c(MPI_BYTE); else a derived type for MPI_Get_elements_x, freed at completion. */
    private final long countType;
    /** The status of a matched receive (MPI_Imrecv), known from its probe; else null. */
    private final Status matched;
    private long handle;
    private Status result;
    private RuntimeException failure;

    FfmRequest(long handle, int peer, int peerTag, Status sendStatus, long countType) {
        this(handle, peer, peerTag, sendStatus, countType, null);
    }

    FfmRequest(long handle, int peer, int peerTag, Status sendStatus, long countType, Status matched) {
        this.handle = handle;
        this.peer = peer;
        this.peerTag = peerTag;
        this.sendStatus = sendStatus;
        this.countType = countType;
        this.matched = matched;
    }

    /** For messages only: built when something failed, not per request. */
    private String what() {
        return sendStatus != null ? "MPI_Isend to rank " + peer + " tag " + peerTag
                : "MPI_Irecv from rank " + (peer == Communicator.ANY_SOURCE ? "ANY_SOURCE" : peer) + " tag "
                + (peerTag == Communicator.ANY_TAG ? "ANY_TAG" : peerTag);
    }

    @Override
    public synchronized Status waitFor() {
        if (result == null && failure == null) {
            Mpi.Scratch s = Mpi.scratch();
            s.handle(handle);
            int rc = Mpi.await(s.handle, s.status);
            complete(s, rc);
        }
        if (failure != null) {
            throw failure;
        }
        return result;
    }

    @Override
    public synchronized Optional<Status> test() {
        if (result == null && failure == null) {
            Mpi.Scratch s = Mpi.scratch();
            s.handle(handle);
            s.int0.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 0);
            int rc = Mpi.test(s.handle, s.int0, s.status);
            if (rc == 0 && s.int0() == 0) {
                handle = s.handle();
                return Optional.empty();
            }
            complete(s, rc);
        }
        if (failure != null) {
            throw failure;
        }
        return Optional.of(result);
    }

    private void complete(Mpi.Scratch s, int rc) {
        handle = s.handle();
        try {
            if (rc != 0) {
                failure = Mpi.error(what(), rc);
                return;
            }
            if (sendStatus != null) {
                result = sendStatus;
            } else if (matched != null) {
                result = matched;
            } else if (countType == 0) {
                Mpi.check("MPI_Get_count", Mpi.getCount(s.status, Mpi.ABI.byte_, s.int1));
                result = new Status(s.source(), s.tag(), s.int1());
            } else {
                result = LargeMessages.status(s, countType == LARGE_COUNT ? 0 : countType);
            }
        } catch (RuntimeException e) {
            failure = e instanceof FerryException ? e : new FerryException(what() + ": cannot read the status", e);
        } finally {
            if (countType != 0 && countType != LARGE_COUNT) {
                LargeMessages.free(countType);
            }
        }
    }

    /**
     * MPI_Cancel, then MPI_Wait and MPI_Test_cancelled: true when the receive was cancelled (its
     * status then says so), false when it had matched a message, which it has now received (or
     * failed on). A send, or a request already complete: false, nothing done.
     */
    @Override
    public synchronized boolean cancel() {
        if (result != null || failure != null || sendStatus != null) {
            return false;
        }
        Mpi.Scratch s = Mpi.scratch();
        s.handle(handle);
        int rc = Mpi.cancel(s.handle);
        if (rc != 0) {
            throw Mpi.error("MPI_Cancel of " + what(), rc); // the request is in flight, unchanged
        }
        rc = Mpi.await(s.handle, s.status);
        if (rc == 0) {
            s.int0.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 0);
            int trc = Mpi.testCancelled(s.status, s.int0);
            if (trc == 0 && s.int0() != 0) {
                handle = s.handle();
                result = Status.cancelledReceive(peer, peerTag);
                if (countType != 0 && countType != LARGE_COUNT) {
                    LargeMessages.free(countType);
                }
                return true;
            }
            if (trc != 0) {
                handle = s.handle();
                failure = Mpi.error("MPI_Test_cancelled after MPI_Cancel of " + what(), trc);
                if (countType != 0 && countType != LARGE_COUNT) {
                    LargeMessages.free(countType);
                }
                return false;
            }
        }
        complete(s, rc);
        return false;
    }
}
