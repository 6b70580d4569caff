// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * The ranks called one collective with arguments that disagree: another operation, root or number
 * of bytes on some rank. Ferry sees it where it compares the ranks' calls before any data moves
 * (the node's CUDA IPC collectives on device memory): there every rank of the call throws it, with
 * the same message, and the communicator stays usable. Elsewhere such a program is erroneous as in
 * MPI: the library reports what it sees (a {@link TruncationException} for a count too small) or
 * waits, and the watchdog ({@code ferry.timeout}) ends the wait with a hang report.
 */
public class CollectiveMismatchException extends FerryException {
    private static final long serialVersionUID = 1L;

    public CollectiveMismatchException(String message) {
        super(message);
    }
}
