package dev.ferry.mvapich;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Ferry;
import dev.ferry.FerryException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The native binding: one {@link MethodHandle} per MPI function, in static finals so that the JIT
 * treats them as constants, and one static method per function that calls it with exact types.
 * Loading the class locates and loads the library ({@link MpiLibraryLocator}); only the provider's
 * probe touches it, after it made sure that this process belongs to the MPICH family. When the
 * library cannot be loaded, every handle is null and {@link #unavailabilityCause()} says why.
 *
 * <p>Choices, for speed:
 * <ul>
 *   <li>Buffer addresses (the {@code void *buf} arguments) are passed as {@code JAVA_LONG}: on the
 *       LP64 ABIs Ferry runs on (x86-64 System V, AArch64) a pointer and a 64-bit integer travel in
 *       the same register, and no {@link MemorySegment} is made per call (device addresses have no
 *       segment anyway). Out-parameters are per-thread {@link Scratch} segments, allocated once.</li>
 *   <li>{@link Linker.Option#critical critical} (no thread-state transition) is used only for
 *       calls that neither block nor take MPICH's global lock: {@code MPI_Comm_rank},
 *       {@code MPI_Comm_size}, {@code MPI_Get_count}, {@code MPI_Error_class}, {@code MPI_Wtime}.
 *       Not for {@code MPI_Isend}/{@code MPI_Irecv}/{@code MPI_Test}: they are short, but under
 *       MPI_THREAD_MULTIPLE they enter the library's critical section, which another thread may
 *       hold in a blocking progress loop, and a critical call that waits there would hold up every
 *       GC safepoint of the JVM. Blocking calls ({@code MPI_Recv}, {@code MPI_Wait}, collectives)
 *       are ordinary downcalls: the thread is in native state, so GC proceeds while it waits.</li>
 * </ul>
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
final class MpichAbi {
    private MpichAbi() {
    }

    static {
        if (ADDRESS.byteSize() != 8) {
            throw new ExceptionInInitializerError("backend mvapich needs a 64-bit platform (pointers of 8 bytes)");
        }
    }

    /** Collects the library and the first failure while the handles below are made, in textual order. */
    private static final class Binder {
        final Linker linker = Linker.nativeLinker();
        MpiLibraryLocator.Located library;
        final List<String> missing = new ArrayList<>();
        Throwable failure;

        Binder() {
            try {
                NativeEnvironment.prepareForJvm();
                library = MpiLibraryLocator.locate(
                        MpiLibraryLocator.candidates(Ferry::setting, System.getenv(), MpiLibraryLocator.launcherExecutable()),
                        rtldMode().equals("true"));
            } catch (RuntimeException | LinkageError e) {
                failure = e;
            }
        }

        MethodHandle required(String name, FunctionDescriptor fd, Linker.Option... options) {
            MethodHandle h = optional(name, fd, options);
            if (h == null && library != null) {
                missing.add(name);
            }
            return h;
        }

        MethodHandle optional(String name, FunctionDescriptor fd, Linker.Option... options) {
            if (library == null) {
                return null;
            }
            Optional<MemorySegment> symbol = library.lookup().find(name);
            return symbol.map(s -> linker.downcallHandle(s, fd, options)).orElse(null);
        }

        Throwable failure() {
            if (failure == null && !missing.isEmpty()) {
                failure = new FerryException(library.path() + " lacks " + String.join(", ", missing)
                        + ": it is not an MPI-3 library of the MPICH ABI (MPICH >= 3.1, MVAPICH2 >= 2.0, Intel MPI >= 5.0); "
                        + "name another with -Dferry.mvapich.lib");
            }
            return failure;
        }
    }

    /**
     * {@code ferry.mvapich.rtldGlobal}: {@code auto} (default: load RTLD_LOCAL, promote to
     * RTLD_GLOBAL after MPI_Init when the library is CUDA-aware and interposes CUDA's free
     * functions), {@code true} (load RTLD_GLOBAL) or {@code false} (never global).
     */
    static String rtldMode() {
        String v = Ferry.setting("ferry.mvapich.rtldGlobal", "auto").toLowerCase(Locale.ROOT);
        return v.equals("true") || v.equals("false") ? v : "auto";
    }

    private static final Binder B = new Binder();
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);

    private static FunctionDescriptor ints(int args) {
        return FunctionDescriptor.of(JAVA_INT, Collections.nCopies(args, JAVA_INT).toArray(new MemoryLayout[0]));
    }

    // ---- environment -------------------------------------------------------------------------
    private static final MethodHandle INIT_THREAD = B.required("MPI_Init_thread", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle INITIALIZED = B.required("MPI_Initialized", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle FINALIZED = B.required("MPI_Finalized", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle FINALIZE = B.required("MPI_Finalize", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle QUERY_THREAD = B.required("MPI_Query_thread", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle GET_LIBRARY_VERSION = B.required("MPI_Get_library_version", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle WTIME = B.required("MPI_Wtime", FunctionDescriptor.of(JAVA_DOUBLE), CRITICAL);
    private static final MethodHandle ABORT = B.required("MPI_Abort", ints(2));
    private static final MethodHandle COMM_SET_ERRHANDLER = B.required("MPI_Comm_set_errhandler", ints(2));
    private static final MethodHandle ERROR_STRING = B.required("MPI_Error_string", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle ERROR_CLASS = B.required("MPI_Error_class", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), CRITICAL);
    private static final MethodHandle GET_COUNT = B.required("MPI_Get_count", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), CRITICAL);
    private static final MethodHandle COMM_GET_ATTR = B.required("MPI_Comm_get_attr", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle COMM_RANK = B.required("MPI_Comm_rank", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), CRITICAL);
    private static final MethodHandle COMM_SIZE = B.required("MPI_Comm_size", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), CRITICAL);

    // ---- point to point ----------------------------------------------------------------------
    private static final MethodHandle SEND = B.required("MPI_Send",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle RECV = B.required("MPI_Recv",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle ISEND = B.required("MPI_Isend",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle IRECV = B.required("MPI_Irecv",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle SENDRECV = B.required("MPI_Sendrecv",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                    JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle WAIT = B.required("MPI_Wait", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle TEST = B.required("MPI_Test", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

    // ---- collectives -------------------------------------------------------------------------
    private static final MethodHandle BARRIER = B.required("MPI_Barrier", ints(1));
    private static final MethodHandle BCAST = B.required("MPI_Bcast",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SCATTER = B.required("MPI_Scatter",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle GATHER = B.required("MPI_Gather",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ALLGATHER = B.required("MPI_Allgather",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ALLTOALL = B.required("MPI_Alltoall",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle REDUCE = B.required("MPI_Reduce",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ALLREDUCE = B.required("MPI_Allreduce",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));

    // ---- communicators -----------------------------------------------------------------------
    private static final MethodHandle COMM_SPLIT = B.required("MPI_Comm_split", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle COMM_DUP = B.required("MPI_Comm_dup", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle COMM_FREE = B.required("MPI_Comm_free", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle COMM_SPLIT_TYPE = B.optional("MPI_Comm_split_type", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));

    // ---- GPU support (MPICH >= 4.0; absent elsewhere) ----------------------------------------
    private static final MethodHandle GPU_QUERY_SUPPORT = B.optional("MPIX_GPU_query_support", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle QUERY_CUDA_SUPPORT = B.optional("MPIX_Query_cuda_support", FunctionDescriptor.of(JAVA_INT));

    private static final Throwable FAILURE = B.failure();
    private static final MpiLibraryLocator.Located LIBRARY = FAILURE == null ? B.library : null;

    /** Null when the library is loaded and complete; else why not. */
    static Throwable unavailabilityCause() {
        return FAILURE;
    }

    /** The loaded library; throws with the cause when there is none. */
    static MpiLibraryLocator.Located library() {
        if (FAILURE != null) {
            throw FAILURE instanceof FerryException f ? f : new FerryException(FAILURE.getMessage(), FAILURE);
        }
        return LIBRARY;
    }

    static boolean hasGpuQuerySupport() {
        return GPU_QUERY_SUPPORT != null;
    }

    static boolean hasQueryCudaSupport() {
        return QUERY_CUDA_SUPPORT != null;
    }

    private static RuntimeException rethrow(String function, Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new FerryException(function + ": native call failed: " + t, t);
    }

    // ---- per-thread out-parameters -----------------------------------------------------------

    /**
     * Out-parameters of one thread: an {@code MPI_Status}, two ints, a request handle and a
     * pointer, carved once from a small segment that lives as long as the thread uses it.
     */
    static final class Scratch {
        final MemorySegment status;
        final MemorySegment int0;
        final MemorySegment int1;
        final MemorySegment request;
        final MemorySegment pointer;

        private Scratch() {
            MemorySegment all = Arena.ofAuto().allocate(64, 8);
            status = all.asSlice(0, MpichConstants.SIZEOF_MPI_STATUS);
            int0 = all.asSlice(24, 4);
            int1 = all.asSlice(28, 4);
            request = all.asSlice(32, MpichConstants.SIZEOF_MPI_REQUEST);
            pointer = all.asSlice(40, 8);
        }

        int int0() {
            return int0.get(JAVA_INT, 0);
        }

        int int1() {
            return int1.get(JAVA_INT, 0);
        }

        int source() {
            return status.get(JAVA_INT, MpichConstants.OFFSETOF_MPI_STATUS_MPI_SOURCE);
        }

        int tag() {
            return status.get(JAVA_INT, MpichConstants.OFFSETOF_MPI_STATUS_MPI_TAG);
        }

        int request() {
            return request.get(JAVA_INT, 0);
        }

        void request(int handle) {
            request.set(JAVA_INT, 0, handle);
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** This thread's out-parameters. */
    static Scratch scratch() {
        return SCRATCH.get();
    }

    // ---- calls: exact types, return codes left to the caller ---------------------------------

    static int initThread(int required, MemorySegment provided) {
        try {
            return (int) INIT_THREAD.invokeExact(MemorySegment.NULL, MemorySegment.NULL, required, provided);
        } catch (Throwable t) {
            throw rethrow("MPI_Init_thread", t);
        }
    }

    static int initialized(MemorySegment flag) {
        try {
            return (int) INITIALIZED.invokeExact(flag);
        } catch (Throwable t) {
            throw rethrow("MPI_Initialized", t);
        }
    }

    static int finalized(MemorySegment flag) {
        try {
            return (int) FINALIZED.invokeExact(flag);
        } catch (Throwable t) {
            throw rethrow("MPI_Finalized", t);
        }
    }

    static int finalizeMpi() {
        try {
            return (int) FINALIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPI_Finalize", t);
        }
    }

    static int queryThread(MemorySegment provided) {
        try {
            return (int) QUERY_THREAD.invokeExact(provided);
        } catch (Throwable t) {
            throw rethrow("MPI_Query_thread", t);
        }
    }

    static int getLibraryVersion(MemorySegment version, MemorySegment length) {
        try {
            return (int) GET_LIBRARY_VERSION.invokeExact(version, length);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_library_version", t);
        }
    }

    static double wtime() {
        try {
            return (double) WTIME.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPI_Wtime", t);
        }
    }

    static int abort(int comm, int code) {
        try {
            return (int) ABORT.invokeExact(comm, code);
        } catch (Throwable t) {
            throw rethrow("MPI_Abort", t);
        }
    }

    static int commSetErrhandler(int comm, int errhandler) {
        try {
            return (int) COMM_SET_ERRHANDLER.invokeExact(comm, errhandler);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_set_errhandler", t);
        }
    }

    static int errorString(int code, MemorySegment string, MemorySegment length) {
        try {
            return (int) ERROR_STRING.invokeExact(code, string, length);
        } catch (Throwable t) {
            throw rethrow("MPI_Error_string", t);
        }
    }

    static int errorClass(int code, MemorySegment cls) {
        try {
            return (int) ERROR_CLASS.invokeExact(code, cls);
        } catch (Throwable t) {
            throw rethrow("MPI_Error_class", t);
        }
    }

    static int getCount(MemorySegment status, int datatype, MemorySegment count) {
        try {
            return (int) GET_COUNT.invokeExact(status, datatype, count);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_count", t);
        }
    }

    static int commGetAttr(int comm, int keyval, MemorySegment value, MemorySegment flag) {
        try {
            return (int) COMM_GET_ATTR.invokeExact(comm, keyval, value, flag);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_get_attr", t);
        }
    }

    static int commRank(int comm, MemorySegment rank) {
        try {
            return (int) COMM_RANK.invokeExact(comm, rank);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_rank", t);
        }
    }

    static int commSize(int comm, MemorySegment size) {
        try {
            return (int) COMM_SIZE.invokeExact(comm, size);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_size", t);
        }
    }

    static int send(long buf, int count, int datatype, int dest, int tag, int comm) {
        try {
            return (int) SEND.invokeExact(buf, count, datatype, dest, tag, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Send", t);
        }
    }

    static int recv(long buf, int count, int datatype, int source, int tag, int comm, MemorySegment status) {
        try {
            return (int) RECV.invokeExact(buf, count, datatype, source, tag, comm, status);
        } catch (Throwable t) {
            throw rethrow("MPI_Recv", t);
        }
    }

    static int isend(long buf, int count, int datatype, int dest, int tag, int comm, MemorySegment request) {
        try {
            return (int) ISEND.invokeExact(buf, count, datatype, dest, tag, comm, request);
        } catch (Throwable t) {
            throw rethrow("MPI_Isend", t);
        }
    }

    static int irecv(long buf, int count, int datatype, int source, int tag, int comm, MemorySegment request) {
        try {
            return (int) IRECV.invokeExact(buf, count, datatype, source, tag, comm, request);
        } catch (Throwable t) {
            throw rethrow("MPI_Irecv", t);
        }
    }

    static int sendrecv(long sendbuf, int sendcount, int sendtype, int dest, int sendtag,
                        long recvbuf, int recvcount, int recvtype, int source, int recvtag, int comm, MemorySegment status) {
        try {
            return (int) SENDRECV.invokeExact(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                    comm, status);
        } catch (Throwable t) {
            throw rethrow("MPI_Sendrecv", t);
        }
    }

    static int await(MemorySegment request, MemorySegment status) {
        try {
            return (int) WAIT.invokeExact(request, status);
        } catch (Throwable t) {
            throw rethrow("MPI_Wait", t);
        }
    }

    static int test(MemorySegment request, MemorySegment flag, MemorySegment status) {
        try {
            return (int) TEST.invokeExact(request, flag, status);
        } catch (Throwable t) {
            throw rethrow("MPI_Test", t);
        }
    }

    static int barrier(int comm) {
        try {
            return (int) BARRIER.invokeExact(comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Barrier", t);
        }
    }

    static int bcast(long buf, int count, int datatype, int root, int comm) {
        try {
            return (int) BCAST.invokeExact(buf, count, datatype, root, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Bcast", t);
        }
    }

    static int scatter(long sendbuf, int sendcount, int sendtype, long recvbuf, int recvcount, int recvtype, int root, int comm) {
        try {
            return (int) SCATTER.invokeExact(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Scatter", t);
        }
    }

    static int gather(long sendbuf, int sendcount, int sendtype, long recvbuf, int recvcount, int recvtype, int root, int comm) {
        try {
            return (int) GATHER.invokeExact(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Gather", t);
        }
    }

    static int allgather(long sendbuf, int sendcount, int sendtype, long recvbuf, int recvcount, int recvtype, int comm) {
        try {
            return (int) ALLGATHER.invokeExact(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Allgather", t);
        }
    }

    static int alltoall(long sendbuf, int sendcount, int sendtype, long recvbuf, int recvcount, int recvtype, int comm) {
        try {
            return (int) ALLTOALL.invokeExact(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Alltoall", t);
        }
    }

    static int reduce(long sendbuf, long recvbuf, int count, int datatype, int op, int root, int comm) {
        try {
            return (int) REDUCE.invokeExact(sendbuf, recvbuf, count, datatype, op, root, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Reduce", t);
        }
    }

    static int allreduce(long sendbuf, long recvbuf, int count, int datatype, int op, int comm) {
        try {
            return (int) ALLREDUCE.invokeExact(sendbuf, recvbuf, count, datatype, op, comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Allreduce", t);
        }
    }

    static int commSplit(int comm, int color, int key, MemorySegment newcomm) {
        try {
            return (int) COMM_SPLIT.invokeExact(comm, color, key, newcomm);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_split", t);
        }
    }

    /** {@code MPI_Comm_split_type} (MPI-3); -1 when the library lacks it. */
    static int commSplitType(int comm, int splitType, int key, int info, MemorySegment newcomm) {
        if (COMM_SPLIT_TYPE == null) return -1;
        try {
            return (int) COMM_SPLIT_TYPE.invokeExact(comm, splitType, key, info, newcomm);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_split_type", t);
        }
    }

    static int commDup(int comm, MemorySegment newcomm) {
        try {
            return (int) COMM_DUP.invokeExact(comm, newcomm);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_dup", t);
        }
    }

    static int commFree(MemorySegment comm) {
        try {
            return (int) COMM_FREE.invokeExact(comm);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_free", t);
        }
    }

    /** {@code MPIX_GPU_query_support}; only when {@link #hasGpuQuerySupport()}. */
    static int gpuQuerySupport(int gpuType, MemorySegment isSupported) {
        try {
            return (int) GPU_QUERY_SUPPORT.invokeExact(gpuType, isSupported);
        } catch (Throwable t) {
            throw rethrow("MPIX_GPU_query_support", t);
        }
    }

    /** {@code MPIX_Query_cuda_support}; only when {@link #hasQueryCudaSupport()}. */
    static int queryCudaSupport() {
        try {
            return (int) QUERY_CUDA_SUPPORT.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPIX_Query_cuda_support", t);
        }
    }
}
