// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import dev.ferry.spi.TransportProvider;
import dev.ferry.testing.MpiJob;
import dev.ferry.testing.Mvapich2;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A backend and the launcher family that starts it: what every reliability test runs for. A pair
 * whose backend has no provider on the class path, or whose launcher is not installed, is skipped
 * with that reason; a backend that is on the class path but unavailable in the ranks (its probe
 * says no) is skipped by the rank runner with the probe's reason ({@link MpiJob#skipWhenUnavailable()}).
 *
 * <p>{@code -Dferry.test.pairs=ompi/openmpi,mvapich/mpich} restricts the list.
 */
public record Pair(String backend, MpiJob.Family family, String launcher) {
    /** A pair under its family's default launcher. */
    public Pair(String backend, MpiJob.Family family) {
        this(backend, family, "");
    }

    /**
     * Backend mvapich under MVAPICH2's own mpiexec (a launcher variant of the MPICH family, see
     * {@link Mvapich2}); not in {@link #ALL}: the tests that run it add it ({@link #selectedWithMvapich2()}).
     * It fails (does not skip) when MVAPICH2 is configured but unusable or the backend is unavailable in its ranks.
     */
    public static final Pair MVAPICH2 = new Pair("mvapich", MpiJob.Family.MPICH, "mvapich2");

    /** Every pair Ferry supports, whether or not this build has its backend. */
    public static final List<Pair> ALL = List.of(
            new Pair("ompi", MpiJob.Family.OPEN_MPI),
            new Pair("mvapich", MpiJob.Family.MPICH),
            new Pair("staged", MpiJob.Family.OPEN_MPI),
            new Pair("staged", MpiJob.Family.MPICH));

    /** The pairs selected by {@code ferry.test.pairs} (default: all). */
    public static List<Pair> selected() {
        String only = System.getProperty("ferry.test.pairs", "").trim();
        if (only.isEmpty()) return ALL;
        Set<String> names = Stream.of(only.split(",")).map(s -> s.trim().toLowerCase(Locale.ROOT)).collect(Collectors.toSet());
        return ALL.stream().filter(p -> names.contains(p.id())).toList();
    }

    /** {@link #selected()} and {@link #MVAPICH2} (when {@code ferry.test.pairs} is empty or names "mvapich/mvapich2"). */
    public static List<Pair> selectedWithMvapich2() {
        String only = System.getProperty("ferry.test.pairs", "").trim().toLowerCase(Locale.ROOT);
        List<Pair> out = new java.util.ArrayList<>(selected());
        if (only.isEmpty() || Stream.of(only.split(",")).map(String::trim).anyMatch(MVAPICH2.id()::equals)) out.add(MVAPICH2);
        return out;
    }

    /** "ompi/openmpi", "mvapich/mpich", "mvapich/mvapich2". */
    public String id() {
        return backend + "/" + (!launcher.isEmpty() ? launcher : family == MpiJob.Family.OPEN_MPI ? "openmpi" : "mpich");
    }

    /** Why this pair cannot run here, or empty. */
    public Optional<String> unavailable() {
        if (launcher.equals("mvapich2") && Mvapich2.home().isEmpty()) { // configured but unusable: home() fails the test
            return Optional.of("MVAPICH2 rows not configured: " + Mvapich2.howToRun());
        }
        Set<String> providers = providers();
        if (!providers.contains(backend)) {
            return Optional.of("backend " + backend + " has no provider on the test class path (providers here: " + providers
                    + "); it is covered once its module provides one");
        }
        if (launcher.isEmpty() && !MpiJob.launcherInstalled(family)) {
            return Optional.of("the " + family + " launcher (" + MpiJob.launcherPath(family) + ") is not installed");
        }
        return Optional.empty();
    }

    private static Set<String> providers() {
        Set<String> names = new TreeSet<>();
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class)) names.add(p.name());
        return names;
    }

    /** A job of this pair: launcher family, backend property, a visible skip when the backend is unavailable in the ranks. */
    public MpiJob job(String name, int np) {
        if (launcher.equals("mvapich2")) {
            return Mvapich2.job(backend + "-mvapich2-" + name, np).property("ferry.backend", backend);
        }
        return MpiJob.of(backend + "-" + (family == MpiJob.Family.OPEN_MPI ? "ompi" : "mpich") + "-" + name, family, np)
                .property("ferry.backend", backend).skipWhenUnavailable();
    }

    /**
     * The job's per-test results as dynamic tests under this pair's name; a single skipped test with
     * the reason when the pair cannot run here.
     */
    public org.junit.jupiter.api.DynamicNode tests(java.util.function.Supplier<MpiJob> job) {
        Optional<String> why = unavailable();
        if (why.isPresent()) {
            return org.junit.jupiter.api.DynamicContainer.dynamicContainer(id(), Stream.of(
                    org.junit.jupiter.api.DynamicTest.dynamicTest("unavailable", () -> dev.ferry.testing.Required.assume(backend, false, why::get))));
        }
        return org.junit.jupiter.api.DynamicContainer.dynamicContainer(id(), Stream.of(job.get().asTests()));
    }

    @Override
    public String toString() {
        return id();
    }
}
