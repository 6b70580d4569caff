// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

/**
 * Launches a real multi-process job ({@code mpirun} of Open MPI or {@code mpiexec} of MPICH) whose
 * ranks run {@link RankRunner}, and turns the ranks' results into JUnit dynamic tests: a test
 * passes only if it passed on every rank; a rank's failure message is the test's failure. Used by
 * every backend's integration test (Failsafe), so that a failing rank fails the build.
 *
 * <p>Settings (system properties of the test JVM): {@code ferry.test.np} (e.g. "2,4"),
 * {@code ferry.test.timeout} (seconds per job), {@code ferry.test.reports} (output folder),
 * {@code ferry.test.ompi.launcher}/{@code ferry.test.mpich.launcher} (launcher paths),
 * {@code ferry.test.oversubscribe} (default true). The ranks' flight-recorder dumps go to the job's
 * folder, {@code flight/} ({@link #flightDir}), unless the job sets {@code ferry.flight.dir}.
 */
public final class MpiJob {
    /** The result line a rank writes for its MPI_Finalize when it was bounded ({@link RankRunner}). */
    private static final String FINALIZE = "MPI_Finalize";

    /** MPI family of the launcher. */
    public enum Family {
        OPEN_MPI, MPICH
    }

    private final String name;
    private final Family family;
    private final int np;
    private final List<String> classes = new ArrayList<>();
    private final Map<String, String> properties = new LinkedHashMap<>();
    private final Map<String, String> environment = new LinkedHashMap<>();
    private final List<String> launcherPrefix = new ArrayList<>();
    private final List<String> launcherOptions = new ArrayList<>();
    private final List<String> jvmArgs = new ArrayList<>();
    private String launcher; // null: the family's (launcherPath)
    private final List<String> launcherCommand = new ArrayList<>();
    private String classPath; // null: this JVM's (classPath())
    private String mainClass = RankRunner.class.getName();
    private List<String> mainArgs;
    private long timeoutSeconds = Long.getLong("ferry.test.timeout", 600);

    private MpiJob(String name, Family family, int np) {
        this.name = name;
        this.family = family;
        this.np = np;
    }

    /** A job of {@code np} ranks under the given family's launcher. */
    public static MpiJob of(String name, Family family, int np) {
        return new MpiJob(name, family, np);
    }

    /** Test classes every rank runs, in this order. */
    public MpiJob classes(Class<?>... tests) {
        for (Class<?> c : tests) classes.add(c.getName());
        return this;
    }

    /** A -D system property for every rank. */
    public MpiJob property(String key, String value) {
        properties.put(key, value);
        return this;
    }

    /** An environment variable for every rank. */
    public MpiJob env(String key, String value) {
        environment.put(key, value);
        return this;
    }

    /** Words put before the launcher, e.g. {@code ip netns exec NS ...} to start it inside a network namespace. */
    public MpiJob launcherPrefix(String... words) {
        launcherPrefix.addAll(List.of(words));
        return this;
    }

    /** This job's launcher executable instead of the family's (e.g. another installation's Hydra {@code mpiexec}: {@link Mvapich2}). */
    public MpiJob launcher(String path) {
        this.launcher = path;
        return this;
    }

    /** Options for the launcher, put before the rank count (e.g. {@code --hostfile F}, {@code --mca btl tcp,self}). */
    public MpiJob launcherOptions(String... options) {
        launcherOptions.addAll(List.of(options));
        return this;
    }

    /**
     * Another launcher instead of the family's mpirun/mpiexec, e.g. {@code srun}: the words, then
     * {@link #launcherOptions}, then {@code -n NP} (no family defaults such as --oversubscribe).
     */
    public MpiJob launcherCommand(String... words) {
        launcherCommand.addAll(List.of(words));
        return this;
    }

    /** Options for every rank's JVM, after the defaults (so {@code -Xmx} here wins). */
    public MpiJob jvmArgs(String... args) {
        jvmArgs.addAll(List.of(args));
        return this;
    }

    /**
     * The ranks' class path instead of this test JVM's; empty: none (e.g. for a module-path launch,
     * {@code -m} in {@link #main} and the modules in {@link #jvmArgs}).
     */
    public MpiJob classPath(String classPath) {
        this.classPath = classPath;
        return this;
    }

    /** Skip (with the reason, as one skipped test) instead of failing when the backend is unavailable in the ranks. */
    public MpiJob skipWhenUnavailable() {
        return property("ferry.test.skipUnavailable", "true");
    }

    /** Runs {@code main} with {@code args} instead of the test runner (for tools and failure cases). */
    public MpiJob main(String main, String... args) {
        this.mainClass = main;
        this.mainArgs = List.of(args);
        return this;
    }

    public MpiJob timeout(long seconds) {
        this.timeoutSeconds = seconds;
        return this;
    }

    /** Where the ranks of this job write their flight-recorder dumps: one folder per job run inside it. */
    public Path flightDir() {
        String given = properties.get("ferry.flight.dir");
        return given != null ? Path.of(given) : reportDir().resolve("flight");
    }

    private Path reportDir() {
        return Path.of(System.getProperty("ferry.test.reports", "target/ferry-ranks")).resolve(name + "-np" + np);
    }

    /** Rank counts from {@code ferry.test.np}, default 2 and 4. */
    public static int[] rankCounts() {
        return Stream.of(System.getProperty("ferry.test.np", "2,4").split(",")).map(String::trim)
                .filter(s -> !s.isEmpty()).mapToInt(Integer::parseInt).toArray();
    }

    /** The result of a finished job: exit code, combined output, per-rank results, wall time. */
    public record Result(int exitCode, boolean timedOut, String output, Path dir, Map<Integer, List<String[]>> ranks, double seconds) {
        /** The last lines of the output, for failure messages. */
        public String tail(int lines) {
            List<String> all = output.lines().toList();
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        }
    }

    /** Runs the job to completion (or timeout) and returns what it left. */
    public Result run() throws IOException, InterruptedException {
        Path dir = reportDir();
        if (Files.exists(dir)) {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(dir);
        List<String> cmd = new ArrayList<>(launcher());
        cmd.addAll(javaCommand(dir));
        Path log = dir.resolve("output.log");
        Files.writeString(log, String.join(" ", cmd) + "\n");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.environment().putAll(environment);
        if (family == Family.OPEN_MPI) {
            // containers: no ptrace-based single copy, no warnings about missing fabrics
            pb.environment().putIfAbsent("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
            pb.environment().putIfAbsent("OMPI_MCA_btl_base_warn_component_unused", "0");
            pb.environment().putIfAbsent("OMPI_MCA_rmaps_base_oversubscribe", "1");
            pb.environment().putIfAbsent("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe");
        }
        System.out.println("[ferry-test] " + String.join(" ", cmd).replaceAll("-cp \\S+", "-cp <test class path>") + "  (log: " + log + ")");
        long t0 = System.nanoTime();
        Process p = pb.start();
        boolean done = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - t0) / 1e9;
        if (!done) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        String output = Files.readString(log);
        Map<Integer, List<String[]>> ranks = new LinkedHashMap<>();
        for (int r = 0; r < np; r++) {
            Path f = dir.resolve("rank-" + r + ".tsv");
            List<String[]> rows = new ArrayList<>();
            if (Files.exists(f)) {
                for (String l : Files.readAllLines(f)) {
                    if (!l.isBlank()) rows.add(l.split("\t", 4));
                }
            }
            ranks.put(r, rows);
        }
        System.out.printf(Locale.ROOT, "[ferry-test] %s np=%d: exit %s after %.1f s%n", name, np, done ? Integer.toString(p.exitValue()) : "none (timed out)", seconds);
        return new Result(done ? p.exitValue() : -1, !done, output, dir, ranks, seconds);
    }

    private List<String> launcher() {
        List<String> cmd = new ArrayList<>(launcherPrefix);
        boolean root = "root".equals(System.getProperty("user.name"));
        if (!launcherCommand.isEmpty()) {
            cmd.addAll(launcherCommand);
            cmd.addAll(launcherOptions);
            cmd.add("-n");
        } else if (family == Family.OPEN_MPI) {
            cmd.add(launcher != null ? launcher : launcherPath(family));
            if (root) cmd.add("--allow-run-as-root");
            if (Boolean.parseBoolean(System.getProperty("ferry.test.oversubscribe", "true"))) cmd.add("--oversubscribe");
            cmd.addAll(launcherOptions);
            cmd.add("-np");
        } else {
            cmd.add(launcher != null ? launcher : launcherPath(family));
            cmd.addAll(launcherOptions);
            cmd.add("-n");
        }
        cmd.add(Integer.toString(np));
        return cmd;
    }

    /** The launcher of {@code family} this test JVM uses ({@code ferry.test.ompi.launcher}, {@code ferry.test.mpich.launcher}, else PATH). */
    public static String launcherPath(Family family) {
        return family == Family.OPEN_MPI
                ? System.getProperty("ferry.test.ompi.launcher", findOnPath("mpirun.openmpi", "mpirun"))
                : System.getProperty("ferry.test.mpich.launcher", findOnPath("mpiexec.mpich", "mpiexec.hydra", "mpiexec"));
    }

    /** Whether the launcher of {@code family} is installed (an executable file). */
    public static boolean launcherInstalled(Family family) {
        String l = launcherPath(family);
        Path p = Path.of(l.contains("/") ? l : findOnPath(l));
        return p.isAbsolute() && Files.isExecutable(p);
    }

    private List<String> javaCommand(Path dir) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        // small JVMs: up to 4 ranks share 2 cores on CI
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Xss1m");
        cmd.add("-Xmx" + System.getProperty("ferry.test.rankHeap", "384m"));
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.addAll(jvmArgs);
        String cp = classPath != null ? classPath : classPath();
        if (!cp.isEmpty()) {
            cmd.add("-cp");
            cmd.add(cp);
        }
        cmd.add("-Dferry.test.reportDir=" + dir);
        if (!properties.containsKey("ferry.flight.dir")) {
            cmd.add("-Dferry.flight.dir=" + dir.resolve("flight")); // flight-recorder dumps beside the job's log, not in the working directory
        }
        for (String key : List.of("ferry.test.perTestTimeout", "ferry.timeout", "ferry.log", "ferry.test.seed", "ferry.test.matrix.scale", "ferry.test.include")) {
            if (System.getProperty(key) != null && !properties.containsKey(key)) {
                cmd.add("-D" + key + "=" + System.getProperty(key));
            }
        }
        properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add(mainClass);
        cmd.addAll(mainArgs != null ? mainArgs : classes);
        return cmd;
    }

    /** The test JVM's class path, with mpi.jar replaced by {@code ferry.test.mpijar} when given. */
    private static String classPath() {
        String cp = System.getProperty("java.class.path");
        String mpiJar = System.getProperty("ferry.test.mpijar");
        if (mpiJar == null || mpiJar.isBlank()) {
            return cp;
        }
        List<String> parts = new ArrayList<>();
        for (String e : cp.split(File.pathSeparator)) {
            if (!e.contains("org/open-mpi/mpi/")) parts.add(e);
        }
        parts.add(mpiJar);
        return String.join(File.pathSeparator, parts);
    }

    static String findOnPath(String... names) {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String n : names) {
            for (String d : path.split(File.pathSeparator)) {
                if (Files.isExecutable(Path.of(d, n))) return Path.of(d, n).toString();
            }
        }
        return names[names.length - 1];
    }

    /** Runs the job and returns one dynamic container of per-test results (for {@code @TestFactory}). */
    public DynamicContainer asTests() {
        Result r;
        try {
            r = run();
        } catch (IOException | InterruptedException e) {
            return DynamicContainer.dynamicContainer(name + " np=" + np,
                    Stream.of(DynamicTest.dynamicTest("launch", () -> Assertions.fail("could not launch " + family + " job: " + e, e))));
        }
        return DynamicContainer.dynamicContainer(name + " np=" + np, toTests(r));
    }

    private Stream<DynamicNode> toTests(Result r) {
        Map<String, List<String>> failures = new LinkedHashMap<>();
        Map<String, List<String>> skips = new LinkedHashMap<>();
        Map<String, Integer> seen = new LinkedHashMap<>();
        r.ranks().forEach((rank, rows) -> {
            for (String[] row : rows) {
                String id = row[0];
                seen.merge(id, 1, Integer::sum);
                String msg = row.length > 3 ? row[3] : "";
                switch (row[1]) {
                    case "FAIL" -> failures.computeIfAbsent(id, k -> new ArrayList<>()).add("rank " + rank + ": " + msg);
                    case "SKIP" -> skips.computeIfAbsent(id, k -> new ArrayList<>()).add(msg);
                    default -> { }
                }
            }
        });
        List<DynamicNode> tests = new ArrayList<>();
        for (Map.Entry<String, Integer> e : seen.entrySet()) {
            String id = e.getKey();
            int ranksWithResult = e.getValue();
            tests.add(DynamicTest.dynamicTest(id, () -> {
                if (failures.containsKey(id)) {
                    Assertions.fail(id + " failed:\n  " + String.join("\n  ", failures.get(id)));
                }
                if (ranksWithResult < np) {
                    Assertions.fail(id + ": only " + ranksWithResult + " of " + np + " ranks reported a result; output:\n" + r.tail(40));
                }
                if (skips.containsKey(id)) {
                    Assumptions.abort(skips.get(id).get(0));
                }
            }));
        }
        String jobName = "job exit (" + family.name().toLowerCase(Locale.ROOT) + ", " + np + " ranks)";
        tests.add(DynamicTest.dynamicTest(jobName, () -> {
            if (r.timedOut()) {
                Assertions.fail("job did not finish within " + timeoutSeconds + " s; output tail:\n" + r.tail(60));
            }
            if (seen.isEmpty()) {
                Assertions.fail("no rank reported any result (exit " + r.exitCode() + "); output tail:\n" + r.tail(60));
            }
            if (r.exitCode() != 0 && failures.isEmpty()) {
                // every rank hit the job's named MPI_Finalize defect and halted: the launcher may then fail on its own
                // (MPICH's hydra: "write error ... error sending PMI response"); that is the defect, shown as a skip
                if (seen.getOrDefault(FINALIZE, 0) == np && skips.containsKey(FINALIZE) && skips.get(FINALIZE).size() == np) {
                    Assumptions.abort("job exited with " + r.exitCode() + " after every rank met the known MPI_Finalize defect of this job ("
                            + skips.get(FINALIZE).get(0) + "): the launcher's error follows from it");
                }
                Assertions.fail("job exited with " + r.exitCode() + " although no test failed; output tail:\n" + r.tail(60));
            }
        }));
        return tests.stream();
    }
}
