// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.testing.MpiJob;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The flight recorder on real ranks (3, {@code ferry.timeout=3}) under mpirun and MPICH's
 * mpiexec: each {@link HangCase} ends within the watchdog's bound with a hang report whose first
 * line names the rank and the call. Every case runs on ompi/openmpi; the other pairs run a
 * subset, so that every backend (ompi, mvapich, staged over each) and every case runs at least
 * twice; JFR ({@code -XX:StartFlightRecording}, read back with {@code jfr print}) on one case per
 * launcher family; and a report asked of a running job ({@code ferry doctor --hang}, SIGUSR1).
 * Under srun: {@code SlurmIT}.
 *
 * <p>A lost rank under MPICH's mpiexec: Hydra SIGKILLs every rank at once, so the job runs with
 * {@code -disable-auto-cleanup} and the survivors' watchdog writes the report.
 */
class FlightRecorderIT {
    /** The cases each pair runs (with JFR: the skipped collective on ompi and on mvapich). */
    static final Map<String, List<HangCase>> CASES = Map.of(
            "ompi/openmpi", List.of(HangCase.values()),
            "mvapich/mpich", List.of(HangCase.SKIP, HangCase.ROOT, HangCase.DEAD),
            "staged/openmpi", List.of(HangCase.ORDER, HangCase.SEND),
            "staged/mpich", List.of(HangCase.COUNT, HangCase.SEND));

    @TestFactory
    List<DynamicNode> hangReports() {
        List<DynamicNode> out = new ArrayList<>();
        for (Pair pair : Pair.selected()) {
            List<HangCase> cases = CASES.getOrDefault(pair.id(), List.of());
            if (cases.isEmpty()) continue;
            List<DynamicNode> tests = new ArrayList<>();
            for (HangCase c : cases) {
                boolean jfr = c == HangCase.SKIP && (pair.backend().equals("ompi") || pair.backend().equals("mvapich"));
                tests.add(DynamicTest.dynamicTest(c.title() + (jfr ? "; jfr print reads the JFR recording" : ""), () -> {
                    pair.unavailable().ifPresent(reason -> dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason));
                    MpiJob job = c.configure(pair.job("flight-" + c.id(), HangCase.RANKS), jfr);
                    if (pair.family() == MpiJob.Family.MPICH && c == HangCase.DEAD) {
                        job.launcherOptions("-disable-auto-cleanup");
                    }
                    c.check(pair.id(), pair.backend(), job, jfr);
                }));
            }
            if (pair.id().equals("ompi/openmpi")) {
                tests.add(DynamicTest.dynamicTest("on demand: ferry doctor --hang and SIGUSR1 give the report of a running job", () -> {
                    pair.unavailable().ifPresent(reason -> dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason));
                    onDemand(pair);
                }));
            }
            out.add(DynamicContainer.dynamicContainer(pair.id(), tests.stream()));
        }
        return out;
    }

    /**
     * A hang (collectives in different orders) that the watchdog ends only after 15 s; meanwhile
     * {@code Doctor --hang} (as {@code ./ferry doctor --hang DIR}) must print its report, and
     * SIGUSR1 to rank 1 must make it dump at once.
     */
    static void onDemand(Pair pair) throws Exception {
        HangCase c = HangCase.ORDER;
        MpiJob job = c.configure(pair.job("flight-on-demand", HangCase.RANKS), false, 15);
        Path flight = job.flightDir();
        Path log = flight.getParent().resolve("output.log");
        Files.deleteIfExists(log); // an earlier run's: the job's own is made when it starts
        CompletableFuture<String> asked = CompletableFuture.supplyAsync(() -> {
            try {
                String out = waitFor(log, Pattern.compile("ferry-hang: the hang begins at \\d+"), 120_000);
                Process doctor = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                        System.getProperty("java.class.path"), "dev.ferry.tools.Doctor", "--hang", flight.toString()).redirectErrorStream(true).start();
                String report = new String(doctor.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                doctor.waitFor(60, TimeUnit.SECONDS);
                Matcher pid = Pattern.compile("ferry-hang: rank 1 pid (\\d+)").matcher(out);
                if (!pid.find()) return report + "\n(no pid of rank 1 in the output)";
                new ProcessBuilder("kill", "-USR1", pid.group(1)).inheritIO().start().waitFor();
                Path dump = HangCase.jobFolder(flight).resolve("rank-1.txt");
                waitFor(dump, Pattern.compile("\treason=SIGUSR1\t"), 10_000);
                return report + "\n(rank 1 dumped on SIGUSR1)";
            } catch (Exception | AssertionError e) {
                return "failed: " + e;
            }
        });
        c.check(pair.id() + " on demand", pair.backend(), job, false, 15);
        String report = asked.get(30, TimeUnit.SECONDS);
        assertTrue(report.contains("==== " + HangCase.jobFolder(flight) + "\n" + c.firstLine + "\n"),
                () -> "Doctor --hang " + flight + " printed no report starting with '" + c.firstLine + "':\n" + report);
        assertTrue(report.endsWith("(rank 1 dumped on SIGUSR1)"), () -> "rank 1 did not dump on SIGUSR1: " + report);
    }

    /** The text of {@code file} once it matches {@code pattern}; fails after {@code millis}. */
    private static String waitFor(Path file, Pattern pattern, long millis) throws IOException, InterruptedException {
        long end = System.currentTimeMillis() + millis;
        while (System.currentTimeMillis() < end) {
            if (Files.isRegularFile(file)) {
                String text = Files.readString(file);
                if (pattern.matcher(text).find()) return text;
            }
            Thread.sleep(100);
        }
        throw new IOException("no '" + pattern + "' in " + file + " within " + millis + " ms");
    }
}
