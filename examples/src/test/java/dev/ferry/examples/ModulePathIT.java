// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.MpiJob;
import dev.ferry.testing.Required;
import java.io.File;
import java.lang.module.FindException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Ferry on the module path, as README's "Using Ferry in your own program" launches it: the library
 * modules and JCuda on {@code --module-path}, 2 ranks under each MPI family's launcher. Module
 * {@code dev.ferry.api}'s doctor, launched with {@code -m}, must find the family's backend and the
 * collectives planner through the descriptors' {@code uses} and {@code provides} alone (no class
 * path); an example on the class path, with Ferry on the module path, moves data and checks it.
 * Neither may print the JDK's warning about native access that was not enabled.
 */
class ModulePathIT {
    /** The modules that call restricted methods or load native libraries (README's launch line). */
    static final String NATIVE_ACCESS = "dev.ferry.api,dev.ferry.cuda,dev.ferry.mpi,dev.ferry.ompi,dev.ferry.mvapich,dev.ferry.nccl,jcuda";

    /** The library modules that the module path must hold (ferry-testkit is for tests, not run here). */
    static final Set<String> LIBRARY = Set.of("dev.ferry.api", "dev.ferry.cuda", "dev.ferry.collectives", "dev.ferry.mpi",
            "dev.ferry.ompi", "dev.ferry.mvapich", "dev.ferry.staged", "dev.ferry.nccl");

    @ParameterizedTest(name = "{0}")
    @EnumSource(MpiJob.Family.class)
    void doctorAsAModuleFindsTheBackendAndThePlanner(MpiJob.Family family) throws Exception {
        String backend = assumeLauncher(family);
        // "-m MODULE/CLASS" takes the place of the main class: the class path given is empty
        MpiJob.Result r = onModulePath(MpiJob.of("module-path-doctor-" + backend, family, 2))
                .main("-m", "dev.ferry.api/dev.ferry.tools.Doctor", "--open").timeout(180).run();
        assertFalse(r.timedOut(), () -> "timed out:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), () -> "exit code; output:\n" + r.tail(60));
        String log = r.output();
        assertEquals(2, count(log, "\nselected " + backend + ": auto: "), () -> "both ranks select " + backend + ":\n" + r.tail(60));
        String startUp = log.lines().filter(l -> l.contains("ferry: backend " + backend + ": ")).findFirst().orElse("");
        assertTrue(startUp.endsWith("; collectives planned per call"), () -> "the start-up line names the planner:\n" + r.tail(60));
        for (String b : List.of("ompi", "mvapich", "staged", "nccl")) {
            assertTrue(log.contains("\n  " + b + " ") || log.contains("\n* " + b + " "), () -> "provider " + b + " in the table:\n" + r.tail(60));
        }
        String algorithms = log.lines().filter(l -> l.startsWith("  algorithms: ")).findFirst().orElse("");
        assertTrue(algorithms.contains(" native") && algorithms.contains(" p2p") && algorithms.contains(" nccl"),
                () -> "both algorithm providers (collectives' and nccl's):\n" + r.tail(60));
        assertFalse(log.contains("restricted method"), () -> "native access not enabled for a module:\n" + r.tail(60));
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(MpiJob.Family.class)
    void anExampleOnTheClassPathUsesFerryOnTheModulePath(MpiJob.Family family) throws Exception {
        String backend = assumeLauncher(family);
        MpiJob.Result r = onModulePath(MpiJob.of("module-path-example-" + backend, family, 2))
                .classPath(location(ScatterShiftGather.class).toString())
                .main(ScatterShiftGather.class.getName(), "--floats", "300000", "--shift", "-1.25").timeout(120).run();
        assertFalse(r.timedOut(), () -> "timed out:\n" + r.tail(40));
        assertEquals(0, r.exitCode(), () -> "exit code; output:\n" + r.tail(60));
        assertTrue(r.output().contains("[ok] scatter-shift-gather: 2 ranks, 300000 floats"), () -> r.tail(40));
        assertTrue(r.output().contains("ferry: backend " + backend + ": "), () -> r.tail(40));
        assertFalse(r.output().contains("restricted method"), () -> "native access not enabled for a module:\n" + r.tail(60));
    }

    /** The backend that {@code family}'s launcher selects; skips (or fails, where required) without that launcher. */
    private static String assumeLauncher(MpiJob.Family family) {
        String backend = family == MpiJob.Family.OPEN_MPI ? "ompi" : "mvapich";
        Required.assume(backend, MpiJob.launcherInstalled(family), () -> "no " + family + " launcher here");
        return backend;
    }

    /** {@code job} with Ferry's library modules on the module path and an empty class path. */
    private static MpiJob onModulePath(MpiJob job) {
        return job.classPath("").property("ferry.ompi.binding", "ffm")
                .jvmArgs("--module-path", modulePath(), "--add-modules", "ALL-MODULE-PATH", "--enable-native-access=" + NATIVE_ACCESS);
    }

    /**
     * The test class path's Ferry library modules (jars, or {@code target/classes} folders, with a
     * module descriptor) and JCuda's two jars; fails when a library module is missing or
     * automatic (jars without a descriptor, e.g. old ones from a local repository).
     */
    static String modulePath() {
        List<String> path = new ArrayList<>();
        Set<String> found = new TreeSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (entry.isEmpty() || !Files.exists(Path.of(entry))) {
                continue;
            }
            Set<ModuleReference> refs;
            try {
                refs = ModuleFinder.of(Path.of(entry)).findAll();
            } catch (FindException e) {
                continue; // not a module (a folder of classes without a descriptor)
            }
            for (ModuleReference ref : refs) {
                ModuleDescriptor d = ref.descriptor();
                if (LIBRARY.contains(d.name()) && !d.isAutomatic() || d.name().equals("jcuda") || d.name().equals("jcuda.natives")) {
                    path.add(entry);
                    found.add(d.name());
                }
            }
        }
        Set<String> missing = new TreeSet<>(LIBRARY);
        missing.add("jcuda");
        missing.add("jcuda.natives");
        missing.removeAll(found);
        assertTrue(missing.isEmpty(), () -> "not on the test class path as modules: " + missing + " (build the library modules in the same run: -am)");
        return String.join(File.pathSeparator, path);
    }

    private static Path location(Class<?> c) throws URISyntaxException {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
