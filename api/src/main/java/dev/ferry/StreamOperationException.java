// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry;

/**
 * An operation enqueued on a stream by a {@link StreamCommunicator} failed after its call had
 * returned (a peer lost, a timeout, a truncated receive, an MPI error): thrown by the next call
 * and by {@link StreamCommunicator#synchronize()} of that view, whose later calls all throw it.
 * The cause is the failure as a blocking call would have thrown it. Work queued on the stream after
 * the failed operation was released, so the stream never waits for it forever; the data it
 * produced is undefined.
 */
public class StreamOperationException extends FerryException {
    private static final long serialVersionUID = 1L;

    public StreamOperationException(String message, Throwable cause) {
        super(message, cause);
    }
}
