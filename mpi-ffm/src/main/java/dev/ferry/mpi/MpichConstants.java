// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

/**
 * The MPICH ABI's constants, as {@code mpi.h} defines them: handles are {@code int}s with fixed
 * values shared by every member of the family (MPICH &ge; 3.1, MVAPICH2 &ge; 2.0, Intel MPI &ge; 5.0,
 * Cray MPICH &ge; 7.0: the MPICH ABI compatibility initiative).
 *
 * <p>Every value here was read from {@code /usr/include/x86_64-linux-gnu/mpich/mpi.h} of MPICH
 * 4.0.2 (Debian bookworm's libmpich-dev). Nothing is guessed: {@code MpichConstantsTest} compiles
 * a C program with {@code mpicc.mpich} that prints every field of this class (a field named like
 * a macro is compared with that macro; the {@code SIZEOF_}/{@code OFFSETOF_} fields with
 * {@code sizeof}/{@code offsetof}), so a mismatch fails the build. A field added here is checked
 * automatically.
 */
public final class MpichConstants {
    private MpichConstants() {
    }

    // ---- return codes and error classes -----------------------------------------------------
    public static final int MPI_SUCCESS = 0;
    public static final int MPI_ERR_TRUNCATE = 14;

    // ---- handles (typedef int MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Errhandler) ----
    public static final int MPI_COMM_WORLD = 0x44000000;
    public static final int MPI_COMM_SELF = 0x44000001;
    public static final int MPI_COMM_NULL = 0x04000000;
    public static final int MPI_REQUEST_NULL = 0x2c000000;
    public static final int MPI_ERRORS_RETURN = 0x54000001;

    public static final int MPI_BYTE = 0x4c00010d;
    public static final int MPI_UINT8_T = 0x4c00013b;
    public static final int MPI_INT32_T = 0x4c000439;
    public static final int MPI_INT64_T = 0x4c00083a;
    public static final int MPI_FLOAT = 0x4c00040a;
    public static final int MPI_DOUBLE = 0x4c00080b;
    public static final int MPI_INT16_T = 0x4c000238;
    public static final int MPI_INFO_NULL = 0x1c000000;
    public static final int MPI_COMM_TYPE_SHARED = 1;
    public static final int MPI_SHORT_INT = 0x8c000003;
    public static final int MPI_2INT = 0x4c000816;
    public static final int MPI_LONG_INT = 0x8c000002;
    public static final int MPI_FLOAT_INT = 0x8c000000;
    public static final int MPI_DOUBLE_INT = 0x8c000001;

    public static final int MPI_MAX = 0x58000001;
    public static final int MPI_MIN = 0x58000002;
    public static final int MPI_SUM = 0x58000003;
    public static final int MPI_PROD = 0x58000004;
    public static final int MPI_LAND = 0x58000005;
    public static final int MPI_BAND = 0x58000006;
    public static final int MPI_LOR = 0x58000007;
    public static final int MPI_BOR = 0x58000008;
    public static final int MPI_BXOR = 0x5800000a;
    public static final int MPI_MINLOC = 0x5800000b;
    public static final int MPI_MAXLOC = 0x5800000c;

    // ---- plain values ---------------------------------------------------------------------------
    public static final int MPI_ANY_SOURCE = -2;
    public static final int MPI_ANY_TAG = -1;
    public static final int MPI_PROC_NULL = -1;
    public static final int MPI_UNDEFINED = -32766;
    public static final int MPI_TAG_UB = 0x64400001;

    public static final int MPI_THREAD_SINGLE = 0;
    public static final int MPI_THREAD_FUNNELED = 1;
    public static final int MPI_THREAD_SERIALIZED = 2;
    public static final int MPI_THREAD_MULTIPLE = 3;

    public static final int MPI_MAX_ERROR_STRING = 512;
    public static final int MPI_MAX_LIBRARY_VERSION_STRING = 8192;

    /** {@code MPIX_GPU_query_support}'s device kind for CUDA (MPICH &ge; 4.0 only). */
    public static final int MPIX_GPU_SUPPORT_CUDA = 0;

    // ---- sizes and layout -----------------------------------------------------------------------
    public static final int SIZEOF_MPI_COMM = 4;
    public static final int SIZEOF_MPI_DATATYPE = 4;
    public static final int SIZEOF_MPI_OP = 4;
    public static final int SIZEOF_MPI_REQUEST = 4;
    public static final int SIZEOF_MPI_ERRHANDLER = 4;
    /** Displacements of MPI_Type_create_struct and large counts (MPI_Send_c, MPI_Get_elements_x) are 64-bit. */
    public static final int SIZEOF_MPI_AINT = 8;
    public static final int SIZEOF_MPI_COUNT = 8;

    /**
     * {@code typedef struct MPI_Status { int count_lo; int count_hi_and_cancelled; int MPI_SOURCE;
     * int MPI_TAG; int MPI_ERROR; } MPI_Status;} — 20 bytes. Only the public fields are read;
     * the byte count comes from {@code MPI_Get_count(status, MPI_BYTE)}.
     */
    public static final int SIZEOF_MPI_STATUS = 20;
    public static final int OFFSETOF_MPI_STATUS_MPI_SOURCE = 8;
    public static final int OFFSETOF_MPI_STATUS_MPI_TAG = 12;
    public static final int OFFSETOF_MPI_STATUS_MPI_ERROR = 16;
}
