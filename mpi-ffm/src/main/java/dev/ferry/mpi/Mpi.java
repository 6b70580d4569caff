// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.Settings;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Ferry;
import dev.ferry.FerryException;
import dev.ferry.MpiException;
import dev.ferry.TruncationException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One binding of MPI's C API for both ABIs ({@link MpiFamily}): one {@link MethodHandle} per MPI
 * function, in static finals so that the JIT treats them as constants, and one static method per
 * function that calls it with exact types. Loading the class locates and loads the library of the
 * family asked for through {@link MpiLibrary#request} ({@link MpiLibraryLocator}); when it cannot
 * be loaded, every handle is null and {@link #unavailabilityCause()} says why.
 *
 * <p>Handles ({@code MPI_Comm}, {@code MPI_Datatype}, {@code MPI_Op}, {@code MPI_Errhandler}) are
 * {@code long} for callers whatever the ABI: the downcall is made with {@code JAVA_INT} for the
 * MPICH ABI (handles are ints) or {@code JAVA_LONG} for Open MPI (handles are pointers, which travel
 * like 64-bit integers on the LP64 ABIs Ferry runs on), then adapted with
 * {@link MethodHandles#explicitCastArguments} (long to int narrowing) so that each method below has
 * one signature. Handles written by MPI into out-parameters ({@code MPI_Comm *}, {@code MPI_Request *},
 * {@code MPI_Datatype *}) are read with {@link Scratch#handle}, which knows their size.
 *
 * <p>Choices, for speed:
 * <ul>
 *   <li>Buffer addresses (the {@code void *buf} arguments) are passed as {@code JAVA_LONG}: a
 *       pointer and a 64-bit integer travel in the same register, and no {@link MemorySegment} is
 *       made per call (device addresses have no segment anyway). Out-parameters are per-thread
 *       {@link Scratch} segments, allocated once.</li>
 *   <li>{@link Linker.Option#critical critical} (no thread-state transition) is used only for
 *       calls that neither block nor take the library's global lock: {@code MPI_Comm_rank},
 *       {@code MPI_Comm_size}, {@code MPI_Get_count}, {@code MPI_Get_count_c},
 *       {@code MPI_Get_elements_x}, {@code MPI_Error_class}, {@code MPI_Wtime}. Not for
 *       {@code MPI_Isend}/{@code MPI_Irecv}/{@code MPI_Test}: they are short, but under
 *       MPI_THREAD_MULTIPLE they enter the library's critical section, which another thread may
 *       hold in a blocking progress loop, and a critical call that waits there would hold up every
 *       GC safepoint of the JVM. Blocking calls ({@code MPI_Recv}, {@code MPI_Wait}, collectives)
 *       are ordinary downcalls: the thread is in native state, so GC proceeds while it waits.</li>
 * </ul>
 */
@SuppressWarnings("restricted") // native access is what this binding is for (run with --enable-native-access)
public final class Mpi {
    private Mpi() {
    }

    static {
        if (ADDRESS.byteSize() != 8) {
            throw new ExceptionInInitializerError("Ferry's MPI binding needs a 64-bit platform (pointers of 8 bytes)");
        }
    }

    /** Collects the library and the first failure while the handles below are made, in textual order. */
    private static final class Binder {
        final Linker linker = Linker.nativeLinker();
        final MpiFamily family = MpiLibrary.requested();
        MpiLibraryLocator.Located library;
        MpiAbi abi;
        final List<String> missing = new ArrayList<>();
        Throwable failure;

        Binder() {
            try {
                NativeEnvironment.prepareForJvm();
                library = MpiLibraryLocator.locate(family,
                        MpiLibraryLocator.candidates(family, Settings.process(), System.getenv(), MpiLibraryLocator.launcherExecutable()),
                        MpiLibrary.rtldMode(family).equals("true"));
                abi = family == MpiFamily.OPEN_MPI ? MpiAbi.openMpi(library.lookup()) : MpiAbi.mpich();
            } catch (RuntimeException | LinkageError e) {
                failure = e;
                library = null;
            }
        }

        /** Argument layouts: A pointer (MemorySegment), I int, L 64-bit integer or buffer address, H handle. */
        private MemoryLayout layout(char c) {
            return switch (c) {
                case 'A' -> ADDRESS;
                case 'I' -> JAVA_INT;
                case 'L' -> JAVA_LONG;
                case 'H' -> abi.handleBytes == 4 ? JAVA_INT : JAVA_LONG;
                default -> throw new IllegalArgumentException("signature letter " + c);
            };
        }

        private static Class<?> carrier(char c) {
            return switch (c) {
                case 'A' -> MemorySegment.class;
                case 'I' -> int.class;
                default -> long.class;
            };
        }

        MethodHandle required(String name, String signature, Linker.Option... options) {
            MethodHandle h = optional(name, signature, options);
            if (h == null && library != null) {
                missing.add(name);
            }
            return h;
        }

        MethodHandle optional(String name, String signature, Linker.Option... options) {
            if (library == null) {
                return null;
            }
            Optional<MemorySegment> symbol = library.lookup().find(name);
            if (symbol.isEmpty()) {
                return null;
            }
            MemoryLayout[] args = new MemoryLayout[signature.length()];
            Class<?>[] types = new Class<?>[signature.length()];
            for (int i = 0; i < args.length; i++) {
                args[i] = layout(signature.charAt(i));
                types[i] = carrier(signature.charAt(i));
            }
            MethodHandle h = linker.downcallHandle(symbol.get(), FunctionDescriptor.of(JAVA_INT, args), options);
            return MethodHandles.explicitCastArguments(h, MethodType.methodType(int.class, types));
        }

        MethodHandle wtime() {
            return library == null ? null : library.lookup().find("MPI_Wtime")
                    .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(JAVA_DOUBLE), CRITICAL)).orElse(null);
        }

        Throwable failure() {
            if (failure == null && !missing.isEmpty()) {
                failure = new FerryException(library.path() + " lacks " + String.join(", ", missing)
                        + (family == MpiFamily.MPICH_ABI
                        ? ": it is not an MPI-3 library of the MPICH ABI (MPICH >= 3.1, MVAPICH2 >= 2.0, Intel MPI >= 5.0); name another with -Dferry.mvapich.lib"
                        : ": it is not an MPI-3 Open MPI (>= 4.1); name another with -Dferry.ompi.lib"));
            }
            return failure;
        }
    }

    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    private static final Binder B = new Binder();

    private static final MethodHandle WTIME = B.wtime();
    private static final MethodHandle INIT_THREAD = B.required("MPI_Init_thread", "AAIA");
    private static final MethodHandle INITIALIZED = B.required("MPI_Initialized", "A");
    private static final MethodHandle FINALIZED = B.required("MPI_Finalized", "A");
    private static final MethodHandle FINALIZE = B.required("MPI_Finalize", "");
    private static final MethodHandle QUERY_THREAD = B.required("MPI_Query_thread", "A");
    private static final MethodHandle GET_LIBRARY_VERSION = B.required("MPI_Get_library_version", "AA");
    private static final MethodHandle ABORT = B.required("MPI_Abort", "HI");
    private static final MethodHandle COMM_SET_ERRHANDLER = B.required("MPI_Comm_set_errhandler", "HH");
    private static final MethodHandle ERROR_STRING = B.required("MPI_Error_string", "IAA");
    private static final MethodHandle ERROR_CLASS = B.required("MPI_Error_class", "IA", CRITICAL);
    private static final MethodHandle GET_COUNT = B.required("MPI_Get_count", "AHA", CRITICAL);
    private static final MethodHandle GET_ELEMENTS_X = B.required("MPI_Get_elements_x", "AHA", CRITICAL);
    private static final MethodHandle COMM_GET_ATTR = B.required("MPI_Comm_get_attr", "HIAA");
    private static final MethodHandle COMM_RANK = B.required("MPI_Comm_rank", "HA", CRITICAL);
    private static final MethodHandle COMM_SIZE = B.required("MPI_Comm_size", "HA", CRITICAL);
    private static final MethodHandle SEND = B.required("MPI_Send", "LIHIIH");
    private static final MethodHandle RECV = B.required("MPI_Recv", "LIHIIHA");
    private static final MethodHandle MPROBE = B.required("MPI_Mprobe", "IIHAA");
    private static final MethodHandle MRECV = B.required("MPI_Mrecv", "LIHAA");
    private static final MethodHandle PROBE = B.required("MPI_Probe", "IIHA");
    private static final MethodHandle IPROBE = B.required("MPI_Iprobe", "IIHAA");
    private static final MethodHandle IMPROBE = B.required("MPI_Improbe", "IIHAAA");
    private static final MethodHandle IMRECV = B.required("MPI_Imrecv", "LIHAA");
    private static final MethodHandle CANCEL = B.required("MPI_Cancel", "A");
    private static final MethodHandle TEST_CANCELLED = B.required("MPI_Test_cancelled", "AA");
    private static final MethodHandle ISEND = B.required("MPI_Isend", "LIHIIHA");
    private static final MethodHandle IRECV = B.required("MPI_Irecv", "LIHIIHA");
    private static final MethodHandle SENDRECV = B.required("MPI_Sendrecv", "LIHIILIHIIHA");
    private static final MethodHandle WAIT = B.required("MPI_Wait", "AA");
    private static final MethodHandle TEST = B.required("MPI_Test", "AAA");
    private static final MethodHandle BARRIER = B.required("MPI_Barrier", "H");
    private static final MethodHandle BCAST = B.required("MPI_Bcast", "LIHIH");
    private static final MethodHandle SCATTER = B.required("MPI_Scatter", "LIHLIHIH");
    private static final MethodHandle GATHER = B.required("MPI_Gather", "LIHLIHIH");
    private static final MethodHandle ALLGATHER = B.required("MPI_Allgather", "LIHLIHH");
    private static final MethodHandle ALLTOALL = B.required("MPI_Alltoall", "LIHLIHH");
    private static final MethodHandle REDUCE = B.required("MPI_Reduce", "LLIHHIH");
    private static final MethodHandle ALLREDUCE = B.required("MPI_Allreduce", "LLIHHH");
    private static final MethodHandle SCATTERV = B.required("MPI_Scatterv", "LAAHLIHIH");
    private static final MethodHandle GATHERV = B.required("MPI_Gatherv", "LIHLAAHIH");
    private static final MethodHandle ALLGATHERV = B.required("MPI_Allgatherv", "LIHLAAHH");
    private static final MethodHandle ALLTOALLV = B.required("MPI_Alltoallv", "LAAHLAAHH");
    private static final MethodHandle REDUCE_SCATTER_BLOCK = B.required("MPI_Reduce_scatter_block", "LLIHHH");
    private static final MethodHandle REDUCE_SCATTER = B.required("MPI_Reduce_scatter", "LLAHHH");
    private static final MethodHandle SCAN = B.required("MPI_Scan", "LLIHHH");
    private static final MethodHandle EXSCAN = B.required("MPI_Exscan", "LLIHHH");
    private static final MethodHandle COMM_SPLIT = B.required("MPI_Comm_split", "HIIA");
    private static final MethodHandle COMM_DUP = B.required("MPI_Comm_dup", "HA");
    private static final MethodHandle COMM_IDUP = B.required("MPI_Comm_idup", "HAA");
    private static final MethodHandle COMM_FREE = B.required("MPI_Comm_free", "A");
    private static final MethodHandle COMM_SPLIT_TYPE = B.optional("MPI_Comm_split_type", "HIIHA");
    private static final MethodHandle TYPE_CONTIGUOUS = B.required("MPI_Type_contiguous", "IHA");
    private static final MethodHandle TYPE_CREATE_STRUCT = B.required("MPI_Type_create_struct", "IAAAA");
    private static final MethodHandle TYPE_COMMIT = B.required("MPI_Type_commit", "A");
    private static final MethodHandle TYPE_FREE = B.required("MPI_Type_free", "A");
    private static final MethodHandle SEND_C = B.optional("MPI_Send_c", "LLHIIH");
    private static final MethodHandle RECV_C = B.optional("MPI_Recv_c", "LLHIIHA");
    private static final MethodHandle ISEND_C = B.optional("MPI_Isend_c", "LLHIIHA");
    private static final MethodHandle IRECV_C = B.optional("MPI_Irecv_c", "LLHIIHA");
    private static final MethodHandle GET_COUNT_C = B.optional("MPI_Get_count_c", "AHA", CRITICAL);
    private static final MethodHandle X_GPU_QUERY_SUPPORT = B.optional("MPIX_GPU_query_support", "IA");
    private static final MethodHandle X_QUERY_CUDA_SUPPORT = B.optional("MPIX_Query_cuda_support", "");
    private static final Throwable FAILURE = B.failure();
    private static final MpiLibraryLocator.Located LIBRARY = FAILURE == null ? B.library : null;
    /** The ABI of the loaded library; null when there is none. */
    public static final MpiAbi ABI = FAILURE == null ? B.abi : null;
    /** The family this binding was made for (asked through {@link MpiLibrary#request}). */
    public static final MpiFamily FAMILY = B.family;

    /** Null when the library is loaded and complete; else why not. */
    public static Throwable unavailabilityCause() {
        return FAILURE;
    }

    /** The loaded library; throws with the cause when there is none. */
    public static MpiLibraryLocator.Located library() {
        if (FAILURE != null) {
            throw FAILURE instanceof FerryException f ? f : new FerryException(FAILURE.getMessage(), FAILURE);
        }
        return LIBRARY;
    }

    /** Whether the library has MPI-4's large-count point-to-point calls ({@code MPI_Send_c} and friends). */
    public static boolean hasLargeCounts() {
        return SEND_C != null && RECV_C != null && ISEND_C != null && IRECV_C != null && GET_COUNT_C != null;
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
     * Out-parameters of one thread: an {@code MPI_Status}, two ints, a handle (request, communicator
     * or datatype), a pointer, an {@code MPI_Count}, and the small arrays of
     * {@code MPI_Type_create_struct}, carved once from a segment that lives as long as the thread uses it.
     */
    public static final class Scratch {
        public final MemorySegment status;
        public final MemorySegment int0;
        public final MemorySegment int1;
        public final MemorySegment handle;
        public final MemorySegment pointer;
        public final MemorySegment count;
        /** {@code int[2]}, {@code MPI_Aint[2]}, {@code MPI_Datatype[2]} for MPI_Type_create_struct. */
        public final MemorySegment blocks;
        public final MemorySegment displacements;
        public final MemorySegment types;
        private final int handleBytes;

        private Scratch() {
            MemorySegment all = Arena.ofAuto().allocate(128, 8);
            status = all.asSlice(0, ABI.statusBytes);
            int0 = all.asSlice(32, 4);
            int1 = all.asSlice(36, 4);
            handle = all.asSlice(40, 8);
            pointer = all.asSlice(48, 8);
            count = all.asSlice(56, 8);
            blocks = all.asSlice(64, 8);
            displacements = all.asSlice(72, 16);
            types = all.asSlice(88, 16);
            handleBytes = ABI.handleBytes;
        }

        public int int0() {
            return int0.get(JAVA_INT, 0);
        }

        public int int1() {
            return int1.get(JAVA_INT, 0);
        }

        public long count() {
            return count.get(JAVA_LONG, 0);
        }

        public int source() {
            return status.get(JAVA_INT, ABI.statusSource);
        }

        public int tag() {
            return status.get(JAVA_INT, ABI.statusTag);
        }

        /** The handle MPI wrote into {@link #handle} (sign-extended for the MPICH ABI's ints). */
        public long handle() {
            return handleBytes == 4 ? handle.get(JAVA_INT, 0) : handle.get(JAVA_LONG, 0);
        }

        public void handle(long value) {
            if (handleBytes == 4) {
                handle.set(JAVA_INT, 0, (int) value);
            } else {
                handle.set(JAVA_LONG, 0, value);
            }
        }

        /** Writes handle {@code value} at index {@code i} of {@link #types}. */
        public void type(int i, long value) {
            if (handleBytes == 4) {
                types.set(JAVA_INT, 4L * i, (int) value);
            } else {
                types.set(JAVA_LONG, 8L * i, value);
            }
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** This thread's out-parameters. */
    public static Scratch scratch() {
        return SCRATCH.get();
    }

    // ---- errors ------------------------------------------------------------------------------

    /** Throws the MPI error of {@code rc} unless it is MPI_SUCCESS. */
    public static void check(String operation, int rc) {
        if (rc != 0) {
            throw error(operation, rc);
        }
    }

    /**
     * The exception for error code {@code code} of {@code operation}: {@link TruncationException}
     * for MPI_ERR_TRUNCATE, else {@link MpiException}, with the library's error string.
     */
    public static MpiException error(String operation, int code) {
        int cls = code;
        String text;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = a.allocate(JAVA_INT);
            if (errorClass(code, c) == ABI.success) {
                cls = c.get(JAVA_INT, 0);
            }
            MemorySegment str = a.allocate(2L * ABI.maxErrorString + 1);
            MemorySegment len = a.allocate(JAVA_INT);
            text = errorString(code, str, len) == ABI.success ? str.getString(0).strip() : "MPI error " + code;
        } catch (RuntimeException e) {
            text = "MPI error " + code + " (its text could not be read: " + e + ")";
        }
        if (cls == ABI.errTruncate) {
            return new TruncationException(operation + " (message longer than the receive count)", code, cls, text, null);
        }
        return new MpiException(operation, code, cls, text, null);
    }

    // ---- calls: exact types, return codes left to the caller ---------------------------------

    public static double wtime() {
        try {
            return (double) WTIME.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPI_Wtime", t);
        }
    }

    public static int initThread(MemorySegment a0, MemorySegment a1, int a2, MemorySegment a3) {
        try {
            return (int) INIT_THREAD.invokeExact(a0, a1, a2, a3);
        } catch (Throwable t) {
            throw rethrow("MPI_Init_thread", t);
        }
    }

    public static int initialized(MemorySegment a0) {
        try {
            return (int) INITIALIZED.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Initialized", t);
        }
    }

    public static int finalized(MemorySegment a0) {
        try {
            return (int) FINALIZED.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Finalized", t);
        }
    }

    public static int finalizeMpi() {
        try {
            return (int) FINALIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPI_Finalize", t);
        }
    }

    public static int queryThread(MemorySegment a0) {
        try {
            return (int) QUERY_THREAD.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Query_thread", t);
        }
    }

    public static int getLibraryVersion(MemorySegment a0, MemorySegment a1) {
        try {
            return (int) GET_LIBRARY_VERSION.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_library_version", t);
        }
    }

    public static int abort(long a0, int a1) {
        try {
            return (int) ABORT.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Abort", t);
        }
    }

    public static int commSetErrhandler(long a0, long a1) {
        try {
            return (int) COMM_SET_ERRHANDLER.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_set_errhandler", t);
        }
    }

    public static int errorString(int a0, MemorySegment a1, MemorySegment a2) {
        try {
            return (int) ERROR_STRING.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Error_string", t);
        }
    }

    public static int errorClass(int a0, MemorySegment a1) {
        try {
            return (int) ERROR_CLASS.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Error_class", t);
        }
    }

    public static int getCount(MemorySegment a0, long a1, MemorySegment a2) {
        try {
            return (int) GET_COUNT.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_count", t);
        }
    }

    public static int getElementsX(MemorySegment a0, long a1, MemorySegment a2) {
        try {
            return (int) GET_ELEMENTS_X.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_elements_x", t);
        }
    }

    public static int commGetAttr(long a0, int a1, MemorySegment a2, MemorySegment a3) {
        try {
            return (int) COMM_GET_ATTR.invokeExact(a0, a1, a2, a3);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_get_attr", t);
        }
    }

    public static int commRank(long a0, MemorySegment a1) {
        try {
            return (int) COMM_RANK.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_rank", t);
        }
    }

    public static int commSize(long a0, MemorySegment a1) {
        try {
            return (int) COMM_SIZE.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_size", t);
        }
    }

    public static int send(long a0, int a1, long a2, int a3, int a4, long a5) {
        try {
            return (int) SEND.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Send", t);
        }
    }

    public static int recv(long a0, int a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) RECV.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Recv", t);
        }
    }

    /** {@code MPI_Mprobe(source, tag, comm, &message, &status)}. */
    public static int mprobe(int a0, int a1, long a2, MemorySegment a3, MemorySegment a4) {
        try {
            return (int) MPROBE.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Mprobe", t);
        }
    }

    /** {@code MPI_Mrecv(buf, count, type, &message, &status)}. */
    public static int mrecv(long a0, int a1, long a2, MemorySegment a3, MemorySegment a4) {
        try {
            return (int) MRECV.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Mrecv", t);
        }
    }

    public static int isend(long a0, int a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) ISEND.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Isend", t);
        }
    }

    public static int irecv(long a0, int a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) IRECV.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Irecv", t);
        }
    }

    public static int sendrecv(long a0, int a1, long a2, int a3, int a4, long a5, int a6, long a7, int a8, int a9, long a10, MemorySegment a11) {
        try {
            return (int) SENDRECV.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
        } catch (Throwable t) {
            throw rethrow("MPI_Sendrecv", t);
        }
    }

    public static int await(MemorySegment a0, MemorySegment a1) {
        try {
            return (int) WAIT.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Wait", t);
        }
    }

    public static int test(MemorySegment a0, MemorySegment a1, MemorySegment a2) {
        try {
            return (int) TEST.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Test", t);
        }
    }

    public static int barrier(long a0) {
        try {
            return (int) BARRIER.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Barrier", t);
        }
    }

    public static int bcast(long a0, int a1, long a2, int a3, long a4) {
        try {
            return (int) BCAST.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Bcast", t);
        }
    }

    public static int scatter(long a0, int a1, long a2, long a3, int a4, long a5, int a6, long a7) {
        try {
            return (int) SCATTER.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7);
        } catch (Throwable t) {
            throw rethrow("MPI_Scatter", t);
        }
    }

    public static int gather(long a0, int a1, long a2, long a3, int a4, long a5, int a6, long a7) {
        try {
            return (int) GATHER.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7);
        } catch (Throwable t) {
            throw rethrow("MPI_Gather", t);
        }
    }

    public static int allgather(long a0, int a1, long a2, long a3, int a4, long a5, long a6) {
        try {
            return (int) ALLGATHER.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Allgather", t);
        }
    }

    public static int alltoall(long a0, int a1, long a2, long a3, int a4, long a5, long a6) {
        try {
            return (int) ALLTOALL.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Alltoall", t);
        }
    }

    public static int reduce(long a0, long a1, int a2, long a3, long a4, int a5, long a6) {
        try {
            return (int) REDUCE.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Reduce", t);
        }
    }

    public static int allreduce(long a0, long a1, int a2, long a3, long a4, long a5) {
        try {
            return (int) ALLREDUCE.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Allreduce", t);
        }
    }

    public static int commSplit(long a0, int a1, int a2, MemorySegment a3) {
        try {
            return (int) COMM_SPLIT.invokeExact(a0, a1, a2, a3);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_split", t);
        }
    }

    public static int commDup(long a0, MemorySegment a1) {
        try {
            return (int) COMM_DUP.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_dup", t);
        }
    }

    /** {@code MPI_Comm_idup(comm, &newcomm, &request)}: both out-parameters must stay valid until the request completes. */
    public static int commIdup(long a0, MemorySegment a1, MemorySegment a2) {
        try {
            return (int) COMM_IDUP.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_idup", t);
        }
    }

    /** The handle at {@code at} (a communicator, request or datatype MPI wrote there), sign-extended for the MPICH ABI's ints. */
    public static long handleAt(MemorySegment at) {
        return ABI.handleBytes == 4 ? at.get(JAVA_INT, 0) : at.get(JAVA_LONG, 0);
    }

    /** {@code MPI_Comm_split_type(comm, type, key, info, &newcomm)} (MPI-3); -1 when the library lacks it. */
    public static int commSplitType(long a0, int a1, int a2, long a3, MemorySegment a4) {
        if (COMM_SPLIT_TYPE == null) {
            return -1;
        }
        try {
            return (int) COMM_SPLIT_TYPE.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_split_type", t);
        }
    }

    /**
     * MPI's view of the node-local rank after MPI_Init: the world split by shared memory, recorded
     * in {@link dev.ferry.spi.NodeLocal} (which confirms the launcher's, or stands in for it).
     */
    public static void recordNodeSplit(int worldRank) {
        Scratch s = scratch();
        int rc = commSplitType(ABI.commWorld, ABI.commTypeShared, worldRank, ABI.infoNull, s.handle);
        if (rc != ABI.success) {
            dev.ferry.spi.NodeLocal.failed(rc < 0 ? "the library has no MPI_Comm_split_type" : "MPI_Comm_split_type failed with " + rc);
            return;
        }
        long node = s.handle();
        check("MPI_Comm_rank(node)", commRank(node, s.int0));
        int rank = s.int0();
        check("MPI_Comm_size(node)", commSize(node, s.int0));
        dev.ferry.spi.NodeLocal.record(rank, s.int0(), dev.ferry.spi.Launch.detect());
        s.handle(node);
        check("MPI_Comm_free(node)", commFree(s.handle));
    }

    public static int commFree(MemorySegment a0) {
        try {
            return (int) COMM_FREE.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Comm_free", t);
        }
    }

    public static int typeContiguous(int a0, long a1, MemorySegment a2) {
        try {
            return (int) TYPE_CONTIGUOUS.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Type_contiguous", t);
        }
    }

    public static int typeCreateStruct(int a0, MemorySegment a1, MemorySegment a2, MemorySegment a3, MemorySegment a4) {
        try {
            return (int) TYPE_CREATE_STRUCT.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Type_create_struct", t);
        }
    }

    public static int typeCommit(MemorySegment a0) {
        try {
            return (int) TYPE_COMMIT.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Type_commit", t);
        }
    }

    public static int typeFree(MemorySegment a0) {
        try {
            return (int) TYPE_FREE.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Type_free", t);
        }
    }

    public static int sendC(long a0, long a1, long a2, int a3, int a4, long a5) {
        try {
            return (int) SEND_C.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Send_c", t);
        }
    }

    public static boolean hasSendC() {
        return SEND_C != null;
    }

    public static int recvC(long a0, long a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) RECV_C.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Recv_c", t);
        }
    }

    public static boolean hasRecvC() {
        return RECV_C != null;
    }

    public static int isendC(long a0, long a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) ISEND_C.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Isend_c", t);
        }
    }

    public static boolean hasIsendC() {
        return ISEND_C != null;
    }

    public static int irecvC(long a0, long a1, long a2, int a3, int a4, long a5, MemorySegment a6) {
        try {
            return (int) IRECV_C.invokeExact(a0, a1, a2, a3, a4, a5, a6);
        } catch (Throwable t) {
            throw rethrow("MPI_Irecv_c", t);
        }
    }

    public static boolean hasIrecvC() {
        return IRECV_C != null;
    }

    public static int getCountC(MemorySegment a0, long a1, MemorySegment a2) {
        try {
            return (int) GET_COUNT_C.invokeExact(a0, a1, a2);
        } catch (Throwable t) {
            throw rethrow("MPI_Get_count_c", t);
        }
    }

    public static boolean hasGetCountC() {
        return GET_COUNT_C != null;
    }

    public static int gpuQuerySupport(int a0, MemorySegment a1) {
        try {
            return (int) X_GPU_QUERY_SUPPORT.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPIX_GPU_query_support", t);
        }
    }

    public static boolean hasGpuQuerySupport() {
        return X_GPU_QUERY_SUPPORT != null;
    }

    public static int queryCudaSupport() {
        try {
            return (int) X_QUERY_CUDA_SUPPORT.invokeExact();
        } catch (Throwable t) {
            throw rethrow("MPIX_Query_cuda_support", t);
        }
    }

    public static boolean hasQueryCudaSupport() {
        return X_QUERY_CUDA_SUPPORT != null;
    }

    // ---- probing, matched receives, cancel ---------------------------------------------------

    /** {@code MPI_Probe(source, tag, comm, &status)}. */
    public static int probe(int a0, int a1, long a2, MemorySegment a3) {
        try {
            return (int) PROBE.invokeExact(a0, a1, a2, a3);
        } catch (Throwable t) {
            throw rethrow("MPI_Probe", t);
        }
    }

    /** {@code MPI_Iprobe(source, tag, comm, &flag, &status)}. */
    public static int iprobe(int a0, int a1, long a2, MemorySegment a3, MemorySegment a4) {
        try {
            return (int) IPROBE.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Iprobe", t);
        }
    }

    /** {@code MPI_Improbe(source, tag, comm, &flag, &message, &status)}. */
    public static int improbe(int a0, int a1, long a2, MemorySegment a3, MemorySegment a4, MemorySegment a5) {
        try {
            return (int) IMPROBE.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Improbe", t);
        }
    }

    /** {@code MPI_Imrecv(buf, count, type, &message, &request)}. */
    public static int imrecv(long a0, int a1, long a2, MemorySegment a3, MemorySegment a4) {
        try {
            return (int) IMRECV.invokeExact(a0, a1, a2, a3, a4);
        } catch (Throwable t) {
            throw rethrow("MPI_Imrecv", t);
        }
    }

    /** {@code MPI_Cancel(&request)}. */
    public static int cancel(MemorySegment a0) {
        try {
            return (int) CANCEL.invokeExact(a0);
        } catch (Throwable t) {
            throw rethrow("MPI_Cancel", t);
        }
    }

    /** {@code MPI_Test_cancelled(&status, &flag)}. */
    public static int testCancelled(MemorySegment a0, MemorySegment a1) {
        try {
            return (int) TEST_CANCELLED.invokeExact(a0, a1);
        } catch (Throwable t) {
            throw rethrow("MPI_Test_cancelled", t);
        }
    }

    // ---- vector collectives, reduce-scatter, prefix reductions -------------------------------
    // Count and displacement arrays are native int[]s of one entry per rank (MemorySegment.NULL
    // where MPI ignores them).

    /** {@code MPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm)}. */
    public static int scatterv(long a0, MemorySegment a1, MemorySegment a2, long a3, long a4, int a5, long a6, int a7, long a8) {
        try {
            return (int) SCATTERV.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7, a8);
        } catch (Throwable t) {
            throw rethrow("MPI_Scatterv", t);
        }
    }

    /** {@code MPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm)}. */
    public static int gatherv(long a0, int a1, long a2, long a3, MemorySegment a4, MemorySegment a5, long a6, int a7, long a8) {
        try {
            return (int) GATHERV.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7, a8);
        } catch (Throwable t) {
            throw rethrow("MPI_Gatherv", t);
        }
    }

    /** {@code MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm)}. */
    public static int allgatherv(long a0, int a1, long a2, long a3, MemorySegment a4, MemorySegment a5, long a6, long a7) {
        try {
            return (int) ALLGATHERV.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7);
        } catch (Throwable t) {
            throw rethrow("MPI_Allgatherv", t);
        }
    }

    /** {@code MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm)}. */
    public static int alltoallv(long a0, MemorySegment a1, MemorySegment a2, long a3, long a4, MemorySegment a5, MemorySegment a6, long a7, long a8) {
        try {
            return (int) ALLTOALLV.invokeExact(a0, a1, a2, a3, a4, a5, a6, a7, a8);
        } catch (Throwable t) {
            throw rethrow("MPI_Alltoallv", t);
        }
    }

    /** {@code MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm)}. */
    public static int reduceScatterBlock(long a0, long a1, int a2, long a3, long a4, long a5) {
        try {
            return (int) REDUCE_SCATTER_BLOCK.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Reduce_scatter_block", t);
        }
    }

    /** {@code MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm)}. */
    public static int reduceScatter(long a0, long a1, MemorySegment a2, long a3, long a4, long a5) {
        try {
            return (int) REDUCE_SCATTER.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Reduce_scatter", t);
        }
    }

    /** {@code MPI_Scan(sendbuf, recvbuf, count, datatype, op, comm)}. */
    public static int scan(long a0, long a1, int a2, long a3, long a4, long a5) {
        try {
            return (int) SCAN.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Scan", t);
        }
    }

    /** {@code MPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm)}. */
    public static int exscan(long a0, long a1, int a2, long a3, long a4, long a5) {
        try {
            return (int) EXSCAN.invokeExact(a0, a1, a2, a3, a4, a5);
        } catch (Throwable t) {
            throw rethrow("MPI_Exscan", t);
        }
    }
}
