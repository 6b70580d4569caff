// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Settings;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.Ferry;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The native binding of {@code libnccl.so.2}: one {@link MethodHandle} per NCCL function in static
 * finals, and one static method per function with exact types. Loading the class locates and
 * loads the library ({@link NcclLibraryLocator}) and reads its version; nothing else runs, and
 * nothing here touches a GPU until a communicator is made. When the library cannot be loaded,
 * every handle is null and {@link #unavailabilityCause()} says why.
 *
 * <p>As in the mvapich binding, pointers ({@code void *}, {@code ncclComm_t},
 * {@code cudaStream_t}) and {@code size_t} travel as {@code JAVA_LONG} (LP64), so no segment is
 * made per call; out-parameters use a confined arena. No call is {@code critical}: NCCL calls may
 * block (communicator creation, {@code ncclGroupEnd}, a blocking communicator's enqueue when its
 * work FIFO is full), and the JVM's safepoints must not wait for them.
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
final class NcclAbi {
    private NcclAbi() {
    }

    /** ncclUniqueId, passed by value to ncclCommInitRank. */
    static final StructLayout UNIQUE_ID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(NcclTypes.UNIQUE_ID_BYTES, JAVA_BYTE).withName("internal"));

    private static final class Binder {
        final Linker linker = Linker.nativeLinker();
        NcclLibraryLocator.Located library;
        final List<String> missing = new ArrayList<>();
        Throwable failure;

        Binder() {
            try {
                library = NcclLibraryLocator.locate(NcclLibraryLocator.candidates(Settings.process(), System.getenv()));
            } catch (RuntimeException | LinkageError e) {
                failure = e;
            }
        }

        MethodHandle required(String name, FunctionDescriptor fd) {
            MethodHandle h = optional(name, fd);
            if (h == null && library != null) {
                missing.add(name);
            }
            return h;
        }

        MethodHandle optional(String name, FunctionDescriptor fd) {
            if (library == null) {
                return null;
            }
            Optional<MemorySegment> symbol = library.lookup().find(name);
            return symbol.map(s -> linker.downcallHandle(s, fd)).orElse(null);
        }

        Throwable failure() {
            if (failure == null && !missing.isEmpty()) {
                failure = new NcclException(library.path() + " lacks " + String.join(", ", missing)
                        + ": Ferry needs NCCL 2.7 or newer (point-to-point and group calls); name another with -Dferry.nccl.lib");
            }
            return failure;
        }
    }

    private static final Binder B = new Binder();

    private static FunctionDescriptor ret(MemoryLayout... args) {
        return FunctionDescriptor.of(JAVA_INT, args);
    }

    private static final MethodHandle GET_VERSION = B.required("ncclGetVersion", ret(ADDRESS));
    private static final MethodHandle GET_ERROR_STRING = B.required("ncclGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    private static final MethodHandle GET_LAST_ERROR = B.optional("ncclGetLastError", FunctionDescriptor.of(ADDRESS, JAVA_LONG)); // 2.13
    private static final MethodHandle GET_UNIQUE_ID = B.required("ncclGetUniqueId", ret(ADDRESS));
    private static final MethodHandle COMM_INIT_RANK = B.required("ncclCommInitRank", ret(ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT));
    private static final MethodHandle COMM_INIT_RANK_CONFIG = B.optional("ncclCommInitRankConfig", // 2.14
            ret(ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT, JAVA_LONG));
    private static final MethodHandle COMM_SPLIT = B.optional("ncclCommSplit", ret(JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG)); // 2.18
    private static final MethodHandle COMM_FINALIZE = B.optional("ncclCommFinalize", ret(JAVA_LONG)); // 2.14
    private static final MethodHandle COMM_DESTROY = B.required("ncclCommDestroy", ret(JAVA_LONG));
    private static final MethodHandle COMM_ABORT = B.required("ncclCommAbort", ret(JAVA_LONG));
    private static final MethodHandle COMM_GET_ASYNC_ERROR = B.required("ncclCommGetAsyncError", ret(JAVA_LONG, ADDRESS));
    private static final MethodHandle COMM_COUNT = B.required("ncclCommCount", ret(JAVA_LONG, ADDRESS));
    private static final MethodHandle COMM_CU_DEVICE = B.required("ncclCommCuDevice", ret(JAVA_LONG, ADDRESS));
    private static final MethodHandle COMM_USER_RANK = B.required("ncclCommUserRank", ret(JAVA_LONG, ADDRESS));
    private static final MethodHandle ALL_REDUCE = B.required("ncclAllReduce",
            ret(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle BROADCAST = B.required("ncclBroadcast",
            ret(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle REDUCE = B.required("ncclReduce",
            ret(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle ALL_GATHER = B.required("ncclAllGather",
            ret(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle REDUCE_SCATTER = B.required("ncclReduceScatter",
            ret(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle SEND = B.required("ncclSend", ret(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle RECV = B.required("ncclRecv", ret(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle GROUP_START = B.required("ncclGroupStart", ret());
    private static final MethodHandle GROUP_END = B.required("ncclGroupEnd", ret());
    private static final MethodHandle MEM_ALLOC = B.optional("ncclMemAlloc", ret(ADDRESS, JAVA_LONG)); // 2.19
    private static final MethodHandle MEM_FREE = B.optional("ncclMemFree", ret(JAVA_LONG));

    private static final Throwable FAILURE;
    private static final NcclLibraryLocator.Located LIBRARY;
    private static final int VERSION;

    static {
        Throwable f = B.failure();
        int v = 0;
        if (f == null) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(JAVA_INT);
                int rc = (int) GET_VERSION.invokeExact(out);
                if (rc != NcclTypes.SUCCESS) {
                    f = new NcclException("ncclGetVersion failed: " + NcclTypes.resultName(rc) + " (" + B.library.path() + ")", rc, null);
                }
                v = out.get(JAVA_INT, 0);
            } catch (Throwable t) {
                f = new NcclException("ncclGetVersion failed: " + t, t);
            }
        }
        if (f == null && v < NcclTypes.versionCode(2, 7, 0)) {
            f = new NcclException(B.library.path() + " is NCCL " + NcclTypes.versionString(v) + "; Ferry needs 2.7 or newer");
        }
        FAILURE = f;
        LIBRARY = f == null ? B.library : null;
        VERSION = v;
    }

    /** Null when the library is loaded and complete; else why not. */
    static Throwable unavailabilityCause() {
        return FAILURE;
    }

    static NcclLibraryLocator.Located library() {
        if (FAILURE != null) {
            throw FAILURE instanceof NcclException n ? n : new NcclException(FAILURE.getMessage(), FAILURE);
        }
        return LIBRARY;
    }

    /** NCCL_VERSION_CODE of the loaded library. */
    static int version() {
        library();
        return VERSION;
    }

    static boolean hasSplit() {
        return COMM_SPLIT != null && VERSION >= NcclTypes.versionCode(2, 18, 0);
    }

    static boolean hasInitRankConfig() {
        return COMM_INIT_RANK_CONFIG != null;
    }

    static boolean hasMemAlloc() {
        return MEM_ALLOC != null && MEM_FREE != null;
    }

    static boolean hasLastError() {
        return GET_LAST_ERROR != null;
    }

    static boolean hasFinalize() {
        return COMM_FINALIZE != null;
    }

    private static NcclException rethrow(String function, Throwable t) {
        return new NcclException(function + ": the downcall failed: " + t, t);
    }

    private static String cString(MemorySegment p) {
        return p == null || p.address() == 0 ? "" : p.reinterpret(4096).getString(0);
    }

    // ---- errors --------------------------------------------------------------------------------

    static String errorString(int result) {
        library();
        try {
            return cString((MemorySegment) GET_ERROR_STRING.invokeExact(result));
        } catch (Throwable t) {
            return "(ncclGetErrorString failed: " + t + ")";
        }
    }

    /** NCCL's text of the last error (of {@code comm}, or of the process when 0); empty when none or unsupported. */
    static String lastError(long comm) {
        if (GET_LAST_ERROR == null) {
            return "";
        }
        try {
            return cString((MemorySegment) GET_LAST_ERROR.invokeExact(comm));
        } catch (Throwable t) {
            return "";
        }
    }

    // ---- environment ---------------------------------------------------------------------------

    /** A new unique id into {@code id} (128 bytes). */
    static int getUniqueId(MemorySegment id) {
        try {
            return (int) GET_UNIQUE_ID.invokeExact(id);
        } catch (Throwable t) {
            throw rethrow("ncclGetUniqueId", t);
        }
    }

    /** ncclCommInitRank; the new communicator is written to {@code out} (8 bytes). */
    static int commInitRank(MemorySegment out, int nranks, MemorySegment id, int rank) {
        try {
            return (int) COMM_INIT_RANK.invokeExact(out, nranks, id, rank);
        } catch (Throwable t) {
            throw rethrow("ncclCommInitRank", t);
        }
    }

    /** ncclCommInitRankConfig (NCCL >= 2.14) with a caller-built ncclConfig_t at {@code config}. */
    static int commInitRankConfig(MemorySegment out, int nranks, MemorySegment id, int rank, long config) {
        if (COMM_INIT_RANK_CONFIG == null) {
            throw new NcclException("ncclCommInitRankConfig is not in NCCL " + NcclTypes.versionString(VERSION) + " (2.14 or newer has it)");
        }
        try {
            return (int) COMM_INIT_RANK_CONFIG.invokeExact(out, nranks, id, rank, config);
        } catch (Throwable t) {
            throw rethrow("ncclCommInitRankConfig", t);
        }
    }

    /** ncclCommSplit (NCCL >= 2.18) with a NULL config (the child inherits the parent's). */
    static int commSplit(long comm, int color, int key, MemorySegment out) {
        if (COMM_SPLIT == null) {
            throw new NcclException("ncclCommSplit is not in NCCL " + NcclTypes.versionString(VERSION) + " (2.18 or newer has it)");
        }
        try {
            return (int) COMM_SPLIT.invokeExact(comm, color, key, out, 0L);
        } catch (Throwable t) {
            throw rethrow("ncclCommSplit", t);
        }
    }

    static int commFinalize(long comm) {
        try {
            return COMM_FINALIZE == null ? NcclTypes.SUCCESS : (int) COMM_FINALIZE.invokeExact(comm);
        } catch (Throwable t) {
            throw rethrow("ncclCommFinalize", t);
        }
    }

    static int commDestroy(long comm) {
        try {
            return (int) COMM_DESTROY.invokeExact(comm);
        } catch (Throwable t) {
            throw rethrow("ncclCommDestroy", t);
        }
    }

    static int commAbort(long comm) {
        try {
            return (int) COMM_ABORT.invokeExact(comm);
        } catch (Throwable t) {
            throw rethrow("ncclCommAbort", t);
        }
    }

    /** The communicator's asynchronous error ({@link NcclTypes#SUCCESS} when none), or a negative value when the call itself failed. */
    static int commGetAsyncError(long comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int rc = (int) COMM_GET_ASYNC_ERROR.invokeExact(comm, out);
            return rc != NcclTypes.SUCCESS ? -rc - 1 : out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow("ncclCommGetAsyncError", t);
        }
    }

    private static int intQuery(MethodHandle h, String name, long comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            Nccl.check(name, (int) h.invokeExact(comm, out), comm);
            return out.get(JAVA_INT, 0);
        } catch (NcclException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(name, t);
        }
    }

    static int commCount(long comm) {
        return intQuery(COMM_COUNT, "ncclCommCount", comm);
    }

    static int commCuDevice(long comm) {
        return intQuery(COMM_CU_DEVICE, "ncclCommCuDevice", comm);
    }

    static int commUserRank(long comm) {
        return intQuery(COMM_USER_RANK, "ncclCommUserRank", comm);
    }

    // ---- collectives (enqueue on a stream) ----------------------------------------------------------

    static int allReduce(long send, long recv, long count, int type, int op, long comm, long stream) {
        try {
            return (int) ALL_REDUCE.invokeExact(send, recv, count, type, op, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclAllReduce", t);
        }
    }

    static int broadcast(long send, long recv, long count, int type, int root, long comm, long stream) {
        try {
            return (int) BROADCAST.invokeExact(send, recv, count, type, root, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclBroadcast", t);
        }
    }

    static int reduce(long send, long recv, long count, int type, int op, int root, long comm, long stream) {
        try {
            return (int) REDUCE.invokeExact(send, recv, count, type, op, root, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclReduce", t);
        }
    }

    static int allGather(long send, long recv, long sendCount, int type, long comm, long stream) {
        try {
            return (int) ALL_GATHER.invokeExact(send, recv, sendCount, type, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclAllGather", t);
        }
    }

    static int reduceScatter(long send, long recv, long recvCount, int type, int op, long comm, long stream) {
        try {
            return (int) REDUCE_SCATTER.invokeExact(send, recv, recvCount, type, op, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclReduceScatter", t);
        }
    }

    static int send(long buf, long count, int type, int peer, long comm, long stream) {
        try {
            return (int) SEND.invokeExact(buf, count, type, peer, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclSend", t);
        }
    }

    static int recv(long buf, long count, int type, int peer, long comm, long stream) {
        try {
            return (int) RECV.invokeExact(buf, count, type, peer, comm, stream);
        } catch (Throwable t) {
            throw rethrow("ncclRecv", t);
        }
    }

    static int groupStart() {
        try {
            return (int) GROUP_START.invokeExact();
        } catch (Throwable t) {
            throw rethrow("ncclGroupStart", t);
        }
    }

    static int groupEnd() {
        try {
            return (int) GROUP_END.invokeExact();
        } catch (Throwable t) {
            throw rethrow("ncclGroupEnd", t);
        }
    }

    /** ncclMemAlloc (NCCL >= 2.19): device memory suited to NCCL's zero-copy paths; its address. */
    static long memAlloc(long bytes) {
        if (MEM_ALLOC == null) {
            throw new NcclException("ncclMemAlloc is not in NCCL " + NcclTypes.versionString(VERSION) + " (2.19 or newer has it)");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            Nccl.check("ncclMemAlloc(" + bytes + " bytes)", (int) MEM_ALLOC.invokeExact(out, bytes), 0);
            return out.get(JAVA_LONG, 0);
        } catch (NcclException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow("ncclMemAlloc", t);
        }
    }

    static int memFree(long address) {
        try {
            return (int) MEM_FREE.invokeExact(address);
        } catch (Throwable t) {
            throw rethrow("ncclMemFree", t);
        }
    }
}
