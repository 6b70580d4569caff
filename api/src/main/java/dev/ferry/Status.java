// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * What a completed receive learned, or what a probe found: the actual source and tag, and how many
 * bytes the message has.
 *
 * <p>A receive cancelled by {@link Request#cancel()} completes with {@code cancelled} true, the
 * source and tag it was posted with (possibly {@link Communicator#ANY_SOURCE} and
 * {@link Communicator#ANY_TAG}) and a byte count of 0; nothing was written to its buffer. Every
 * other status has {@code cancelled} false (the three-argument constructor).
 *
 * @param source    rank that sent the message
 * @param tag       tag it carried
 * @param byteCount bytes received (for a probe: bytes of the whole message, as its sender sent it)
 * @param cancelled true only for a receive that {@link Request#cancel()} cancelled
 */
public record Status(int source, int tag, long byteCount, boolean cancelled) {
    /** A status of a message received or probed (not cancelled). */
    public Status(int source, int tag, long byteCount) {
        this(source, tag, byteCount, false);
    }

    /** The status of a receive posted with {@code source} and {@code tag} that was cancelled: no bytes. */
    public static Status cancelledReceive(int source, int tag) {
        return new Status(source, tag, 0, true);
    }

    /** Elements of {@code type} received; an exception if a partial element arrived. */
    public long count(DataType type) {
        if (byteCount % type.size() != 0) {
            throw new DataTypeMismatchException(byteCount + " bytes received is not a whole number of " + type);
        }
        return byteCount / type.size();
    }
}
