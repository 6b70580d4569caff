// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Ferry;
import dev.ferry.SelectionReport;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Probe;
import dev.ferry.testing.CommunicatorContract;
import org.junit.jupiter.api.Test;

/** The conformance suite on backend ompi (either path), plus its own edge cases: probe details, selection errors; mpi.jar interop is in {@link OmpiInteropContract}. */
public class OmpiContract extends CommunicatorContract {

    @Test
    void ompi_runsOnOmpi() {
        assertEquals("ompi", comm.backend());
    }

    @Test
    void ompi_probeNamesLibraryVersionAndCudaSupport() {
        SelectionReport r = Ferry.lastReport();
        Probe p = r.probe("ompi");
        assertTrue(p.isAvailable(), p.toString());
        assertTrue(p.details().get("library").contains("Open MPI"), p.details().toString());
        assertTrue(p.details().get("cuda-aware").contains("MPIX_Query_cuda_support"), p.details().toString());
        assertEquals(p.has(Capability.CUDA_AWARE_MPI), comm.supportsDeviceBuffers());
        Probe mvapich = r.probe("mvapich");
        if (mvapich != null) {
            assertFalse(mvapich.isAvailable(), "an MPICH library must not be loaded beside Open MPI: " + mvapich);
        }
    }

    @Test
    void ompi_unknownBackendListsEveryProvider() {
        BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> Ferry.open("nosuch"));
        assertTrue(e.getMessage().contains("unknown backend 'nosuch'"), e.getMessage());
        for (Probe p : e.report().probes()) {
            assertTrue(e.getMessage().contains(p.provider()), "lists " + p.provider() + ": " + e.getMessage());
            assertTrue(e.getMessage().contains(p.reason()), "gives the reason of " + p.provider());
        }
    }

    @Test
    void ompi_probeSaysWhichBindingAndWhy() {
        Probe p = Ferry.lastReport().probe("ompi");
        String binding = p.details().get("binding");
        String asked = System.getProperty("ferry.ompi.binding", "auto");
        assertTrue(binding != null && (asked.equals("auto") || binding.startsWith(asked + ":")), p.details().toString());
        assertTrue(p.reason().contains(" via "), p.reason());
        assertTrue(p.details().get("large messages") != null, p.details().toString());
    }
}
