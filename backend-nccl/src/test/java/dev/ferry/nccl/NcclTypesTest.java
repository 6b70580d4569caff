// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class NcclTypesTest {

    @Test
    void ferryTypesMapToNcclTypes() {
        assertEquals(NcclTypes.UINT8, NcclTypes.dataType(DataType.BYTE), "bytes reduce unsigned in Ferry");
        assertEquals(NcclTypes.INT32, NcclTypes.dataType(DataType.INT));
        assertEquals(NcclTypes.INT64, NcclTypes.dataType(DataType.LONG));
        assertEquals(NcclTypes.FLOAT32, NcclTypes.dataType(DataType.FLOAT));
        assertEquals(NcclTypes.FLOAT64, NcclTypes.dataType(DataType.DOUBLE));
        assertEquals(NcclTypes.FLOAT16, NcclTypes.dataType(DataType.FLOAT16));
        assertEquals(NcclTypes.BFLOAT16, NcclTypes.dataType(DataType.BFLOAT16));
        for (DataType t : EnumSet.of(DataType.SHORT, DataType.SHORT_INT, DataType.INT_INT, DataType.LONG_INT, DataType.FLOAT_INT, DataType.DOUBLE_INT)) {
            assertEquals(-1, NcclTypes.dataType(t), t.toString());
        }
        assertEquals(NcclTypes.SUM, NcclTypes.redOp(ReduceOp.SUM));
        assertEquals(NcclTypes.PROD, NcclTypes.redOp(ReduceOp.PROD));
        assertEquals(NcclTypes.MAX, NcclTypes.redOp(ReduceOp.MAX));
        assertEquals(NcclTypes.MIN, NcclTypes.redOp(ReduceOp.MIN));
    }

    @Test
    void everyCombinationIsEitherNcclsOrHasAReason() {
        Set<DataType> nccl = EnumSet.of(DataType.BYTE, DataType.INT, DataType.LONG, DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.BFLOAT16);
        Set<ReduceOp> ops = EnumSet.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN);
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue; // refused by the API before any backend
                var lack = NcclTypes.lacks(t, op);
                assertEquals(!(nccl.contains(t) && ops.contains(op)), lack.isPresent(), t + " " + op + ": " + lack);
            }
        }
        assertTrue(NcclTypes.lacks(DataType.SHORT, ReduceOp.SUM).get().contains("16-bit integer"));
        assertTrue(NcclTypes.lacks(DataType.INT_INT, ReduceOp.MINLOC).get().contains("pair"));
        assertTrue(NcclTypes.lacks(DataType.INT, ReduceOp.BXOR).get().contains("bitwise"));
        assertTrue(NcclTypes.lacks(DataType.LONG, ReduceOp.LAND).get().contains("logical"));
    }

    @Test
    void versionCodesOfBothEras() {
        assertEquals("2.8.4", NcclTypes.versionString(2804));
        assertEquals("2.30.7", NcclTypes.versionString(23007));
        assertArrayEquals(new int[] {2, 18, 1}, NcclTypes.version(21801));
        assertEquals(2804, NcclTypes.versionCode(2, 8, 4));
        assertEquals(21800, NcclTypes.versionCode(2, 18, 0));
        assertEquals("ncclInvalidUsage (5)", NcclTypes.resultName(5));
        assertEquals("ncclResult_t 42", NcclTypes.resultName(42));
    }
}
