// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.MpiException;
import dev.ferry.ReduceOp;
import dev.ferry.ThreadLevel;
import dev.ferry.TruncationException;
import dev.ferry.spi.LoadedLibraries;
import dev.ferry.spi.MpiLifecycle;
import java.nio.file.Path;
import java.util.Optional;
import mpi.Datatype;
import mpi.MPI;
import mpi.MPIException;
import mpi.Op;

/**
 * The process's Open MPI, initialized once through mpi.jar (the Java-bindings path of backend
 * ompi): thread level, library version and path, CUDA support, tag bound, and the mapping of
 * Ferry's types, operators and errors. The shared FFM binding ({@link dev.ferry.mpi.Mpi}) is bound
 * to the same loaded libmpi for MPIX_Query_cuda_support and for messages over the piece limit.
 */
final class OmpiRuntime implements MpiLifecycle.Binding {
    private static OmpiRuntime instance;
    private static Throwable failure;

    final int threadLevel;
    final String version;
    final Optional<Path> library;
    final CudaSupportQuery.Answer cuda;
    final int tagUpperBound;
    final boolean ownsInit;
    final int worldRank;
    final java.util.List<String> workarounds;

    private OmpiRuntime() throws MPIException {
        this.workarounds = KnownBugWorkarounds.apply();
        boolean owns = true;
        int provided;
        try {
            provided = MPI.InitThread(new String[0], mpiLevel(ThreadLevel.requested()));
        } catch (MPIException e) {
            if (e.getMessage() == null || !e.getMessage().contains("already initialized")) {
                throw e;
            }
            owns = false; // the application initialized MPI through mpi.jar itself
            provided = MPI.queryThread();
        }
        this.ownsInit = owns;
        this.threadLevel = provided;
        MPI.COMM_WORLD.setErrhandler(MPI.ERRORS_RETURN);
        this.version = OmpiFfmRuntime.firstLine(MPI.getLibVersion());
        this.library = LoadedLibraries.find("libmpi.so");
        this.cuda = CudaSupportQuery.ask(); // through the FFM binding, on the libmpi that libmpi_java loaded
        Object ub = MPI.COMM_WORLD.getAttr(MPI.TAG_UB);
        this.tagUpperBound = ub instanceof Number n ? n.intValue() : 32767;
        this.worldRank = MPI.COMM_WORLD.getRank();
        nodeSplit();
    }

    /** MPI's view of the node-local rank: the world split by shared memory ({@link dev.ferry.spi.NodeLocal}). */
    private static void nodeSplit() {
        try {
            mpi.Intracomm node = MPI.COMM_WORLD.splitType(mpi.Comm.TYPE_SHARED, MPI.COMM_WORLD.getRank(), MPI.INFO_NULL);
            try {
                dev.ferry.spi.NodeLocal.record(node.getRank(), node.getSize(), dev.ferry.spi.Launch.detect());
            } finally {
                node.free();
            }
        } catch (MPIException | RuntimeException e) {
            dev.ferry.spi.NodeLocal.failed("MPI_Comm_split_type failed: " + e.getMessage());
        }
    }

    /** The runtime, initializing MPI on first call; throws with the original cause if that failed. */
    static synchronized OmpiRuntime get() {
        if (instance == null && failure == null) {
            try {
                instance = new OmpiRuntime();
                if (instance.ownsInit) {
                    MpiLifecycle.register(instance);
                }
            } catch (MPIException | RuntimeException | LinkageError e) {
                failure = e;
            }
        }
        if (failure != null) {
            throw new FerryException("Open MPI could not be initialized: " + failure, failure);
        }
        return instance;
    }

    String threadLevelName() {
        return threadLevel().mpiName() + (ThreadLevel.requested() == ThreadLevel.MULTIPLE ? "" : " (asked for " + ThreadLevel.requested().mpiName() + " by ferry.threads)");
    }

    private static int mpiLevel(ThreadLevel l) {
        return switch (l) {
            case MULTIPLE -> MPI.THREAD_MULTIPLE;
            case SERIALIZED -> MPI.THREAD_SERIALIZED;
            case FUNNELED -> MPI.THREAD_FUNNELED;
            case SINGLE -> MPI.THREAD_SINGLE;
        };
    }

    @Override
    public ThreadLevel threadLevel() {
        if (threadLevel == MPI.THREAD_MULTIPLE) return ThreadLevel.MULTIPLE;
        if (threadLevel == MPI.THREAD_SERIALIZED) return ThreadLevel.SERIALIZED;
        if (threadLevel == MPI.THREAD_FUNNELED) return ThreadLevel.FUNNELED;
        return ThreadLevel.SINGLE;
    }

    static Datatype type(DataType t) {
        return switch (t) {
            case BYTE -> MPI.BYTE;
            case INT -> MPI.INT;
            case LONG -> MPI.LONG;
            case FLOAT -> MPI.FLOAT;
            case DOUBLE -> MPI.DOUBLE;
            case SHORT -> MPI.SHORT;
            case FLOAT16, BFLOAT16 -> MPI.SHORT; // carried as 16-bit integers; never reduced by MPI (BindingTransport reduces them)
            case SHORT_INT -> MPI.SHORT_INT;
            case INT_INT -> MPI.INT2;
            case LONG_INT -> MPI.LONG_INT;
            case FLOAT_INT -> MPI.FLOAT_INT;
            case DOUBLE_INT -> MPI.DOUBLE_INT;
        };
    }

    static Op op(ReduceOp op) {
        return switch (op) {
            case SUM -> MPI.SUM;
            case MAX -> MPI.MAX;
            case MIN -> MPI.MIN;
            case PROD -> MPI.PROD;
            case LAND -> MPI.LAND;
            case LOR -> MPI.LOR;
            case BAND -> MPI.BAND;
            case BOR -> MPI.BOR;
            case BXOR -> MPI.BXOR;
            case MINLOC -> MPI.MINLOC;
            case MAXLOC -> MPI.MAXLOC;
        };
    }

    /** Translates an mpi.jar exception into Ferry's, naming the operation. */
    static MpiException error(String operation, MPIException e) {
        int cls = e.getErrorClass();
        if (cls == MPI.ERR_TRUNCATE) {
            return new TruncationException(operation + " (message longer than the receive count)", e.getErrorCode(), cls, e.getMessage(), e);
        }
        return new MpiException(operation, e.getErrorCode(), cls, e.getMessage(), e);
    }

    // ---- MpiLifecycle.Binding ------------------------------------------------------------

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
        try {
            MPI.Finalize();
        } catch (MPIException e) {
            throw error("MPI_Finalize", e);
        }
    }

    @Override
    public void abort(int code) {
        try {
            MPI.COMM_WORLD.abort(code);
        } catch (MPIException e) {
            Runtime.getRuntime().halt(code);
        }
    }
}
