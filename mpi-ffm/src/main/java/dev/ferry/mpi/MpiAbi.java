// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.DataType;
import dev.ferry.FerryException;
import dev.ferry.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;

/**
 * What differs between the two C ABIs of MPI, as one value: the predefined handles (carried as
 * {@code long} in Java: an {@code int} of the MPICH ABI sign-extended, or an Open MPI pointer), the
 * size of a handle, the plain constants and the layout of {@code MPI_Status}. Everything here comes
 * from {@link MpichConstants} or {@link OmpiConstants} (both checked against {@code mpi.h} by a C
 * compile in the tests) or, for Open MPI's handles, from the addresses of the exported objects.
 */
public final class MpiAbi {
    public final MpiFamily family;
    /** Bytes of a handle: 4 (MPICH ABI) or 8 (Open MPI). */
    public final int handleBytes;

    public final long commWorld;
    /** MPI_INFO_NULL, and MPI_COMM_TYPE_SHARED (a plain value) for MPI_Comm_split_type. */
    public final long infoNull;
    public final int commTypeShared;
    public final long commNull;
    public final long requestNull;
    public final long errorsReturn;

    public final long byte_;
    public final long uint8;
    public final long int16;
    public final long int32;
    public final long int64;
    public final long float_;
    public final long double_;
    public final long shortInt;
    public final long twoInt;
    public final long longInt;
    public final long floatInt;
    public final long doubleInt;

    public final long max;
    public final long min;
    public final long sum;
    public final long prod;
    public final long land;
    public final long band;
    public final long lor;
    public final long bor;
    public final long bxor;
    public final long minloc;
    public final long maxloc;

    public final int success;
    public final int errTruncate;
    public final int anySource;
    public final int anyTag;
    public final int undefined;
    public final int tagUb;
    public final int threadSingle;
    public final int threadFunneled;
    public final int threadSerialized;
    public final int threadMultiple;
    public final int maxErrorString;
    public final int maxLibraryVersionString;

    public final int statusBytes;
    public final int statusSource;
    public final int statusTag;
    public final int statusError;

    private MpiAbi(MpiFamily family, java.util.function.ToLongFunction<String> handle) {
        this.family = family;
        boolean mpich = family == MpiFamily.MPICH_ABI;
        this.handleBytes = mpich ? MpichConstants.SIZEOF_MPI_COMM : OmpiConstants.SIZEOF_MPI_COMM;
        commWorld = handle.applyAsLong("MPI_COMM_WORLD");
        infoNull = handle.applyAsLong("MPI_INFO_NULL");
        commTypeShared = mpich ? MpichConstants.MPI_COMM_TYPE_SHARED : OmpiConstants.MPI_COMM_TYPE_SHARED;
        commNull = handle.applyAsLong("MPI_COMM_NULL");
        requestNull = handle.applyAsLong("MPI_REQUEST_NULL");
        errorsReturn = handle.applyAsLong("MPI_ERRORS_RETURN");
        byte_ = handle.applyAsLong("MPI_BYTE");
        uint8 = handle.applyAsLong("MPI_UINT8_T");
        int16 = handle.applyAsLong("MPI_INT16_T");
        int32 = handle.applyAsLong("MPI_INT32_T");
        int64 = handle.applyAsLong("MPI_INT64_T");
        float_ = handle.applyAsLong("MPI_FLOAT");
        double_ = handle.applyAsLong("MPI_DOUBLE");
        shortInt = handle.applyAsLong("MPI_SHORT_INT");
        twoInt = handle.applyAsLong("MPI_2INT");
        longInt = handle.applyAsLong("MPI_LONG_INT");
        floatInt = handle.applyAsLong("MPI_FLOAT_INT");
        doubleInt = handle.applyAsLong("MPI_DOUBLE_INT");
        max = handle.applyAsLong("MPI_MAX");
        min = handle.applyAsLong("MPI_MIN");
        sum = handle.applyAsLong("MPI_SUM");
        prod = handle.applyAsLong("MPI_PROD");
        land = handle.applyAsLong("MPI_LAND");
        band = handle.applyAsLong("MPI_BAND");
        lor = handle.applyAsLong("MPI_LOR");
        bor = handle.applyAsLong("MPI_BOR");
        bxor = handle.applyAsLong("MPI_BXOR");
        minloc = handle.applyAsLong("MPI_MINLOC");
        maxloc = handle.applyAsLong("MPI_MAXLOC");
        success = mpich ? MpichConstants.MPI_SUCCESS : OmpiConstants.MPI_SUCCESS;
        errTruncate = mpich ? MpichConstants.MPI_ERR_TRUNCATE : OmpiConstants.MPI_ERR_TRUNCATE;
        anySource = mpich ? MpichConstants.MPI_ANY_SOURCE : OmpiConstants.MPI_ANY_SOURCE;
        anyTag = mpich ? MpichConstants.MPI_ANY_TAG : OmpiConstants.MPI_ANY_TAG;
        undefined = mpich ? MpichConstants.MPI_UNDEFINED : OmpiConstants.MPI_UNDEFINED;
        tagUb = mpich ? MpichConstants.MPI_TAG_UB : OmpiConstants.MPI_TAG_UB;
        threadSingle = mpich ? MpichConstants.MPI_THREAD_SINGLE : OmpiConstants.MPI_THREAD_SINGLE;
        threadFunneled = mpich ? MpichConstants.MPI_THREAD_FUNNELED : OmpiConstants.MPI_THREAD_FUNNELED;
        threadSerialized = mpich ? MpichConstants.MPI_THREAD_SERIALIZED : OmpiConstants.MPI_THREAD_SERIALIZED;
        threadMultiple = mpich ? MpichConstants.MPI_THREAD_MULTIPLE : OmpiConstants.MPI_THREAD_MULTIPLE;
        maxErrorString = mpich ? MpichConstants.MPI_MAX_ERROR_STRING : OmpiConstants.MPI_MAX_ERROR_STRING;
        maxLibraryVersionString = mpich ? MpichConstants.MPI_MAX_LIBRARY_VERSION_STRING : OmpiConstants.MPI_MAX_LIBRARY_VERSION_STRING;
        statusBytes = mpich ? MpichConstants.SIZEOF_MPI_STATUS : OmpiConstants.SIZEOF_MPI_STATUS;
        statusSource = mpich ? MpichConstants.OFFSETOF_MPI_STATUS_MPI_SOURCE : OmpiConstants.OFFSETOF_MPI_STATUS_MPI_SOURCE;
        statusTag = mpich ? MpichConstants.OFFSETOF_MPI_STATUS_MPI_TAG : OmpiConstants.OFFSETOF_MPI_STATUS_MPI_TAG;
        statusError = mpich ? MpichConstants.OFFSETOF_MPI_STATUS_MPI_ERROR : OmpiConstants.OFFSETOF_MPI_STATUS_MPI_ERROR;
    }

    /** The MPICH ABI: fixed handle values from {@link MpichConstants}. */
    public static MpiAbi mpich() {
        return new MpiAbi(MpiFamily.MPICH_ABI, name -> {
            try {
                return MpichConstants.class.getField(name).getInt(null);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("MpichConstants lacks " + name, e);
            }
        });
    }

    /** Open MPI: each predefined handle is the address of the object named in {@link OmpiConstants#HANDLE_SYMBOLS}. */
    public static MpiAbi openMpi(SymbolLookup library) {
        return new MpiAbi(MpiFamily.OPEN_MPI, name -> {
            String symbol = OmpiConstants.HANDLE_SYMBOLS.get(name);
            return library.find(symbol).map(MemorySegment::address)
                    .orElseThrow(() -> new FerryException("the Open MPI library exports no " + symbol + " (" + name + ")"));
        });
    }

    /** Ferry's types as MPI's fixed-width types (BYTE is unsigned in reductions, as MPI_UINT8_T). */
    public long type(DataType t) {
        return switch (t) {
            case BYTE -> uint8;
            case INT -> int32;
            case LONG -> int64;
            case FLOAT -> float_;
            case DOUBLE -> double_;
            case SHORT -> int16;
            case FLOAT16, BFLOAT16 -> int16; // carried as 16-bit integers; never reduced by MPI (BindingTransport reduces them)
            case SHORT_INT -> shortInt;
            case INT_INT -> twoInt;
            case LONG_INT -> longInt;
            case FLOAT_INT -> floatInt;
            case DOUBLE_INT -> doubleInt;
        };
    }

    public long op(ReduceOp op) {
        return switch (op) {
            case SUM -> sum;
            case MAX -> max;
            case MIN -> min;
            case PROD -> prod;
            case LAND -> land;
            case LOR -> lor;
            case BAND -> band;
            case BOR -> bor;
            case BXOR -> bxor;
            case MINLOC -> minloc;
            case MAXLOC -> maxloc;
        };
    }

    /** The MPI thread level constant of a ThreadLevel (both ABIs number them 0..3 as ThreadLevel's ordinals, checked). */
    public int threadLevel(dev.ferry.ThreadLevel level) {
        return switch (level) {
            case SINGLE -> threadSingle;
            case FUNNELED -> threadFunneled;
            case SERIALIZED -> threadSerialized;
            case MULTIPLE -> threadMultiple;
        };
    }

    public dev.ferry.ThreadLevel threadLevel(int provided) {
        if (provided == threadMultiple) return dev.ferry.ThreadLevel.MULTIPLE;
        if (provided == threadSerialized) return dev.ferry.ThreadLevel.SERIALIZED;
        if (provided == threadFunneled) return dev.ferry.ThreadLevel.FUNNELED;
        return dev.ferry.ThreadLevel.SINGLE;
    }
}
