// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Settings;

/**
 * Which of backend ompi's two paths this process uses, and why: {@code ferry.ompi.binding} =
 * {@code auto} (default), {@code ffm} (Open MPI's C API through java.lang.foreign: no mpi.jar
 * needed, the only path on Open MPI 6) or {@code java} (Open MPI's Java bindings, mpi.jar +
 * libmpi_java.so). {@code auto} takes the path that measured faster on host buffers
 * ({@link #AUTO_PREFERS}, see bench/results/2026-11-23-ompi-ffm-vs-mpijar.md) when it is usable, else the
 * other one.
 */
final class OmpiBinding {
    enum Path {
        FFM("ffm", "java.lang.foreign on libmpi.so.40"),
        JAVA("java", "Open MPI's Java bindings (mpi.jar + libmpi_java.so)");

        final String setting;
        final String label;

        Path(String setting, String label) {
            this.setting = setting;
            this.label = label;
        }
    }

    /** What auto prefers, from the measurement recorded in bench/results/2026-11-23-ompi-ffm-vs-mpijar.md. */
    static final Path AUTO_PREFERS = Path.FFM;
    static final String AUTO_WHY = "the FFM path had the lower 8-byte ping-pong latency in every one of 15 paired runs against mpi.jar "
            + "(1.3-2.2 us vs 2.1-3.1 us one way, host buffers, 2 ranks; 4 MiB bandwidth equal within the noise): "
            + "bench/results/2026-11-23-ompi-ffm-vs-mpijar.md";

    /** The chosen path and the sentence that says why, for the probe. */
    record Choice(Path path, String reason, Throwable javaFailure) {
    }

    private OmpiBinding() {
    }

    static String setting(Settings settings) {
        return settings.get(OmpiSettings.BINDING);
    }

    /** Whether mpi.jar is on the class path and its JNI library loads; null if so, else why not. */
    static Throwable javaBindingsMissing() {
        try {
            Class.forName("mpi.MPI", true, OmpiBinding.class.getClassLoader());
            return null;
        } catch (ClassNotFoundException | LinkageError e) {
            return e;
        }
    }

    /** Decides; {@code ffmLoads} says whether the FFM binding found and loaded libmpi.so.40 (null if so, else why not). */
    static Choice choose(String setting, java.util.function.Supplier<Throwable> ffmProblem) {
        return switch (setting) {
            case "ffm" -> new Choice(Path.FFM, "-Dferry.ompi.binding=ffm", null);
            case "java" -> new Choice(Path.JAVA, "-Dferry.ompi.binding=java", null);
            default -> {
                if (AUTO_PREFERS == Path.FFM) {
                    Throwable ffm = ffmProblem.get();
                    if (ffm == null) {
                        yield new Choice(Path.FFM, "auto: " + AUTO_WHY, null);
                    }
                    Throwable jar = javaBindingsMissing();
                    yield jar == null
                            ? new Choice(Path.JAVA, "auto: the FFM binding is unusable here (" + ffm.getMessage() + "), mpi.jar loads", null)
                            : new Choice(Path.FFM, "auto: neither path is usable (FFM: " + ffm.getMessage() + "; mpi.jar: " + jar + ")", jar);
                }
                Throwable jar = javaBindingsMissing();
                yield jar == null ? new Choice(Path.JAVA, "auto: mpi.jar is on the class path and loads; " + AUTO_WHY, null)
                        : new Choice(Path.FFM, "auto: mpi.jar is not usable (" + jar + ")", jar);
            }
        };
    }
}
