// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.MatchedMessage;
import dev.ferry.MessageAlreadyReceivedException;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.spi.CallTracker.Op;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The front of a backend's {@link MatchedMessage}: the checks of a receive (as
 * {@link CheckedCommunicator#recv} makes them), the one-receive rule, tracking for the threading
 * rules and the watchdog, and buffer pins; a receive into a buffer shorter than the message is
 * made here, once for every backend (see {@link #irecv}).
 */
final class CheckedMessage implements MatchedMessage {
    private final CheckedCommunicator comm;
    private final MatchedMessage inner;
    private final Status status;
    private final AtomicBoolean received = new AtomicBoolean();

    CheckedMessage(CheckedCommunicator comm, MatchedMessage inner) {
        this.comm = comm;
        this.inner = inner;
        this.status = inner.status();
    }

    @Override
    public Status status() {
        return status;
    }

    @Override
    public boolean isReceived() {
        return received.get();
    }

    private void check(String op, Buffer buffer, long count, DataType type) {
        comm.ensureOpen(op);
        comm.checkData(op, "buffer", buffer, count, type, 1);
        CheckedCommunicator.checkWritable(op, "buffer", buffer);
        if (!received.compareAndSet(false, true)) {
            throw new MessageAlreadyReceivedException(op + ": " + this + " was received already; a matched message is received once");
        }
    }

    @Override
    public Status recv(Buffer buffer, long count, DataType type) {
        check("MatchedMessage.recv", buffer, count, type);
        // a virtual thread waits for a message that fits without a long native call; a longer one is received
        // whole by the backend's recv, which waits for no other rank: its message has arrived
        boolean parked = Thread.currentThread().isVirtual() && type.bytes(count) >= status.byteCount();
        return comm.run(Op.MESSAGE_RECV, status.source(), status.tag(), -2, -2, count, type, () -> parked
                ? comm.parked(Op.MESSAGE_RECV, status.source(), status.tag(), count, type, inner.irecv(buffer, count, type), buffer)
                : inner.recv(buffer, count, type), buffer);
    }

    /**
     * A buffer shorter than the message: the message is received now, whole (the backend's
     * blocking receive of a matched message does that, so that no sender is left waiting for a
     * truncated rendezvous), and the request completes with its {@link dev.ferry.TruncationException}.
     */
    @Override
    public Request irecv(Buffer buffer, long count, DataType type) {
        check("MatchedMessage.irecv", buffer, count, type);
        if (type.bytes(count) >= status.byteCount()) {
            return comm.start(Op.MESSAGE_IRECV, status.source(), status.tag(), count, type, () -> inner.irecv(buffer, count, type), buffer);
        }
        Status got = null;
        RuntimeException failure = null;
        try {
            got = comm.run(Op.MESSAGE_RECV, status.source(), status.tag(), -2, -2, count, type, () -> inner.recv(buffer, count, type), buffer);
        } catch (RuntimeException e) {
            failure = e;
        }
        Request done = new Completed(got, failure);
        return comm.start(Op.MESSAGE_IRECV, status.source(), status.tag(), count, type, () -> done, buffer);
    }

    @Override
    public String toString() {
        return "matched message (source " + status.source() + ", tag " + status.tag() + ", " + status.byteCount() + " bytes) on " + comm;
    }

    /** A request that completed when it was made. */
    private record Completed(Status status, RuntimeException failure) implements Request {
        @Override
        public Status waitFor() {
            if (failure != null) {
                throw failure;
            }
            return status;
        }

        @Override
        public Optional<Status> test() {
            return Optional.of(waitFor());
        }
    }
}
