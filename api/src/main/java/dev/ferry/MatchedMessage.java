// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A message that {@link Communicator#mprobe} or {@link Communicator#improbe} matched and took out
 * of matching (MPI_Mprobe's {@code MPI_Message}): no other receive, of this thread or another, can
 * get it; only this object's {@link #recv} or {@link #irecv} receives it, once. Use it where
 * several threads receive from one communicator and a probe must be followed by the receive of
 * the very message it found (a plain {@link Communicator#probe} followed by
 * {@link Communicator#recv} can be overtaken by another thread's receive).
 *
 * <pre>{@code
 * MatchedMessage m = comm.mprobe(Communicator.ANY_SOURCE, 7);
 * long n = m.status().count(DataType.DOUBLE);      // the whole message, as its sender sent it
 * try (HostBuffer b = HostBuffer.allocate(m.status().byteCount())) {
 *     m.recv(b, n, DataType.DOUBLE);
 * }
 * }</pre>
 *
 * <p>Every matched message must be received (its sender may be waiting for it). Receiving it a
 * second time throws {@link MessageAlreadyReceivedException};
 * a receive rejected for a bad argument (null buffer, too small a buffer for {@code count},
 * closed communicator, ...) does not count, and the message can still be received.
 */
public interface MatchedMessage {
    /**
     * What the probe found: source, tag and the byte count of the whole message (for
     * {@link Status#count(DataType)}), the same before and after the receive.
     */
    Status status();

    /**
     * Receives the message into {@code buffer}, up to {@code count} elements of {@code type}, with
     * the checks and semantics of {@link Communicator#recv}: host or device memory (as the
     * communicator supports), {@link BufferTooSmallException} when {@code buffer} holds fewer than
     * {@code count} elements, {@link DataTypeMismatchException} when the message is not whole
     * elements of {@code type}. A message longer than {@code count} elements is received whole:
     * the buffer gets its first {@code count} elements and {@link TruncationException} is thrown;
     * the message is received either way.
     *
     * @return the status of the receive (the same source, tag and byte count as {@link #status()})
     * @throws MessageAlreadyReceivedException when the message was received before
     */
    Status recv(Buffer buffer, long count, DataType type);

    /**
     * Starts the receive of {@link #recv} and returns at once; the buffer must not be read until
     * the request completes. A message longer than {@code count} elements is received at once, and
     * the request completes by throwing {@link TruncationException} from {@link Request#waitFor()}
     * and {@link Request#test()}. The request cannot be cancelled: the message is already matched
     * ({@link Request#cancel()} completes it and returns false).
     *
     * @throws MessageAlreadyReceivedException when the message was received before
     */
    Request irecv(Buffer buffer, long count, DataType type);

    /** True once {@link #recv} or {@link #irecv} took the message (whether or not that receive has completed). */
    boolean isReceived();
}
