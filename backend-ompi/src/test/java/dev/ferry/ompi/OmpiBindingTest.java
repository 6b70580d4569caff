// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.FerryException;
import org.junit.jupiter.api.Test;

/** The choice between backend ompi's two paths, without loading any MPI library. */
class OmpiBindingTest {

    @Test
    void anExplicitSettingWins() {
        assertEquals(OmpiBinding.Path.FFM, OmpiBinding.choose("ffm", () -> new FerryException("no library")).path());
        assertEquals(OmpiBinding.Path.JAVA, OmpiBinding.choose("java", () -> null).path());
        assertTrue(OmpiBinding.choose("java", () -> null).reason().contains("-Dferry.ompi.binding=java"));
    }

    @Test
    void autoTakesThePreferredPathAndSaysWhy() {
        OmpiBinding.Choice c = OmpiBinding.choose("auto", () -> null);
        assertEquals(OmpiBinding.AUTO_PREFERS, c.path());
        assertTrue(c.reason().startsWith("auto: ") && c.reason().contains("bench/results/2026-11-23-ompi-ffm-vs-mpijar.md"), c.reason());
    }

    @Test
    void autoFallsBackWhenTheFfmBindingCannotLoadTheLibrary() {
        OmpiBinding.Choice c = OmpiBinding.choose("auto", () -> new FerryException("no Open MPI library (libmpi.so.40) found"));
        boolean jar = OmpiBinding.javaBindingsMissing() == null;
        assertEquals(jar ? OmpiBinding.Path.JAVA : OmpiBinding.Path.FFM, c.path(), c.reason());
        assertTrue(c.reason().contains("no Open MPI library"), c.reason());
    }
}
