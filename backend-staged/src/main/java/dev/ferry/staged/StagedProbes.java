// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.MatchedMessage;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.Optional;

/**
 * Probes of a staged communicator: they report the user's message, whose size an eager message
 * shows by its own and a first piece only in its header (see {@link Wire}).
 *
 * <ul>
 * <li>A probe asks the inner MPI (iprobe on the user communicator). An eager message is left there:
 *     its size is the message's. A first piece must be received for its header: the probe takes
 *     every message of that sender off MPI, in order, up to and including the first piece
 *     (improbe with ANY_TAG from that sender, then a receive of exactly that matched message), and
 *     keeps them in {@link Arrivals}, where later receives and probes look first. Taking the
 *     earlier messages too keeps MPI's order for a later ANY_TAG receive from that sender.</li>
 * <li>A matched probe (mprobe) takes the message itself off MPI (improbe with the asked source and
 *     tag, or the first match in {@link Arrivals}); it belongs to the returned
 *     {@link MatchedMessage}, whose receive continues the staged protocol from it.</li>
 * <li>The blocking forms are transfers of {@link Progress} that complete when a probe succeeds:
 *     while they wait, every staged transfer progresses, as in any blocking staged call.</li>
 * </ul>
 * Everything runs under the progress lock, which serializes staged's use of the inner MPI.
 */
final class StagedProbes {
    private final StagedTransport comm;
    private final Arrivals arrivals = new Arrivals();

    StagedProbes(StagedTransport comm) {
        this.comm = comm;
    }

    Arrivals arrivals() {
        return arrivals;
    }

    private long eager() {
        return comm.runtime().settings.eager();
    }

    /** Receives the matched message whole into a slot-sized buffer of its own. */
    private Arrivals.Arrived takeOff(MatchedMessage m) {
        Status st = m.status();
        long n = st.byteCount();
        long piece = Wire.firstPiece(eager());
        if (n > piece) {
            throw new FerryException("staged: a message of " + n + " bytes from rank " + st.source() + " tag " + st.tag() + " is longer than a first piece ("
                    + piece + " bytes): do all ranks use backend staged with the same ferry.staged.eager?");
        }
        HostBuffer data = HostBuffer.allocate(Wire.slot(eager()));
        try {
            m.recv(data, n, DataType.BYTE);
            long total = n <= eager() ? n : Wire.Header.read(data.segment(), st.source()).total();
            return new Arrivals.Arrived(st.source(), st.tag(), n, total, data);
        } catch (RuntimeException e) {
            data.close();
            throw e;
        }
    }

    /** One attempt of a probe (under the lock): the status of the user's message, or empty. */
    Optional<Status> tryProbe(int source, int tag) {
        Arrivals.Arrived kept = arrivals.peek(source, tag);
        if (kept != null) {
            return Optional.of(kept.status());
        }
        Optional<Status> found = comm.user().iprobe(source, tag);
        if (found.isEmpty() || found.get().byteCount() <= eager()) {
            return found;
        }
        int from = found.get().source();
        while (true) {
            Optional<MatchedMessage> next = comm.user().improbe(from, Communicator.ANY_TAG);
            if (next.isEmpty()) {
                return Optional.empty(); // cannot happen while staged alone uses the user communicator; probe again
            }
            Arrivals.Arrived a = takeOff(next.get());
            arrivals.add(a);
            if (a.matches(source, tag)) {
                return Optional.of(a.status());
            }
        }
    }

    /** One attempt of a matched probe (under the lock): the message, or null. */
    Arrivals.Arrived tryMatch(int source, int tag) {
        Arrivals.Arrived kept = arrivals.take(source, tag);
        if (kept != null) {
            return kept;
        }
        Optional<MatchedMessage> m = comm.user().improbe(source, tag);
        return m.isEmpty() ? null : takeOff(m.get());
    }

    // ---- the four calls ------------------------------------------------------------------------

    Status probe(int source, int tag) {
        Waiting op = new Waiting(source, tag, false);
        comm.runtime().progress.start(op);
        return comm.runtime().progress.await(op);
    }

    Optional<Status> iprobe(int source, int tag) {
        Progress p = comm.runtime().progress;
        p.poll(); // a staged call advances every transfer
        return p.locked(() -> tryProbe(source, tag));
    }

    MatchedMessage mprobe(int source, int tag) {
        Waiting op = new Waiting(source, tag, true);
        comm.runtime().progress.start(op);
        comm.runtime().progress.await(op);
        return new Message(op.matched);
    }

    Optional<MatchedMessage> improbe(int source, int tag) {
        Progress p = comm.runtime().progress;
        p.poll();
        Arrivals.Arrived a = p.locked(() -> tryMatch(source, tag));
        return a == null ? Optional.empty() : Optional.of(new Message(a));
    }

    /** Frees what no receive took. */
    void close() {
        comm.runtime().progress.locked(() -> {
            arrivals.close();
            return null;
        });
    }

    /** A blocking probe as a transfer: it completes when an attempt succeeds. */
    private final class Waiting extends Progress.Op {
        private final int source;
        private final int tag;
        private final boolean match;
        Arrivals.Arrived matched;

        Waiting(int source, int tag, boolean match) {
            this.source = source;
            this.tag = tag;
            this.match = match;
        }

        @Override
        void post() {
        }

        @Override
        boolean advance() {
            if (match) {
                matched = tryMatch(source, tag);
                if (matched != null) {
                    complete(matched.status());
                }
            } else {
                tryProbe(source, tag).ifPresent(this::complete);
            }
            return false;
        }

        @Override
        void cleanup(boolean failed) {
        }

        @Override
        String describe() {
            return "staged " + (match ? "mprobe" : "probe") + " from " + (source < 0 ? "any rank" : "rank " + source) + " tag " + (tag < 0 ? "any" : Integer.toString(tag));
        }
    }

    /** A matched message: its receive is a staged receive that starts from the message taken off MPI. */
    private final class Message implements MatchedMessage {
        private final Arrivals.Arrived arrived;
        private volatile boolean received;

        Message(Arrivals.Arrived arrived) {
            this.arrived = arrived;
        }

        @Override
        public Status status() {
            return arrived.status();
        }

        @Override
        public boolean isReceived() {
            return received;
        }

        @Override
        public Status recv(Buffer buffer, long count, DataType type) {
            received = true;
            StagedReceive op = new StagedReceive(comm, buffer, type.bytes(count), type, arrived.source(), arrived.tag(), arrived);
            comm.runtime().progress.start(op);
            return comm.runtime().progress.await(op);
        }

        @Override
        public Request irecv(Buffer buffer, long count, DataType type) {
            received = true;
            StagedReceive op = new StagedReceive(comm, buffer, type.bytes(count), type, arrived.source(), arrived.tag(), arrived);
            comm.runtime().progress.start(op);
            return new Progress.OpRequest(comm.runtime().progress, op);
        }
    }
}
