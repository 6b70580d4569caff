// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

/**
 * Open MPI's plain constants and {@code MPI_Status} layout, as its {@code mpi.h} defines them
 * (identical in Open MPI 4.1, 5.0 and 6 for every value here). Handles are not here: in Open MPI a
 * predefined handle is the address of an object the library exports ({@code MPI_COMM_WORLD} is
 * {@code &ompi_mpi_comm_world}), read at load time ({@link MpiAbi#openMpi}); {@link #HANDLE_SYMBOLS}
 * names the symbol of each.
 *
 * <p>Checked like {@link MpichConstants}: {@code OmpiConstantsTest} compiles a C program with
 * {@code mpicc.openmpi} that prints every field (macros, {@code sizeof}, {@code offsetof}) and
 * compares each handle macro with the address of the symbol named here.
 */
public final class OmpiConstants {
    private OmpiConstants() {
    }

    public static final int MPI_SUCCESS = 0;
    public static final int MPI_ERR_TRUNCATE = 15;

    public static final int MPI_ANY_SOURCE = -1;
    public static final int MPI_ANY_TAG = -1;
    public static final int MPI_PROC_NULL = -2;
    public static final int MPI_UNDEFINED = -32766;
    /** An enum value in Open MPI's mpi.h (the keyval of MPI_Comm_get_attr). */
    public static final int MPI_TAG_UB = 0;

    public static final int MPI_THREAD_SINGLE = 0;
    public static final int MPI_THREAD_FUNNELED = 1;
    public static final int MPI_THREAD_SERIALIZED = 2;
    public static final int MPI_THREAD_MULTIPLE = 3;

    public static final int MPI_MAX_ERROR_STRING = 256;
    public static final int MPI_MAX_LIBRARY_VERSION_STRING = 256;

    public static final int SIZEOF_MPI_COMM = 8;
    public static final int SIZEOF_MPI_DATATYPE = 8;
    public static final int SIZEOF_MPI_OP = 8;
    public static final int SIZEOF_MPI_REQUEST = 8;
    public static final int SIZEOF_MPI_ERRHANDLER = 8;
    public static final int SIZEOF_MPI_AINT = 8;
    public static final int SIZEOF_MPI_COUNT = 8;

    /** {@code struct { int MPI_SOURCE; int MPI_TAG; int MPI_ERROR; int _cancelled; size_t _ucount; }}: 24 bytes. */
    public static final int MPI_COMM_TYPE_SHARED = 0;
    public static final int SIZEOF_MPI_STATUS = 24;
    public static final int OFFSETOF_MPI_STATUS_MPI_SOURCE = 0;
    public static final int OFFSETOF_MPI_STATUS_MPI_TAG = 4;
    public static final int OFFSETOF_MPI_STATUS_MPI_ERROR = 8;

    /** The exported object each predefined handle points at: macro name to symbol. */
    public static final java.util.Map<String, String> HANDLE_SYMBOLS = java.util.Map.ofEntries(
            java.util.Map.entry("MPI_COMM_WORLD", "ompi_mpi_comm_world"),
            java.util.Map.entry("MPI_INFO_NULL", "ompi_mpi_info_null"),
            java.util.Map.entry("MPI_COMM_SELF", "ompi_mpi_comm_self"),
            java.util.Map.entry("MPI_COMM_NULL", "ompi_mpi_comm_null"),
            java.util.Map.entry("MPI_REQUEST_NULL", "ompi_request_null"),
            java.util.Map.entry("MPI_ERRORS_RETURN", "ompi_mpi_errors_return"),
            java.util.Map.entry("MPI_DATATYPE_NULL", "ompi_mpi_datatype_null"),
            java.util.Map.entry("MPI_BYTE", "ompi_mpi_byte"),
            java.util.Map.entry("MPI_UINT8_T", "ompi_mpi_uint8_t"),
            java.util.Map.entry("MPI_INT16_T", "ompi_mpi_int16_t"),
            java.util.Map.entry("MPI_INT32_T", "ompi_mpi_int32_t"),
            java.util.Map.entry("MPI_INT64_T", "ompi_mpi_int64_t"),
            java.util.Map.entry("MPI_FLOAT", "ompi_mpi_float"),
            java.util.Map.entry("MPI_DOUBLE", "ompi_mpi_double"),
            java.util.Map.entry("MPI_SHORT_INT", "ompi_mpi_short_int"),
            java.util.Map.entry("MPI_2INT", "ompi_mpi_2int"),
            java.util.Map.entry("MPI_LONG_INT", "ompi_mpi_long_int"),
            java.util.Map.entry("MPI_FLOAT_INT", "ompi_mpi_float_int"),
            java.util.Map.entry("MPI_DOUBLE_INT", "ompi_mpi_double_int"),
            java.util.Map.entry("MPI_MAX", "ompi_mpi_op_max"),
            java.util.Map.entry("MPI_MIN", "ompi_mpi_op_min"),
            java.util.Map.entry("MPI_SUM", "ompi_mpi_op_sum"),
            java.util.Map.entry("MPI_PROD", "ompi_mpi_op_prod"),
            java.util.Map.entry("MPI_LAND", "ompi_mpi_op_land"),
            java.util.Map.entry("MPI_BAND", "ompi_mpi_op_band"),
            java.util.Map.entry("MPI_LOR", "ompi_mpi_op_lor"),
            java.util.Map.entry("MPI_BOR", "ompi_mpi_op_bor"),
            java.util.Map.entry("MPI_BXOR", "ompi_mpi_op_bxor"),
            java.util.Map.entry("MPI_MINLOC", "ompi_mpi_op_minloc"),
            java.util.Map.entry("MPI_MAXLOC", "ompi_mpi_op_maxloc"));
}
