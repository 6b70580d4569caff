// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.reliability.ranks.HangProgram;
import dev.ferry.testing.MpiJob;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One hang of {@link HangProgram} and the first line its hang report must have: the rank and the
 * call to blame. {@link #check} runs the job and asserts what every case must show: the job ends
 * within the watchdog's bound, rank 0 printed the report and wrote it beside the dumps (for a
 * lost rank: where rank 0 lived long enough), {@code dev.ferry.flight.HangReport DIR} builds the
 * same first line from the dumps, and, with JFR on, {@code jfr print} reads rank 0's recording.
 */
enum HangCase {
    SKIP("skip", "rank 2 never called allReduce #7 on communicator 0.2 (ranks 0,1 wait in it); rank 2 is in MPI_Finalize() of "),
    ORDER("order", "rank 1 called barrier() as collective #7 on communicator 0.2, where ranks 0,2 called allReduce(8 x LONG)"),
    COUNT("count", "rank 1 called broadcast(root 0, 65536 x LONG) as collective #7 on communicator 0.2, where ranks 0,2 called broadcast(root 0, "
            + "131072 x LONG)"),
    ROOT("root", "rank 1 called broadcast(root 1, 1048576 x BYTE) as collective #7 on communicator 0.2, where ranks 0,2 called broadcast(root 0, "
            + "1048576 x BYTE)"),
    SEND("send", "rank 1 never received rank 0's send(destination 1, tag 5, 524288 x LONG) on communicator 0.2; rank 1 is in barrier #7 on "
            + "communicator 0.2"),
    DEAD("dead", "rank 2 is lost (no dump): ranks 0,1 wait in allReduce #7 on communicator 0.2");

    static final int RANKS = 3;
    static final int WATCHDOG_SECONDS = 3;

    final String arg;
    /** The report's first line; for SKIP its beginning (the MPI library's name follows). */
    final String firstLine;

    HangCase(String arg, String firstLine) {
        this.arg = arg;
        this.firstLine = firstLine;
    }

    String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** What the test says it shows. */
    String title() {
        return switch (this) {
            case SKIP -> "a rank that skips a collective";
            case ORDER -> "two ranks calling collectives in different orders";
            case COUNT -> "mismatched counts";
            case ROOT -> "a root mismatch";
            case SEND -> "a send with no receive";
            case DEAD -> "a dead rank";
        } + ": the report's first line names the rank and the call";
    }

    /** The job of this case on {@code job} (3 ranks of a pair, launcher set), with the watchdog ({@value #WATCHDOG_SECONDS} s) and, when asked, JFR. */
    MpiJob configure(MpiJob job, boolean jfr) {
        return configure(job, jfr, WATCHDOG_SECONDS);
    }

    /** As {@link #configure(MpiJob, boolean)}, with a watchdog of {@code watchdogSeconds}. */
    MpiJob configure(MpiJob job, boolean jfr, int watchdogSeconds) {
        job.main(HangProgram.class.getName(), arg).timeout(120).property("ferry.timeout", Integer.toString(watchdogSeconds));
        if (jfr) {
            job.jvmArgs("-XX:StartFlightRecording");
        }
        return job;
    }

    /** Runs {@code job} (made by {@link #configure}) and asserts what the case must show; returns the report's first line. */
    String check(String label, String backend, MpiJob job, boolean jfr) throws IOException, InterruptedException {
        return check(label, backend, job, jfr, WATCHDOG_SECONDS);
    }

    /** As {@link #check(String, String, MpiJob, boolean)}, for a job configured with a watchdog of {@code watchdogSeconds}. */
    String check(String label, String backend, MpiJob job, boolean jfr, int watchdogSeconds) throws IOException, InterruptedException {
        MpiJob.Result r = job.run();
        return verify(label, backend, r, System.currentTimeMillis(), job.flightDir(), jfr, watchdogSeconds);
    }

    /**
     * What {@link #check} asserts of a finished job: its result {@code r}, the time it ended
     * ({@code end}, epoch ms) and the folder its ranks dumped into ({@code flightDir}).
     */
    String verify(String label, String backend, MpiJob.Result r, long end, Path flightDir, boolean jfr, int watchdogSeconds)
            throws IOException, InterruptedException {
        Matcher skip = Pattern.compile("ferry-hang: SKIP (.*)").matcher(r.output());
        if (skip.find()) {
            String reason = label + ": " + skip.group(1);
            dev.ferry.testing.Required.assume(backend, false, () -> reason); // as FaultIT: a failure where FERRY_TEST_REQUIRE names the backend
        }
        assertFalse(r.timedOut(), () -> arg + ": the job did not end within 120 s:\n" + r.tail(60));
        assertNotEquals(0, r.exitCode(), () -> arg + ": the job must fail:\n" + r.tail(60));
        assertFalse(r.output().contains("did not hang"), () -> arg + ": the case did not hang:\n" + r.tail(60));
        Matcher began = Pattern.compile("ferry-hang: the hang begins at (\\d+)").matcher(r.output());
        assertTrue(began.find(), () -> "rank 0 never reached the case:\n" + r.tail(60));
        long after = end - Long.parseLong(began.group(1));
        assertTrue(after < watchdogSeconds * 1000L + FaultIT.BOUND_MS,
                () -> arg + ": the job ended " + after + " ms after the hang began (bound: ferry.timeout + " + FaultIT.BOUND_MS + " ms):\n" + r.tail(40));

        Path folder = jobFolder(flightDir);
        Path report = folder.resolve("report.txt");
        boolean byRank0 = Files.isRegularFile(report);
        if (this != DEAD) {
            assertTrue(byRank0, () -> "rank 0 wrote no report.txt in " + folder + ":\n" + r.tail(60));
            assertTrue(r.output().contains("ferry: rank 0: hang report (" + report + "):\n" + firstLine),
                    () -> "rank 0 printed no report starting with '" + firstLine + "':\n" + r.tail(60));
        }
        if (byRank0) {
            String first = Files.readAllLines(report).get(0);
            assertTrue(first.startsWith(firstLine), () -> "rank 0's report, first line:\n  " + first + "\nexpected:\n  " + firstLine + "\nreport:\n"
                    + read(report));
        }
        String[] command = hangReport(folder);
        assertTrue(command[0].startsWith(firstLine), () -> "HangReport " + folder + ", first line:\n  " + command[0] + "\nexpected:\n  " + firstLine
                + "\nreport:\n" + command[1]);
        if (jfr) {
            jfrPrint(folder.resolve("rank-0.jfr"));
        }
        System.out.println("[ferry-flight] " + label + " " + arg + ": ended " + String.format(Locale.ROOT, "%.1f", after / 1000.0)
                + " s after the hang began (ferry.timeout=" + watchdogSeconds + "); report by " + (byRank0 ? "rank 0" : "HangReport only") + ": " + command[0]);
        return command[0];
    }

    /**
     * The check of a job launched outside the test (by {@code scripts/device-run.sh hang}, where
     * the GPUs are): {@code HangCase CASE BACKEND OUTPUT EXIT_CODE ENDED_MS FLIGHT_DIR}, with the
     * job's output in the file {@code OUTPUT}, its exit code, the epoch ms it ended at and its
     * {@code ferry.flight.dir}. Prints {@code PASS <first line>}, {@code SKIP <reason>} or
     * {@code FAIL <what>}, and exits 0, 0 or 1.
     */
    public static void main(String[] args) throws Exception {
        HangCase c = valueOf(args[0].toUpperCase(Locale.ROOT));
        String output = new String(Files.readAllBytes(Path.of(args[2])), StandardCharsets.UTF_8); // MPI's help texts may hold bytes that are not UTF-8
        MpiJob.Result r = new MpiJob.Result(Integer.parseInt(args[3]), false, output, Path.of(args[5]).getParent(), Map.of(), 0);
        try {
            System.out.println("PASS " + c.verify(args[1] + " device", args[1], r, Long.parseLong(args[4]), Path.of(args[5]), false, WATCHDOG_SECONDS));
        } catch (org.opentest4j.TestAbortedException e) {
            System.out.println("SKIP " + e.getMessage());
        } catch (AssertionError e) {
            System.out.println("FAIL " + e.getMessage().replace('\n', ' '));
            System.exit(1);
        }
    }

    /** The one job folder the ranks wrote into. */
    static Path jobFolder(Path flightDir) throws IOException {
        assertTrue(Files.isDirectory(flightDir), () -> "no flight folder " + flightDir + ": no rank wrote a dump");
        try (Stream<Path> s = Files.list(flightDir)) {
            List<Path> jobs = s.filter(Files::isDirectory).toList();
            assertEquals(1, jobs.size(), () -> "one job folder in " + flightDir + ": " + jobs);
            return jobs.get(0);
        }
    }

    /** {@code java dev.ferry.flight.HangReport DIR} in a JVM of its own, as {@code ./ferry hang-report DIR}: the first line and the whole report. */
    static String[] hangReport(Path dir) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(java("java"), "-cp", System.getProperty("java.class.path"), "dev.ferry.flight.HangReport", dir.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "HangReport did not end within 60 s");
        assertEquals(0, p.exitValue(), () -> "HangReport " + dir + " failed:\n" + out);
        return new String[] {out.lines().findFirst().orElse(""), out};
    }

    /** {@code jfr print --events dev.ferry.Collective FILE}: the JDK's tool reads Ferry's events of communicator 0.2. */
    static void jfrPrint(Path file) throws IOException, InterruptedException {
        assertTrue(Files.isRegularFile(file), () -> "no JFR recording " + file + " beside the dump");
        List<String> cmd = new ArrayList<>(List.of(java("jfr"), "print", "--events", "dev.ferry.Collective", file.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "jfr print did not end within 60 s");
        assertEquals(0, p.exitValue(), () -> String.join(" ", cmd) + " failed:\n" + out);
        assertTrue(out.contains("dev.ferry.Collective {") && out.contains("communicator = \"0.2\"") && out.contains("operation = \"allReduce\"")
                && out.contains("sequence = 6"), () -> String.join(" ", cmd) + ": no allReduce and barrier events of communicator 0.2 up to #6:\n"
                + out.lines().limit(60).reduce("", (a, b) -> a + b + "\n"));
    }

    private static String java(String tool) {
        return Path.of(System.getProperty("java.home"), "bin", tool).toString();
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }
}
