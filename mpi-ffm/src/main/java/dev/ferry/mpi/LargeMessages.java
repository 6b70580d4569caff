// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.Communicator;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.mpi.BindingTransport.Region;

/**
 * Point-to-point messages longer than an {@code int} count of bytes may carry (or than a
 * binding's piece limit), each as ONE MPI message on a communicator given by its C handle:
 * <ul>
 *   <li>MPI-4 large-count calls ({@code MPI_Send_c}, {@code MPI_Recv_c}, {@code MPI_Isend_c},
 *       {@code MPI_Irecv_c}, {@code MPI_Get_count_c}) with {@code MPI_BYTE}, where the library
 *       exports them (MPICH &ge; 4.0, Open MPI &ge; 5.0 with big-count support) and
 *       {@code ferry.mpi.largeCount} is not {@code false};</li>
 *   <li>otherwise a derived datatype of exactly the message's bytes: {@code MPI_Type_contiguous}
 *       of {@code piece} bytes, {@code k} times, then the remainder as {@code MPI_BYTE}s, joined by
 *       {@code MPI_Type_create_struct} with {@code MPI_Aint} displacements; count 1. Its type map is
 *       a sequence of MPI_BYTEs, so a receive of more bytes matches a shorter message (and
 *       {@code MPI_Get_elements_x} gives the bytes received), and a receive of fewer bytes fails
 *       with MPI_ERR_TRUNCATE, as with MPI_BYTE counts.</li>
 * </ul>
 * Used by {@link FfmTransport} and, for the mpi.jar path of backend ompi, with mpi.jar's own
 * communicator handle on the same loaded library.
 */
public final class LargeMessages {
    private LargeMessages() {
    }

    /** Whether the large-count calls are used ({@code ferry.mpi.largeCount}, default {@code auto}: when exported). */
    public static boolean usesLargeCounts() {
        return Mpi.hasLargeCounts() && !Settings.process().get(FerrySettings.MPI_LARGE_COUNT).equals("false");
    }

    /** How large messages travel, for reports. */
    public static String how() {
        return usesLargeCounts() ? "MPI-4 large-count calls (MPI_Send_c...)"
                : "one derived datatype per message (MPI_Type_contiguous + MPI_Type_create_struct)"
                + (Mpi.hasLargeCounts() ? ", -Dferry.mpi.largeCount=false" : ": the library has no MPI_Send_c");
    }

    static int source(int s) {
        return s == Communicator.ANY_SOURCE ? Mpi.ABI.anySource : s;
    }

    static int tag(int t) {
        return t == Communicator.ANY_TAG ? Mpi.ABI.anyTag : t;
    }

    /** A committed datatype of exactly {@code bytes} bytes (see the class comment); free it with {@link #free}. */
    static long byteType(long bytes, long piece) {
        long k = bytes / piece, rem = bytes % piece;
        if (k > Integer.MAX_VALUE) {
            throw new dev.ferry.InvalidCountException(bytes + " bytes are more than 2^31-1 blocks of " + piece + " bytes");
        }
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Type_contiguous(" + piece + ", MPI_BYTE)", Mpi.typeContiguous((int) piece, Mpi.ABI.byte_, s.handle));
        long block = s.handle();
        try {
            int n = rem == 0 ? 1 : 2;
            s.blocks.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, (int) k);
            s.blocks.set(java.lang.foreign.ValueLayout.JAVA_INT, 4, (int) rem);
            s.displacements.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 0L);
            s.displacements.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, k * piece);
            s.type(0, block);
            s.type(1, Mpi.ABI.byte_);
            Mpi.check("MPI_Type_create_struct (" + bytes + " bytes)", Mpi.typeCreateStruct(n, s.blocks, s.displacements, s.types, s.handle));
            Mpi.check("MPI_Type_commit", Mpi.typeCommit(s.handle));
            return s.handle();
        } finally {
            s.handle(block);
            Mpi.typeFree(s.handle);
        }
    }

    static void free(long type) {
        Mpi.Scratch s = Mpi.scratch();
        s.handle(type);
        Mpi.typeFree(s.handle);
    }

    public static void send(long comm, Region r, int dest, int tag, long piece) {
        int rc;
        if (usesLargeCounts()) {
            rc = Mpi.sendC(r.address(), r.bytes(), Mpi.ABI.byte_, dest, tag, comm);
        } else {
            long t = byteType(r.bytes(), piece);
            try {
                rc = Mpi.send(r.address(), 1, t, dest, tag, comm);
            } finally {
                free(t);
            }
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Send of " + r.bytes() + " bytes to rank " + dest + " tag " + tag, rc);
        }
    }

    public static Status recv(long comm, Region r, int source, int tag, long piece) {
        // matched first, as FfmTransport.mpiRecv does: a truncated rendezvous message must not hang its sender
        Mpi.Scratch s = Mpi.scratch();
        String what = "MPI_Mprobe/MPI_Mrecv of up to " + r.bytes() + " bytes from rank " + source + " tag " + tag;
        int rc = Mpi.mprobe(source(source), tag(tag), comm, s.handle, s.status);
        if (rc != 0) {
            throw Mpi.error(what, rc);
        }
        Mpi.check("MPI_Get_elements_x", Mpi.getElementsX(s.status, Mpi.ABI.byte_, s.count));
        long n = s.count();
        int from = s.source(), withTag = s.tag();
        if (n > r.bytes()) {
            try (dev.ferry.HostBuffer whole = dev.ferry.HostBuffer.allocate(n)) {
                receive(s, whole.address(), n, piece, what);
                if (r.kind().isHostAccessible()) {
                    java.lang.foreign.MemorySegment.copy(whole.segment(), 0, java.lang.foreign.MemorySegment.ofAddress(r.address()).reinterpret(r.bytes()), 0, r.bytes());
                } else {
                    dev.ferry.spi.DeviceSupport.get().copyToDevice(r.address(), whole, r.bytes());
                }
            }
            throw new dev.ferry.TruncationException(what + " (message of " + n + " bytes from rank " + from + " tag " + withTag
                    + " is longer than the receive count of " + r.bytes() + " bytes)", Mpi.ABI.errTruncate, Mpi.ABI.errTruncate,
                    "MPI_ERR_TRUNCATE: message truncated", null);
        }
        receive(s, r.address(), n, piece, what);
        return new Status(from, withTag, n);
    }

    /** MPI_Mrecv of the message matched in {@code s} ({@code bytes} of it) into {@code address}, as one derived datatype. */
    static void receive(Mpi.Scratch s, long address, long bytes, long piece, String what) {
        long message = s.handle(); // byteType uses the same scratch handle
        long t = byteType(Math.max(bytes, 1), piece);
        s.handle(message);
        try {
            int rc = Mpi.mrecv(address, bytes == 0 ? 0 : 1, t, s.handle, s.status);
            if (rc != 0) {
                throw Mpi.error(what, rc);
            }
        } finally {
            free(t);
        }
    }

    public static Request isend(long comm, Region r, int dest, int tag, long piece) {
        Mpi.Scratch s = Mpi.scratch();
        int rc;
        if (usesLargeCounts()) {
            rc = Mpi.isendC(r.address(), r.bytes(), Mpi.ABI.byte_, dest, tag, comm, s.handle);
        } else {
            long t = byteType(r.bytes(), piece);
            rc = Mpi.isend(r.address(), 1, t, dest, tag, comm, s.handle);
            long request = s.handle();
            free(t); // MPI keeps it alive until the send completes
            s.handle(request);
        }
        if (rc != 0) {
            throw Mpi.error("MPI_Isend of " + r.bytes() + " bytes to rank " + dest + " tag " + tag, rc);
        }
        return new FfmRequest(s.handle(), dest, tag, new Status(dest, tag, r.bytes()), 0);
    }

    public static Request irecv(long comm, Region r, int source, int tag, long piece) {
        Mpi.Scratch s = Mpi.scratch();
        if (usesLargeCounts()) {
            int rc = Mpi.irecvC(r.address(), r.bytes(), Mpi.ABI.byte_, source(source), tag(tag), comm, s.handle);
            if (rc != 0) {
                throw Mpi.error("MPI_Irecv of up to " + r.bytes() + " bytes from rank " + source + " tag " + tag, rc);
            }
            return new FfmRequest(s.handle(), source, tag, null, FfmRequest.LARGE_COUNT);
        }
        long t = byteType(r.bytes(), piece);
        int rc = Mpi.irecv(r.address(), 1, t, source(source), tag(tag), comm, s.handle);
        if (rc != 0) {
            free(t);
            throw Mpi.error("MPI_Irecv of up to " + r.bytes() + " bytes from rank " + source + " tag " + tag, rc);
        }
        // the datatype is kept until completion: MPI_Get_elements_x needs it to count the bytes
        return new FfmRequest(s.handle(), source, tag, null, t);
    }

    /**
     * The status in this thread's scratch with its byte count: MPI_Get_count_c(MPI_BYTE) when
     * {@code type} is 0 (large counts), MPI_Get_elements_x(type) for a derived type.
     */
    static Status status(Mpi.Scratch s, long type) {
        int rc = type == 0 ? Mpi.getCountC(s.status, Mpi.ABI.byte_, s.count) : Mpi.getElementsX(s.status, type, s.count);
        Mpi.check(type == 0 ? "MPI_Get_count_c" : "MPI_Get_elements_x", rc);
        return new Status(s.source(), s.tag(), s.count());
    }
}
