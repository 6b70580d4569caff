// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.mpi.BindingTransport.Probed;
import dev.ferry.mpi.BindingTransport.Region;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Probes and matched receives on a communicator given by its C handle (MPI_Probe, MPI_Iprobe,
 * MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv), for {@link FfmTransport} and for the mpi.jar
 * path of backend ompi (whose messages over the piece limit take the same route). A probed byte
 * count comes from MPI_Get_elements_x with MPI_BYTE, an {@code MPI_Count}: right for messages sent
 * as MPI_BYTE counts, large counts or one derived datatype of bytes alike. A matched message's
 * handle travels as a {@code Long} in {@link Probed#handle()}.
 */
public final class Probes {
    private Probes() {
    }

    private static Status probed(Mpi.Scratch s, String op) {
        Mpi.check(op + ": MPI_Get_elements_x", Mpi.getElementsX(s.status, Mpi.ABI.byte_, s.count));
        return new Status(s.source(), s.tag(), s.count());
    }

    private static String what(String call, int source, int tag) {
        return call + " from rank " + (source < 0 ? "ANY_SOURCE" : Integer.toString(source)) + " tag " + (tag < 0 ? "ANY_TAG" : Integer.toString(tag));
    }

    /** MPI_Probe. */
    public static Status probe(long comm, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        int rc = Mpi.probe(LargeMessages.source(source), LargeMessages.tag(tag), comm, s.status);
        if (rc != 0) {
            throw Mpi.error(what("MPI_Probe", source, tag), rc);
        }
        return probed(s, "MPI_Probe");
    }

    /** MPI_Iprobe. */
    public static Optional<Status> iprobe(long comm, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        s.int0.set(JAVA_INT, 0, 0);
        int rc = Mpi.iprobe(LargeMessages.source(source), LargeMessages.tag(tag), comm, s.int0, s.status);
        if (rc != 0) {
            throw Mpi.error(what("MPI_Iprobe", source, tag), rc);
        }
        return s.int0() == 0 ? Optional.empty() : Optional.of(probed(s, "MPI_Iprobe"));
    }

    /** MPI_Mprobe. */
    public static Probed mprobe(long comm, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        int rc = Mpi.mprobe(LargeMessages.source(source), LargeMessages.tag(tag), comm, s.handle, s.status);
        if (rc != 0) {
            throw Mpi.error(what("MPI_Mprobe", source, tag), rc);
        }
        return new Probed(probed(s, "MPI_Mprobe"), s.handle());
    }

    /** MPI_Improbe. */
    public static Optional<Probed> improbe(long comm, int source, int tag) {
        Mpi.Scratch s = Mpi.scratch();
        s.int0.set(JAVA_INT, 0, 0);
        int rc = Mpi.improbe(LargeMessages.source(source), LargeMessages.tag(tag), comm, s.int0, s.handle, s.status);
        if (rc != 0) {
            throw Mpi.error(what("MPI_Improbe", source, tag), rc);
        }
        return s.int0() == 0 ? Optional.empty() : Optional.of(new Probed(probed(s, "MPI_Improbe"), s.handle()));
    }

    /**
     * MPI_Mrecv of the whole matched message ({@code into.bytes()} of it): MPI_BYTE up to
     * {@code piece} bytes, else one derived datatype of exactly its bytes ({@link LargeMessages}).
     */
    public static Status mrecv(long message, Status status, Region into, long piece) {
        Mpi.Scratch s = Mpi.scratch();
        long n = into.bytes();
        s.handle(message);
        if (n <= piece) {
            int rc = Mpi.mrecv(into.address(), (int) n, Mpi.ABI.byte_, s.handle, s.status);
            if (rc != 0) {
                throw Mpi.error(matched("MPI_Mrecv", status), rc);
            }
        } else {
            LargeMessages.receive(s, into.address(), n, piece, matched("MPI_Mrecv", status));
        }
        return new Status(status.source(), status.tag(), n);
    }

    /** MPI_Imrecv, as {@link #mrecv}; the request's status carries the source, tag and byte count. */
    public static Request imrecv(long message, Status status, Region into, long piece) {
        Mpi.Scratch s = Mpi.scratch();
        long n = into.bytes();
        long type = n <= piece ? 0 : LargeMessages.byteType(n, piece);
        // the message handle in/out in `pointer`, the request out in `handle`
        handle(s.pointer, message);
        int rc = Mpi.imrecv(into.address(), type == 0 ? (int) n : 1, type == 0 ? Mpi.ABI.byte_ : type, s.pointer, s.handle);
        if (rc != 0) {
            if (type != 0) LargeMessages.free(type);
            throw Mpi.error(matched("MPI_Imrecv", status), rc);
        }
        if (type != 0) {
            long request = s.handle();
            LargeMessages.free(type); // MPI keeps it alive until the receive completes
            s.handle(request);
        }
        // the byte count is known: the message was matched whole
        return new FfmRequest(s.handle(), status.source(), status.tag(), null, 0, new Status(status.source(), status.tag(), n));
    }

    /** The receive of a matched message named in a failure: built only then. */
    private static String matched(String call, Status status) {
        return call + " of the message matched from rank " + status.source() + " tag " + status.tag();
    }

    private static void handle(MemorySegment at, long value) {
        if (Mpi.ABI.handleBytes == 4) {
            at.set(JAVA_INT, 0, (int) value);
        } else {
            at.set(JAVA_LONG, 0, value);
        }
    }
}
