// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Ferry;
import dev.ferry.spi.LoadedLibraries;
import dev.ferry.spi.Probe;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Run first in a rank job that must use one particular MPI library ({@code -Dferry.test.expectLibrary=PATH},
 * set by {@link Mvapich2#job}): the chosen backend's probe names that library, and that file is
 * the MPI library mapped into the process (so a system MPICH found first would fail here, not pass
 * unnoticed). Without the property it checks nothing.
 */
public class LoadedMpiCheck {
    /** The expected library path. */
    public static final String EXPECT = "ferry.test.expectLibrary";

    @Test
    void theExpectedMpiLibraryIsLoaded() {
        String expect = System.getProperty(EXPECT);
        if (expect == null || expect.isBlank()) {
            return;
        }
        Path want = real(Path.of(expect));
        String backend = TestWorld.world().backend();
        Probe p = Ferry.lastReport().probe(backend);
        String library = p.details().get("library");
        if (library == null && p.details().containsKey("inner")) {
            library = Ferry.lastReport().probe(p.details().get("inner").split(" ")[0]).details().get("library");
        }
        assertNotNull(library, "backend " + backend + " reports no library: " + p.details());
        String where = library.substring(library.indexOf(" at ") + 4);
        assertEquals(want, real(Path.of(where)), "the probe's library: " + library);
        Optional<Path> mapped = LoadedLibraries.find("libmpi.so.12");
        assertTrue(mapped.isPresent(), "no libmpi.so.12 is mapped");
        assertEquals(want, real(mapped.get()), "the mapped MPI library");
        assertTrue(LoadedLibraries.find("libmpich.so").isEmpty(), "a second MPI (libmpich) is mapped: " + LoadedLibraries.find("libmpich.so"));
        if (TestWorld.world().rank() == 0) {
            System.out.println("[ferry-test] loaded MPI: " + library + " (" + p.details().get("family") + ")");
        }
    }

    private static Path real(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
