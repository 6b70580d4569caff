// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Settings;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Where Open MPI's JNI library ({@code libmpi_java.so}) is, for launches that do not say. Open MPI's
 * mpirun adds its libdir to {@code java.library.path} of the Java programs it starts; Slurm's srun
 * (and any other launcher) does not, and a running JVM cannot change its {@code java.library.path}.
 * So, before mpi.jar's class {@code mpi.MPI} is first touched: when the library is on no library
 * path, it is looked for in {@code -Dferry.ompi.libdir}, {@code $OMPI_HOME/lib}, the libdir that
 * {@code ompi_info --path libdir} names, and the usual distribution paths, and the file found is
 * put into the system property {@code ferry.ompi.javaLibrary}: the mpi.jar that {@code scripts/setup}
 * builds loads it from there when {@code System.loadLibrary("mpi_java")} fails. Another mpi.jar
 * ignores the property; its failure then says which {@code -Djava.library.path} to give.
 */
final class OmpiJavaLibrary {
    static final String PROPERTY = OmpiSettings.JAVA_LIBRARY.key();
    private static final String FILE = System.mapLibraryName("mpi_java");

    private OmpiJavaLibrary() {
    }

    /** Whether {@code System.loadLibrary("mpi_java")} will find the library by itself. */
    static boolean onLibraryPath() {
        for (String key : List.of("java.library.path", "sun.boot.library.path")) {
            for (String dir : System.getProperty(key, "").split(File.pathSeparator)) {
                if (!dir.isEmpty() && Files.isRegularFile(Path.of(dir, FILE))) return true;
            }
        }
        return false;
    }

    /**
     * Prepares the fallback: when the library is on no library path, finds it and sets
     * {@value #PROPERTY}. Returns how it was found, for the report; empty when nothing was needed.
     */
    static Optional<String> prepare() {
        String named = Settings.process().get(OmpiSettings.JAVA_LIBRARY);
        if (named != null) {
            System.setProperty(PROPERTY, named); // where the mpi.jar of scripts/setup reads it (also when given as FERRY_OMPI_JAVALIBRARY)
            return Optional.of(named + " (ferry.ompi.javaLibrary)");
        }
        if (onLibraryPath()) return Optional.empty();
        for (Candidate c : candidates()) {
            Path f = c.dir().resolve(FILE);
            if (Files.isRegularFile(f)) {
                System.setProperty(PROPERTY, f.toAbsolutePath().toString());
                return Optional.of(f.toAbsolutePath() + " (not on java.library.path; found in " + c.source() + ")");
            }
        }
        return Optional.empty();
    }

    /** Why {@code libmpi_java.so} could not be loaded, with what to do; {@code cause} is the loader's error. */
    static String explain(Throwable cause) {
        String path = System.getProperty("java.library.path", "");
        String found = System.getProperty(PROPERTY); // what prepare() handed to mpi.jar, if anything
        if (found == null) {
            for (Candidate c : candidates()) {
                if (Files.isRegularFile(c.dir().resolve(FILE))) {
                    found = c.dir().resolve(FILE).toString();
                    break;
                }
            }
        }
        String head = "libmpi_java.so could not be loaded (" + cause.getMessage() + ")";
        if (found == null) {
            return head + "; it is on no library path and in none of " + dirs() + ": install Open MPI's Java bindings (Debian/Ubuntu: "
                    + "openmpi-bin; elsewhere an Open MPI configured with --enable-mpi-java), or name its directory with -Dferry.ompi.libdir";
        }
        String dir = Path.of(found).getParent().toString();
        return head + "; it is at " + found + ", which is not on java.library.path (" + path + "): mpirun adds Open MPI's libdir for Java "
                + "programs, srun and other launchers do not. Start java with -Djava.library.path=" + dir + " (or export LD_LIBRARY_PATH="
                + dir + " before srun; `./ferry run --launcher srun` does it), or use the mpi.jar that scripts/setup builds (it loads "
                + "the file found here itself)";
    }

    record Candidate(Path dir, String source) {
    }

    static List<Candidate> candidates() {
        List<Candidate> out = new ArrayList<>();
        String forced = Settings.process().get(OmpiSettings.LIBDIR);
        if (forced != null) out.add(new Candidate(Path.of(forced), "-Dferry.ompi.libdir"));
        for (String v : List.of("OMPI_HOME", "MPI_HOME", "OPAL_PREFIX")) {
            String home = System.getenv(v);
            if (home != null && !home.isBlank()) {
                out.add(new Candidate(Path.of(home, "lib"), "$" + v + "/lib"));
                out.add(new Candidate(Path.of(home, "lib64"), "$" + v + "/lib64"));
            }
        }
        ompiInfoLibdir().ifPresent(d -> out.add(new Candidate(d, "ompi_info --path libdir")));
        String ld = System.getenv("LD_LIBRARY_PATH");
        if (ld != null) {
            for (String d : ld.split(File.pathSeparator)) {
                if (!d.isEmpty()) out.add(new Candidate(Path.of(d), "LD_LIBRARY_PATH"));
            }
        }
        for (String d : List.of("/usr/lib/x86_64-linux-gnu/openmpi/lib", "/usr/lib/aarch64-linux-gnu/openmpi/lib",
                "/usr/lib/powerpc64le-linux-gnu/openmpi/lib", "/usr/lib64/openmpi/lib", "/usr/lib/openmpi/lib",
                "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/opt/openmpi/lib", "/usr/local/lib")) {
            out.add(new Candidate(Path.of(d), "a distribution path"));
        }
        return out;
    }

    private static String dirs() {
        Set<String> d = new LinkedHashSet<>();
        for (Candidate c : candidates()) d.add(c.dir().toString());
        return d.toString();
    }

    /** {@code ompi_info --path libdir} of the ompi_info on PATH (the same answer as mpirun's). */
    private static Optional<Path> ompiInfoLibdir() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path exe = Path.of(dir.isEmpty() ? "." : dir, "ompi_info");
            if (!Files.isExecutable(exe)) continue;
            try {
                Process p = new ProcessBuilder(exe.toString(), "--path", "libdir").redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(10, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    return Optional.empty();
                }
                int colon = out.indexOf(':');
                String d = (colon < 0 ? out : out.substring(colon + 1)).trim();
                return d.isEmpty() ? Optional.empty() : Optional.of(Path.of(d));
            } catch (IOException | RuntimeException e) {
                return Optional.empty();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.empty();
            }
        }
        return Optional.empty();
    }
}
