// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.ReduceOp;
import dev.ferry.testing.Data;
import dev.ferry.testing.TestWorld;
import mpi.Intracomm;
import mpi.MPI;
import org.junit.jupiter.api.Test;

/** Interop of the mpi.jar path ({@code ferry.ompi.binding=java}): {@link Ompi#wrap} and {@link Ompi#unwrap}. Needs mpi.jar to build. */
public class OmpiInteropContract {

    @Test
    void ompi_wrapsAnExistingIntracomm() throws Exception {
        Intracomm mine = MPI.COMM_WORLD.dup();
        try (Communicator c = Ompi.wrap(mine); HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.LONG, 0, 1);
            c.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals(c.size(), Data.get(out.segment(), DataType.LONG, 0));
            assertEquals(MPI.COMM_WORLD.getRank(), c.rank());
        }
        assertFalse(mine.isNull(), "closing the wrapper leaves the Intracomm to its owner");
        assertEquals(MPI.COMM_WORLD.getSize(), mine.getSize());
        mine.free();
        assertThrows(InvalidArgumentException.class, () -> Ompi.wrap(null));
        assertTrue(Ompi.unwrap(TestWorld.world()) != null);
    }
}
