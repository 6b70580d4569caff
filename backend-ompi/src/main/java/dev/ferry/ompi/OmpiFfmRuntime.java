// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ferry.FerryException;
import dev.ferry.ThreadLevel;
import dev.ferry.mpi.Mpi;
import dev.ferry.mpi.MpiLibraryLocator;
import dev.ferry.spi.MpiLifecycle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * The process's Open MPI initialized through the shared java.lang.foreign binding ({@link Mpi} on
 * {@code libmpi.so.40}), without mpi.jar: Open MPI's workarounds ({@link KnownBugWorkarounds})
 * before {@code MPI_Init_thread}, MPI_ERRORS_RETURN on MPI_COMM_WORLD, library version, tag bound,
 * CUDA support ({@code MPIX_Query_cuda_support} through the same binding), and registration with
 * {@link MpiLifecycle} for MPI_Finalize at exit.
 */
final class OmpiFfmRuntime implements MpiLifecycle.Binding {
    private static OmpiFfmRuntime instance;
    private static Throwable failure;

    final Path library;
    final String foundBy;
    final String version;
    final String fullVersion;
    final int threadLevel;
    final boolean ownsInit;
    final int worldRank;
    final int worldSize;
    final int tagUpperBound;
    final CudaSupportQuery.Answer cuda;
    final List<String> workarounds;

    private OmpiFfmRuntime() {
        MpiLibraryLocator.Located lib = Mpi.library();
        this.library = lib.path();
        this.foundBy = lib.how();
        this.workarounds = KnownBugWorkarounds.apply();
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Finalized", Mpi.finalized(s.int0));
        if (s.int0() != 0) {
            throw new FerryException("MPI was already finalized in this process; it cannot be initialized again: "
                    + "open Ferry before anything finalizes MPI, and call Ferry.shutdown() only at the end");
        }
        Mpi.check("MPI_Initialized", Mpi.initialized(s.int0));
        boolean owns = s.int0() == 0;
        if (owns) {
            ThreadLevel wanted = ThreadLevel.requested();
            int rc = Mpi.initThread(MemorySegment.NULL, MemorySegment.NULL, Mpi.ABI.threadLevel(wanted), s.int0);
            if (rc != 0) {
                throw Mpi.error("MPI_Init_thread(" + wanted.mpiName() + ") of Open MPI at " + library, rc);
            }
        } else {
            Mpi.check("MPI_Query_thread", Mpi.queryThread(s.int0));
        }
        this.ownsInit = owns;
        this.threadLevel = s.int0();
        Mpi.check("MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)", Mpi.commSetErrhandler(Mpi.ABI.commWorld, Mpi.ABI.errorsReturn));
        Mpi.check("MPI_Comm_rank(MPI_COMM_WORLD)", Mpi.commRank(Mpi.ABI.commWorld, s.int0));
        this.worldRank = s.int0();
        Mpi.recordNodeSplit(worldRank);
        Mpi.check("MPI_Comm_size(MPI_COMM_WORLD)", Mpi.commSize(Mpi.ABI.commWorld, s.int0));
        this.worldSize = s.int0();
        this.fullVersion = libraryVersion();
        this.version = firstLine(fullVersion);
        this.tagUpperBound = tagUpperBound();
        this.cuda = CudaSupportQuery.ask();
    }

    /** "Open MPI v4.1.4" from the library version string (shared with the mpi.jar path; no mpi.jar class is touched here). */
    static String firstLine(String s) {
        if (s == null) return "Open MPI (version unknown)";
        int nl = s.indexOf('\n');
        String line = (nl < 0 ? s : s.substring(0, nl)).trim();
        int comma = line.indexOf(',');
        return comma < 0 ? line : line.substring(0, comma);
    }

    static synchronized OmpiFfmRuntime get() {
        if (instance == null && failure == null) {
            try {
                instance = new OmpiFfmRuntime();
                if (instance.ownsInit) {
                    MpiLifecycle.register(instance);
                }
            } catch (RuntimeException | LinkageError e) {
                failure = e;
            }
        }
        if (failure != null) {
            throw failure instanceof FerryException f ? f : new FerryException("Open MPI could not be initialized: " + failure, failure);
        }
        return instance;
    }

    private static String libraryVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(2L * Mpi.ABI.maxLibraryVersionString + 1);
            MemorySegment len = a.allocate(JAVA_INT);
            Mpi.check("MPI_Get_library_version", Mpi.getLibraryVersion(buf, len));
            return buf.getString(0);
        }
    }

    private static int tagUpperBound() {
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB)", Mpi.commGetAttr(Mpi.ABI.commWorld, Mpi.ABI.tagUb, s.pointer, s.int1));
        if (s.int1() == 0) {
            return 32767;
        }
        MemorySegment value = s.pointer.get(ADDRESS, 0);
        return value.address() == 0 ? 32767 : value.reinterpret(4).get(JAVA_INT, 0);
    }

    @Override
    public ThreadLevel threadLevel() {
        return Mpi.ABI.threadLevel(threadLevel);
    }

    String threadLevelName() {
        return threadLevel().mpiName() + (ThreadLevel.requested() == ThreadLevel.MULTIPLE ? "" : " (asked for " + ThreadLevel.requested().mpiName() + " by ferry.threads)");
    }

    @Override
    public String name() {
        return version;
    }

    @Override
    public int worldRank() {
        return worldRank;
    }

    @Override
    public void finalizeMpi() {
        Mpi.check("MPI_Finalize", Mpi.finalizeMpi());
    }

    @Override
    public void abort(int code) {
        try {
            Mpi.abort(Mpi.ABI.commWorld, code);
        } finally {
            Runtime.getRuntime().halt(code);
        }
    }
}
