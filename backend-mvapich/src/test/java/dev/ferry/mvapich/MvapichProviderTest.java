// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.spi.Launch;
import dev.ferry.spi.LoadedLibraries;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The provider without an MPI job: registration, and refusal under an Open MPI launch without loading any MPI. */
class MvapichProviderTest {

    private static ProbeContext context(Map<String, String> env) {
        Launch launch = Launch.detect(env);
        return new ProbeContext() {
            @Override
            public Launch launch() {
                return launch;
            }

            @Override
            public Probe probe(String provider) {
                return Probe.unavailable(provider, "not probed in this test", null);
            }

            @Override
            public dev.ferry.Settings settings() {
                return dev.ferry.Settings.of(java.util.Map.of());
            }
        };
    }

    @Test
    void registeredForServiceLoader() {
        assertTrue(ServiceLoader.load(TransportProvider.class).stream().anyMatch(p -> p.type() == MvapichProvider.class));
        assertEquals("mvapich", new MvapichProvider().name());
    }

    @Test
    void unavailableUnderAnOpenMpiLaunchWithoutLoadingAnMpiLibrary() {
        Probe p = new MvapichProvider().probe(context(Map.of("OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_RANK", "0")));
        assertFalse(p.isAvailable());
        assertTrue(p.reason().contains("Open MPI") && p.reason().contains("mpiexec"), p.reason());
        assertTrue(LoadedLibraries.find("libmpich").isEmpty(), "libmpich was loaded by a refused probe");
        assertTrue(LoadedLibraries.find("libmpi.so.12").isEmpty(), "libmpi.so.12 was loaded by a refused probe");
    }

    @Test
    void mpichLaunchVariablesMakeThisTheFamily() {
        assertEquals(Launch.Family.MPICH, Launch.detect(Map.of("PMI_SIZE", "4", "PMI_RANK", "1")).family());
        assertEquals(Launch.Family.MPICH, Launch.detect(Map.of("MPI_LOCALRANKID", "0")).family());
        assertEquals(Launch.Family.MPICH, Launch.detect(Map.of("MV2_COMM_WORLD_SIZE", "2", "MV2_COMM_WORLD_RANK", "0")).family());
    }
}
