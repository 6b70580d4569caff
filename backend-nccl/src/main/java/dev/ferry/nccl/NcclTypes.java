// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import java.util.List;
import java.util.Optional;

/**
 * NCCL's enumerations ({@code nccl.h}) and how Ferry's {@link DataType} and {@link ReduceOp} map to
 * them. The values are those of every NCCL 2.x header (checked against the installed wheel's
 * {@code nccl.h} by a C compile in the unit tests).
 *
 * <p>Reductions go to NCCL only for a type and operator it has: BYTE (ncclUint8, unsigned as Ferry
 * reduces bytes), INT (ncclInt32), LONG (ncclInt64), FLOAT (ncclFloat32), DOUBLE (ncclFloat64),
 * FLOAT16 (ncclFloat16), BFLOAT16 (ncclBfloat16), with SUM, PROD, MAX, MIN. Everything else
 * ({@link #lacks}) is delegated to the inner backend. Collectives that only move bytes
 * (broadcast, allGather, gather, scatter, allToAll) carry any type as ncclUint8.
 */
public final class NcclTypes {
    private NcclTypes() {
    }

    // ncclResult_t
    public static final int SUCCESS = 0;
    public static final int UNHANDLED_CUDA_ERROR = 1;
    public static final int SYSTEM_ERROR = 2;
    public static final int INTERNAL_ERROR = 3;
    public static final int INVALID_ARGUMENT = 4;
    public static final int INVALID_USAGE = 5;
    public static final int REMOTE_ERROR = 6;
    public static final int IN_PROGRESS = 7;
    public static final int TIMEOUT = 8;
    /** Names of ncclResult_t values 0..8, for messages. */
    public static final List<String> RESULT_NAMES = List.of("ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
            "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout");

    // ncclDataType_t
    public static final int INT8 = 0;
    public static final int UINT8 = 1;
    public static final int INT32 = 2;
    public static final int UINT32 = 3;
    public static final int INT64 = 4;
    public static final int UINT64 = 5;
    public static final int FLOAT16 = 6;
    public static final int FLOAT32 = 7;
    public static final int FLOAT64 = 8;
    public static final int BFLOAT16 = 9;

    // ncclRedOp_t
    public static final int SUM = 0;
    public static final int PROD = 1;
    public static final int MAX = 2;
    public static final int MIN = 3;
    public static final int AVG = 4;

    /** sizeof(ncclUniqueId). */
    public static final int UNIQUE_ID_BYTES = 128;
    /** NCCL_SPLIT_NOCOLOR. */
    public static final int SPLIT_NOCOLOR = -1;

    /** The ncclDataType_t of {@code type} for reductions, or -1 when NCCL has none. */
    public static int dataType(DataType type) {
        return switch (type) {
            case BYTE -> UINT8;
            case INT -> INT32;
            case LONG -> INT64;
            case FLOAT -> FLOAT32;
            case DOUBLE -> FLOAT64;
            case FLOAT16 -> FLOAT16;
            case BFLOAT16 -> BFLOAT16;
            case SHORT, SHORT_INT, INT_INT, LONG_INT, FLOAT_INT, DOUBLE_INT -> -1;
        };
    }

    /** The ncclRedOp_t of {@code op}, or -1 when NCCL has none. */
    public static int redOp(ReduceOp op) {
        return switch (op) {
            case SUM -> SUM;
            case PROD -> PROD;
            case MAX -> MAX;
            case MIN -> MIN;
            case LAND, LOR, BAND, BOR, BXOR, MINLOC, MAXLOC -> -1;
        };
    }

    /**
     * Why NCCL cannot reduce {@code type} with {@code op} (empty when it can, with the mapping
     * above); the reduction then goes to the inner backend.
     */
    public static Optional<String> lacks(DataType type, ReduceOp op) {
        if (dataType(type) < 0) {
            String why = type == DataType.SHORT
                    ? "NCCL has no 16-bit integer type (ncclDataType_t: int8/uint8, int32/uint32, int64/uint64, float16, bfloat16, float32, float64, fp8)"
                    : "NCCL has no value/index pair types (MINLOC/MAXLOC data)";
            return Optional.of(type + ": " + why);
        }
        if (redOp(op) < 0) {
            String why = switch (op) {
                case LAND, LOR -> "NCCL has no logical operators (ncclRedOp_t: sum, prod, max, min, avg, pre-multiplied sum)";
                case BAND, BOR, BXOR -> "NCCL has no bitwise operators (ncclRedOp_t: sum, prod, max, min, avg, pre-multiplied sum)";
                default -> "NCCL has no MINLOC/MAXLOC (it reduces values, not value/index pairs)";
            };
            return Optional.of(op + ": " + why);
        }
        return Optional.empty();
    }

    /** "ncclInvalidUsage (5)", or "ncclResult_t 42" for a value this Ferry does not know. */
    public static String resultName(int result) {
        return result >= 0 && result < RESULT_NAMES.size() ? RESULT_NAMES.get(result) + " (" + result + ")" : "ncclResult_t " + result;
    }

    /** NCCL's version code as "2.30.7" (codes below 2.9 are X*1000+Y*100+Z, later X*10000+Y*100+Z). */
    public static String versionString(int code) {
        int[] v = version(code);
        return v[0] + "." + v[1] + "." + v[2];
    }

    /** {major, minor, patch} of an NCCL version code. */
    public static int[] version(int code) {
        if (code >= 10000) {
            return new int[] {code / 10000, (code % 10000) / 100, code % 100};
        }
        return new int[] {code / 1000, (code % 1000) / 100, code % 100};
    }

    /** NCCL_VERSION(x, y, z) of nccl.h. */
    public static int versionCode(int major, int minor, int patch) {
        return major <= 2 && minor <= 8 ? major * 1000 + minor * 100 + patch : major * 10000 + minor * 100 + patch;
    }
}
