// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

/**
 * MVAPICH2 as a launcher of the MPICH family: jobs started by the Hydra {@code mpiexec} of an
 * MVAPICH2 installation (built by {@code scripts/build-mvapich2.sh}, which {@code ./ferry test}
 * runs), whose ranks load that installation's {@code libmpi.so.12} and not the system's MPICH.
 *
 * <p>Setting: {@code ferry.test.mvapich2.home}, the installation prefix ({@code ./ferry test} sets
 * it). When it is given, the installation must be usable: a missing {@code bin/mpiexec} or
 * {@code lib/libmpi.so.12} fails the MVAPICH2 rows. When it is not given (a plain {@code mvn
 * verify}), the rows are skipped with a reason that says how to run them, unless
 * {@code ferry.test.mvapich2.required=true}, which makes them fail.
 *
 * <p>Every job gets {@code LD_LIBRARY_PATH=PREFIX/lib} and {@code ferry.test.expectLibrary=PREFIX/lib/libmpi.so.12};
 * {@link LoadedMpiCheck} (as the first class of a rank job) fails when another library was loaded.
 */
public final class Mvapich2 {
    /** The installation prefix. */
    public static final String HOME = "ferry.test.mvapich2.home";
    /** When true, an unset {@link #HOME} fails instead of skipping. */
    public static final String REQUIRED = "ferry.test.mvapich2.required";

    private Mvapich2() {
    }

    /** The prefix when configured and usable; empty when not configured; throws AssertionError when configured but unusable. */
    public static Optional<Path> home() {
        String h = System.getProperty(HOME, "").trim();
        if (h.isEmpty()) {
            if (Boolean.getBoolean(REQUIRED)) {
                throw new AssertionError(HOME + " is not set but " + REQUIRED + "=true: " + howToRun());
            }
            return Optional.empty();
        }
        Path p = Path.of(h).toAbsolutePath();
        if (!Files.isExecutable(p.resolve("bin/mpiexec")) || !Files.exists(p.resolve("lib/libmpi.so.12"))) {
            throw new AssertionError("-D" + HOME + "=" + h + " is not a usable MVAPICH2 installation (needs bin/mpiexec and lib/libmpi.so.12): "
                    + howToRun());
        }
        return Optional.of(p);
    }

    /** Why the rows are not run here, when {@link #HOME} is not set. */
    public static String howToRun() {
        return "run ./ferry test (it builds MVAPICH2 with scripts/build-mvapich2.sh), or pass -D" + HOME
                + "=$(scripts/build-mvapich2.sh) to Maven";
    }

    /** The installation's MPI library. */
    public static Path library(Path home) {
        return home.resolve("lib/libmpi.so.12");
    }

    /** A job of {@code np} ranks under this installation's mpiexec (call only when {@link #home()} is present). */
    public static MpiJob job(String name, int np) {
        Path home = home().orElseThrow(() -> new AssertionError(HOME + " is not set: " + howToRun()));
        String ld = home.resolve("lib") + Optional.ofNullable(System.getenv("LD_LIBRARY_PATH")).filter(s -> !s.isEmpty()).map(s -> ":" + s).orElse("");
        return MpiJob.of(name, MpiJob.Family.MPICH, np)
                .launcher(home.resolve("bin/mpiexec").toString())
                .env("LD_LIBRARY_PATH", ld)
                .property(LoadedMpiCheck.EXPECT, library(home).toString());
    }

    /**
     * The rows of an MVAPICH2 test factory: {@code rows.get()} when the installation is configured,
     * one failing test when it is configured but unusable, one skipped test with the reason when it is not configured.
     */
    public static DynamicNode rows(String name, java.util.function.Supplier<DynamicNode> rows) {
        Optional<Path> home;
        try {
            home = home();
        } catch (AssertionError e) {
            return DynamicContainer.dynamicContainer(name, Stream.of(DynamicTest.dynamicTest("MVAPICH2 installation", () -> Assertions.fail(e.getMessage()))));
        }
        if (home.isEmpty()) {
            return DynamicContainer.dynamicContainer(name, Stream.of(DynamicTest.dynamicTest("MVAPICH2 installation",
                    () -> Assumptions.abort("MVAPICH2 rows not configured: " + howToRun()))));
        }
        return rows.get();
    }
}
