// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.Communicator;
import dev.ferry.ompi.Ompi;
import dev.ferry.spi.LoadedLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Field;
import java.nio.file.Path;
import mpi.Comm;
import mpi.Intracomm;

/**
 * Open MPI's communicator handle table, read through MPI_Comm_c2f: the Fortran handle of a
 * communicator is its index in that table, and a freed communicator's index is reused. So the
 * index a fresh duplicate gets does not grow over cycles unless communicators leak.
 */
final class OmpiHandles {
    private static MethodHandle c2f;

    private OmpiHandles() {
    }

    static long nextCommunicatorIndex(Communicator world) {
        if (world instanceof dev.ferry.spi.CheckedCommunicator front && front.transport(dev.ferry.mpi.FfmTransport.class) instanceof dev.ferry.mpi.FfmTransport f) {
            // backend ompi's FFM path: MPI_Comm_dup through the same binding, the handle is the pointer
            dev.ferry.mpi.Mpi.Scratch s = dev.ferry.mpi.Mpi.scratch();
            dev.ferry.mpi.Mpi.check("MPI_Comm_dup", dev.ferry.mpi.Mpi.commDup(f.handle(), s.handle));
            long dup = s.handle();
            try {
                return (int) c2f().invokeExact(MemorySegment.ofAddress(dup));
            } catch (Throwable e) {
                throw new IllegalStateException("cannot read Open MPI's communicator handle index: " + e, e);
            } finally {
                s.handle(dup);
                dev.ferry.mpi.Mpi.commFree(s.handle);
            }
        }
        try {
            Intracomm dup = Ompi.unwrap(world).dup();
            try {
                Field f = Comm.class.getDeclaredField("handle");
                f.setAccessible(true);
                return (int) c2f().invokeExact(MemorySegment.ofAddress(f.getLong(dup)));
            } finally {
                dup.free();
            }
        } catch (Throwable e) {
            throw new IllegalStateException("cannot read Open MPI's communicator handle index: " + e, e);
        }
    }

    private static synchronized MethodHandle c2f() {
        if (c2f == null) {
            SymbolLookup lookup = SymbolLookup.loaderLookup();
            MemorySegment fn = lookup.find("MPI_Comm_c2f").orElseGet(() -> {
                Path lib = LoadedLibraries.find("libmpi.so").orElseThrow(() -> new IllegalStateException("libmpi.so is not loaded"));
                return SymbolLookup.libraryLookup(lib, Arena.global()).find("MPI_Comm_c2f").orElseThrow();
            });
            c2f = Linker.nativeLinker().downcallHandle(fn, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        }
        return c2f;
    }
}
