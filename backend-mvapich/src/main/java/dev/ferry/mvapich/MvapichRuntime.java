// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Settings;
import dev.ferry.mpi.Mpi;
import dev.ferry.mpi.MpiFamily;
import dev.ferry.mpi.MpiLibrary;
import dev.ferry.mpi.MpiLibraryLocator;
import dev.ferry.mpi.MpichConstants;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ferry.FerryException;
import dev.ferry.MpiException;
import dev.ferry.ThreadLevel;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.MpiLifecycle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The process's MPICH-family MPI, initialized once: {@code MPI_Init_thread} asking for
 * MPI_THREAD_MULTIPLE, {@code MPI_ERRORS_RETURN} on MPI_COMM_WORLD, library version and family
 * member, tag bound, CUDA support; and the mapping of Ferry's types, operators and errors. MPI is
 * finalized at exit through {@link MpiLifecycle} (or aborted after an uncaught exception).
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
final class MvapichRuntime implements MpiLifecycle.Binding {
    private static MvapichRuntime instance;
    private static Throwable failure;

    final Path library;
    final String foundBy;
    final LibraryVersion version;
    final int threadLevel;
    final boolean ownsInit;
    final int worldRank;
    final int worldSize;
    final int tagUpperBound;
    final GpuSupport.Answer cuda;
    /** Why device reductions go through host copies, or null when they go to MPI. */
    final String deviceReductionStaging;
    /** Why device gathers and scatters go through host copies, or null when they go to MPI. */
    final String deviceTreeStaging;
    /** How the library's symbols are visible to other libraries, and why, for the report. */
    final String symbolScope;
    /** Why device buffers are refused although the library is CUDA-aware ({@link SharedGpuCheck}), or null. */
    final String sharedGpu;
    /** Why sendRecv is made of MPI_Irecv + MPI_Isend instead of MPI_Sendrecv ({@link SplitSendRecv}), or null. */
    final String splitSendRecv;

    private MvapichRuntime() {
        MpiLibraryLocator.Located lib = Mpi.library();
        this.library = lib.path();
        this.foundBy = lib.how();
        this.version = LibraryVersion.parse(libraryVersion());
        Mpi.Scratch s = Mpi.scratch();
        check("MPI_Finalized", Mpi.finalized(s.int0));
        if (s.int0() != 0) {
            throw new FerryException("MPI was already finalized in this process (" + version.name() + "); it cannot be initialized again: "
                    + "open Ferry before anything finalizes MPI, and call Ferry.shutdown() only at the end");
        }
        check("MPI_Initialized", Mpi.initialized(s.int0));
        boolean owns = s.int0() == 0;
        if (owns) {
            // MPICH's MPI_THREAD_* values are ThreadLevel's ordinals (checked against mpi.h by MpichConstantsTest)
            ThreadLevel wanted = ThreadLevel.requested();
            int rc = Mpi.initThread(MemorySegment.NULL, MemorySegment.NULL, wanted.ordinal(), s.int0);
            if (rc != MpichConstants.MPI_SUCCESS) {
                throw error("MPI_Init_thread(" + wanted.mpiName() + ") of " + version.name() + " at " + library, rc);
            }
        } else {
            check("MPI_Query_thread", Mpi.queryThread(s.int0)); // the application initialized MPI itself
        }
        this.ownsInit = owns;
        this.threadLevel = s.int0();
        check("MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)",
                Mpi.commSetErrhandler(Mpi.ABI.commWorld, Mpi.ABI.errorsReturn));
        check("MPI_Comm_rank(MPI_COMM_WORLD)", Mpi.commRank(Mpi.ABI.commWorld, s.int0));
        this.worldRank = s.int0();
        check("MPI_Comm_size(MPI_COMM_WORLD)", Mpi.commSize(Mpi.ABI.commWorld, s.int0));
        this.worldSize = s.int0();
        Mpi.recordNodeSplit(worldRank);
        this.tagUpperBound = tagUpperBound();
        this.cuda = GpuSupport.ask(version, System.getenv());
        this.deviceReductionStaging = DeviceReductionStaging.decide(Settings.process(), version, cuda.cudaAware());
        this.deviceTreeStaging = DeviceReductionStaging.decideTrees(version, cuda.cudaAware());
        this.symbolScope = symbolScope(lib);
        this.sharedGpu = SharedGpuCheck.applies(Settings.process(), version, cuda.cudaAware()) ? SharedGpuCheck.run(version, worldSize) : null;
        this.splitSendRecv = SplitSendRecv.decide(Settings.process(), version);
    }

    /** Whether device buffers go straight to this library: it is CUDA-aware, CUDA works here, and no known fault stops it. */
    boolean takesDeviceBuffers() {
        return cuda.cudaAware() && Cuda.isAvailable() && sharedGpu == null;
    }

    /** CUDA free functions that CUDA-aware MPICH builds define to keep their IPC handle cache right. */
    private static final List<String> CUDA_FREE_INTERPOSERS = List.of("cuMemFree_v2", "cuMemFree", "cudaFree");

    /**
     * CUDA-aware MPICH (and MVAPICH) define {@code cuMemFree}/{@code cudaFree} themselves, to hear
     * about freed device memory (their CUDA IPC handle caches must forget it). In a C program
     * libmpi comes before libcuda in the global scope, so every free goes through them; loaded
     * RTLD_LOCAL into a JVM, JCuda's frees would bypass them. So, when the library is CUDA-aware
     * and defines such functions, it is made global right after MPI_Init (not before: some MPICH
     * versions set the functions' targets up only in MPI_Init when their GPU support is on).
     */
    private String symbolScope(MpiLibraryLocator.Located lib) {
        String mode = MpiLibrary.rtldMode(MpiFamily.MPICH_ABI);
        if (mode.equals("true")) {
            return "RTLD_GLOBAL (-Dferry.mvapich.rtldGlobal=true)";
        }
        List<String> defined = new ArrayList<>();
        for (String name : CUDA_FREE_INTERPOSERS) {
            lib.lookup().find(name).flatMap(MpiLibraryLocator::definingFile)
                    .filter(f -> sameFile(f, lib.path()))
                    .ifPresent(f -> defined.add(name));
        }
        if (defined.isEmpty()) {
            return "RTLD_LOCAL (the library defines no CUDA free functions)";
        }
        if (mode.equals("false")) {
            return "RTLD_LOCAL (-Dferry.mvapich.rtldGlobal=false): frees of device memory by Ferry bypass the library's " + defined;
        }
        if (!cuda.cudaAware()) {
            return "RTLD_LOCAL (its GPU support is off, so its " + defined + " stay unused)";
        }
        if (MpiLibraryLocator.promoteToGlobal(lib.path())) {
            return "RTLD_GLOBAL after MPI_Init, so that its " + defined + " see the frees of device buffers (its CUDA IPC cache stays right)";
        }
        return "RTLD_LOCAL (promotion to RTLD_GLOBAL failed): frees of device memory by Ferry bypass the library's " + defined;
    }

    private static boolean sameFile(Path a, Path b) {
        try {
            return a.toRealPath().equals(b.toRealPath());
        } catch (java.io.IOException | RuntimeException e) {
            return a.getFileName() != null && a.getFileName().equals(b.getFileName());
        }
    }

    /** The runtime, initializing MPI on first call; throws with the original cause if that failed. */
    static synchronized MvapichRuntime get() {
        if (instance == null && failure == null) {
            try {
                instance = new MvapichRuntime();
                if (instance.ownsInit) {
                    MpiLifecycle.register(instance);
                }
            } catch (RuntimeException | LinkageError e) {
                failure = e;
            }
        }
        if (failure != null) {
            throw failure instanceof FerryException f ? f : new FerryException("the MPICH-family MPI could not be initialized: " + failure, failure);
        }
        return instance;
    }

    private static String libraryVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(2L * MpichConstants.MPI_MAX_LIBRARY_VERSION_STRING + 1);
            MemorySegment len = a.allocate(JAVA_INT);
            check("MPI_Get_library_version", Mpi.getLibraryVersion(buf, len));
            return buf.getString(0);
        }
    }

    /** MPI_TAG_UB of MPI_COMM_WORLD: the attribute is a pointer to the int. */
    private static int tagUpperBound() {
        Mpi.Scratch s = Mpi.scratch();
        check("MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB)",
                Mpi.commGetAttr(Mpi.ABI.commWorld, MpichConstants.MPI_TAG_UB, s.pointer, s.int1));
        if (s.int1() == 0) {
            return 32767; // the standard's guaranteed minimum
        }
        MemorySegment value = s.pointer.get(ADDRESS, 0);
        return value.address() == 0 ? 32767 : value.reinterpret(4).get(JAVA_INT, 0);
    }

    @Override
    public ThreadLevel threadLevel() {
        return ThreadLevel.values()[Math.max(0, Math.min(threadLevel, ThreadLevel.values().length - 1))];
    }

    /** One line for reports: "MPI_THREAD_MULTIPLE". */
    String threadLevelName() {
        return switch (threadLevel) {
            case MpichConstants.MPI_THREAD_MULTIPLE -> "MPI_THREAD_MULTIPLE";
            case MpichConstants.MPI_THREAD_SERIALIZED -> "MPI_THREAD_SERIALIZED (use Ferry from one thread at a time)";
            case MpichConstants.MPI_THREAD_FUNNELED -> "MPI_THREAD_FUNNELED (use Ferry from the thread that opened it)";
            case MpichConstants.MPI_THREAD_SINGLE -> "MPI_THREAD_SINGLE (use Ferry from the thread that opened it)";
            default -> "thread level " + threadLevel;
        };
    }

    /** MPI_Wtime: seconds since some time in the past. */
    static double wtime() {
        return Mpi.wtime();
    }

    // ---- mapping ---------------------------------------------------------------------------

    /** Throws the MPI error of {@code rc} unless it is MPI_SUCCESS. */
    static void check(String operation, int rc) {
        Mpi.check(operation, rc);
    }

    /** The exception for error code {@code code} of {@code operation} (see {@link Mpi#error}). */
    static MpiException error(String operation, int code) {
        return Mpi.error(operation, code);
    }

    // ---- MpiLifecycle.Binding ----------------------------------------------------------------

    @Override
    public String name() {
        return version.name();
    }

    @Override
    public int worldRank() {
        return worldRank;
    }

    @Override
    public void finalizeMpi() {
        check("MPI_Finalize", Mpi.finalizeMpi());
    }

    @Override
    public void abort(int code) {
        try {
            Mpi.abort(Mpi.ABI.commWorld, code);
        } finally {
            Runtime.getRuntime().halt(code); // MPI_Abort should not return
        }
    }
}
