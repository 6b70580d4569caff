// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A call would break the threading contract (see {@link Communicator#threadLevel()}), so Ferry
 * refused it before any native call: a second thread entering MPI while another is inside it
 * when the library provides only {@link ThreadLevel#SERIALIZED}; a thread other than the one that
 * initialized MPI when it provides only {@link ThreadLevel#FUNNELED}; or two threads running
 * collectives on the same communicator at once (forbidden by MPI at every level: give each thread
 * its own {@link Communicator#duplicate()}). The call in progress on the other thread is not
 * disturbed; the communicator stays usable.
 */
public class ThreadingException extends FerryException {
    private static final long serialVersionUID = 1L;

    public ThreadingException(String message) {
        super(message);
    }
}
