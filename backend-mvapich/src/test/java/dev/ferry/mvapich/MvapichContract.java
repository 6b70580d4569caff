// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.ReduceOp;
import dev.ferry.SelectionReport;
import dev.ferry.spi.Capability;
import dev.ferry.spi.LoadedLibraries;
import dev.ferry.spi.Probe;
import dev.ferry.testing.CommunicatorContract;
import dev.ferry.testing.Data;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite on backend mvapich, plus its own edge cases: probe details (family,
 * version, library path), auto-selection under an MPICH launch, Open MPI left alone, interop
 * with raw MPI_Comm handles, MPI_Wtime and the thread level.
 */
public class MvapichContract extends CommunicatorContract {

    @Test
    void mvapich_runsOnMvapich() {
        assertEquals("mvapich", comm.backend());
    }

    @Test
    void mvapich_probeNamesFamilyVersionLibraryAndCudaSupport() {
        Probe p = Ferry.lastReport().probe("mvapich");
        assertTrue(p.isAvailable(), p.toString());
        String library = p.details().get("library");
        assertNotNull(library, p.details().toString());
        assertTrue(library.matches("(MPICH|MVAPICH|Intel MPI|Cray MPICH|MVAPICH2-GDR)\\S* \\S+ at /.+"), library);
        Path path = Path.of(library.substring(library.indexOf(" at ") + 4));
        assertTrue(Files.isRegularFile(path), "the reported library exists: " + path);
        assertTrue(p.details().get("family").matches("(MVAPICH2-GDR|MVAPICH|Intel MPI|Cray MPICH|MPICH|MPICH ABI)(, device .*)?"),
                p.details().toString());
        if (Mvapich.libraryVersion().startsWith("MPICH Version")) {
            assertTrue(p.details().get("family").startsWith("MPICH"), p.details().toString());
        }
        assertNotNull(p.details().get("found by"), p.details().toString());
        assertTrue(p.details().get("cuda-aware").contains("MPIX_") || p.details().get("cuda-aware").contains("MV2_USE_CUDA"),
                p.details().toString());
        assertEquals(p.has(Capability.CUDA_AWARE_MPI), comm.supportsDeviceBuffers());
        assertTrue(p.reason().contains(library.substring(0, library.indexOf(" at "))), p.reason());
        // the library the probe names is the one mapped into this process
        Path mapped = LoadedLibraries.find("libmpich.so.12").or(() -> LoadedLibraries.find("libmpi.so.12")).orElseThrow();
        assertEquals(uncheckedRealPath(path), uncheckedRealPath(mapped));
    }

    private static Path uncheckedRealPath(Path p) {
        try {
            return p.toRealPath();
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void mvapich_threadLevelAndSymbolScopeAreReported() {
        Probe p = Ferry.lastReport().probe("mvapich");
        String threads = p.details().get("threads");
        assertTrue(threads.startsWith("MPI_THREAD_"), threads);
        String symbols = p.details().get("symbols");
        assertTrue(symbols.startsWith("RTLD_"), p.details().toString());
        if ("true".equals(dev.ferry.Settings.process().get(dev.ferry.mpi.MpiFfmSettings.MVAPICH_RTLD_GLOBAL))) {
            assertTrue(symbols.startsWith("RTLD_GLOBAL"), symbols);
        }
    }

    @Test
    void mvapich_autoPicksMvapichUnderAnMpichLaunch() {
        SelectionReport r = Ferry.report("auto");
        assertEquals("auto", r.requested());
        // staged (when present) may outrank a host-only mvapich only if it carries device buffers
        Probe chosen = r.probe(r.chosen());
        assertTrue(r.chosen().equals("mvapich") || chosen.has(Capability.CUDA_DEVICE_BUFFERS), r.table());
        if (r.probe("staged") == null) {
            assertEquals("mvapich", r.chosen(), r.table());
        }
    }

    @Test
    void mvapich_openMpiIsNeitherProbedNorLoaded() {
        Probe ompi = Ferry.lastReport().probe("ompi");
        assertNotNull(ompi, "backend-ompi is on the test class path");
        assertFalse(ompi.isAvailable(), "an Open MPI library must not be loaded beside MPICH: " + ompi);
        assertTrue(ompi.reason().contains("MPICH family"), ompi.reason());
        assertTrue(LoadedLibraries.find("libmpi.so.40").isEmpty(), "Open MPI's libmpi is mapped");
        assertTrue(LoadedLibraries.find("libmpi_java").isEmpty(), "Open MPI's libmpi_java is mapped");
    }

    @Test
    void mvapich_unknownBackendListsEveryProvider() {
        BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> Ferry.open("nosuch"));
        assertTrue(e.getMessage().contains("unknown backend 'nosuch'"), e.getMessage());
        for (Probe p : e.report().probes()) {
            assertTrue(e.getMessage().contains(p.provider()), "lists " + p.provider() + ": " + e.getMessage());
        }
    }

    @Test
    void mvapich_wrapsARawMpiComm() {
        int world = Mvapich.MPI_COMM_WORLD;
        try (Communicator c = Mvapich.wrap(world); HostBuffer in = HostBuffer.allocate(8); HostBuffer out = HostBuffer.allocate(8)) {
            Data.put(in.segment(), DataType.LONG, 0, 1);
            c.allReduce(in, out, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals(c.size(), Data.get(out.segment(), DataType.LONG, 0));
            assertEquals(world, Mvapich.handle(c));
            assertEquals(comm.size(), c.size());
        }
        // closing the wrapper did not free MPI_COMM_WORLD: wrap it again and use it
        try (Communicator again = Mvapich.wrap(world)) {
            again.barrier();
        }
        assertTrue(Mvapich.handle(comm) != world, "Ferry's communicators are duplicates of MPI_COMM_WORLD");
        try (Communicator view = Mvapich.wrap(Mvapich.handle(comm))) { // a second view of a dup handle
            assertEquals(comm.rank(), view.rank());
            view.barrier();
        }
        assertUsable(); // closing the view did not free the handle
        assertThrows(InvalidArgumentException.class, () -> Mvapich.wrap(0x04000000)); // MPI_COMM_NULL
        assertThrows(InvalidArgumentException.class, () -> Mvapich.wrap(0x44000007)); // would fail an assertion inside MPICH
        assertThrows(InvalidArgumentException.class, () -> Mvapich.wrap(0x4c00010d)); // MPI_BYTE, a datatype
        assertThrows(InvalidArgumentException.class, () -> Mvapich.wrap(12345));
        try (Communicator self = Mvapich.wrap(0x44000001)) { // MPI_COMM_SELF
            assertEquals(1, self.size());
        }
        assertThrows(InvalidArgumentException.class, () -> Mvapich.handle(null));
    }

    @Test
    void mvapich_wtimeAdvances() throws InterruptedException {
        double t0 = Mvapich.wtime();
        Thread.sleep(20);
        double dt = Mvapich.wtime() - t0;
        assertTrue(dt >= 0.015 && dt < 10, "MPI_Wtime advanced by " + dt + " s");
    }

    @Test
    void mvapich_concurrentThreadsShareACommunicator() throws Exception {
        // MPI_THREAD_MULTIPLE: two threads exchange on different tags at once
        int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (peer >= size) {
            return;
        }
        List<Thread> threads = new java.util.ArrayList<>();
        java.util.concurrent.ConcurrentLinkedQueue<Throwable> errors = new java.util.concurrent.ConcurrentLinkedQueue<>();
        for (int t = 0; t < 2; t++) {
            final int tag = 40 + t;
            threads.add(Thread.ofPlatform().start(() -> {
                try (HostBuffer send = HostBuffer.allocate(4096); HostBuffer recv = HostBuffer.allocate(4096)) {
                    for (int i = 0; i < 50; i++) {
                        Data.put(send.segment(), DataType.INT, 0, rank * 1000 + tag * 100 + i);
                        comm.sendRecv(send, 1024, DataType.INT, peer, tag, recv, 1024, DataType.INT, peer, tag);
                        assertEquals(peer * 1000 + tag * 100 + i, (int) Data.get(recv.segment(), DataType.INT, 0));
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        for (Thread t : threads) t.join();
        assertTrue(errors.isEmpty(), () -> "errors in threads: " + errors);
    }
}
