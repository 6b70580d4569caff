// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.spi.Launch;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs JUnit test classes inside one MPI rank: every rank of a job runs the same classes in the
 * same order (the suites order their methods), so collective tests proceed in lockstep. Each rank
 * writes one line per test to {@code <ferry.test.reportDir>/rank-<r>.tsv}:
 * {@code id TAB PASS|FAIL|SKIP TAB millis TAB message}, which {@link MpiJob} collects.
 *
 * <p>MPI_Finalize is bounded too ({@code ferry.test.finalizeTimeout} seconds, default 30): a rank
 * whose library hangs in its shutdown records a failed {@code MPI_Finalize} line and exits 4 (a job
 * that names a known defect of its MPI with {@code ferry.test.knownFinalizeHang} records a skipped
 * one with that reason instead).
 *
 * <p>A watchdog ends the rank (exit 3, thread dump on stderr) when one test runs longer than
 * {@code ferry.test.perTestTimeout} seconds, so that a test that deadlocks after a failure on
 * another rank ends the job instead of hanging it.
 *
 * <p>Usage: {@code mpirun -np N java -cp ... dev.ferry.testing.RankRunner CLASS...}
 */
public final class RankRunner {
    private RankRunner() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: RankRunner TEST_CLASS...");
            System.exit(2);
        }
        Path dir = Path.of(System.getProperty("ferry.test.reportDir", "ferry-ranks"));
        long perTestMillis = Long.parseLong(System.getProperty("ferry.test.perTestTimeout", "120")) * 1000;
        Files.createDirectories(dir);
        Communicator world;
        try {
            world = Ferry.open();
        } catch (BackendUnavailableException e) {
            if (!Boolean.getBoolean("ferry.test.skipUnavailable")) throw e;
            // the pair (backend, launcher) cannot run here: one visible skip and a clean exit, unless the run requires the backend
            int r = Math.max(0, Launch.detect().rank());
            String backend = dev.ferry.Settings.process().get(dev.ferry.FerrySettings.BACKEND);
            String reason = e.getMessage().lines().findFirst().orElse("unavailable");
            boolean required = Required.isRequired(backend);
            Files.write(dir.resolve("rank-" + r + ".tsv"), List.of("backend " + backend + " unavailable\t" + (required ? "FAIL" : "SKIP") + "\t0\t"
                    + (required ? "required by FERRY_TEST_REQUIRE but unavailable: " : "") + oneLine(reason)));
            System.out.println("rank " + r + ": " + (required ? "FAILED (backend " + backend + " is required): " : "skipped: ") + reason);
            System.exit(required ? 1 : 0);
            return;
        }
        TestWorld.set(world);
        int rank = world.rank();
        Path out = dir.resolve("rank-" + rank + ".tsv");
        List<String> lines = new ArrayList<>();
        int[] counts = new int[3];

        AtomicReference<String> running = new AtomicReference<>();
        AtomicLong started = new AtomicLong();
        Thread watchdog = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                String t = running.get();
                if (t != null && System.currentTimeMillis() - started.get() > perTestMillis) {
                    System.err.println("rank " + rank + ": test " + t + " ran over " + perTestMillis / 1000 + " s: ending this rank (exit 3). Threads:");
                    for (ThreadInfo ti : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
                        // ThreadInfo.toString shows 8 frames: every frame, so that a hang deep in a backend shows where it came from
                        System.err.println("\"" + ti.getThreadName() + "\" " + ti.getThreadState());
                        for (StackTraceElement f : ti.getStackTrace()) System.err.println("\tat " + f);
                        System.err.println();
                    }
                    appendQuietly(out, lines, t + "\tFAIL\t" + perTestMillis + "\ttimed out after " + perTestMillis / 1000 + " s on rank " + rank);
                    System.err.flush();
                    Runtime.getRuntime().halt(3);
                }
            }
        }, "ferry-test-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void executionStarted(TestIdentifier id) {
                if (id.isTest()) {
                    started.set(System.currentTimeMillis());
                    running.set(name(id));
                }
            }

            @Override
            public void executionSkipped(TestIdentifier id, String reason) {
                if (id.isTest()) {
                    record(name(id) + "\tSKIP\t0\t" + oneLine(reason), 2);
                }
            }

            @Override
            public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                if (!id.isTest()) {
                    if (result.getStatus() == TestExecutionResult.Status.FAILED) {
                        // a container failed (e.g. @BeforeAll): report it as a failed pseudo-test
                        record(name(id) + "\tFAIL\t0\t" + describe(result.getThrowable().orElse(null)), 1);
                    }
                    return;
                }
                running.set(null);
                long ms = System.currentTimeMillis() - started.get();
                switch (result.getStatus()) {
                    case SUCCESSFUL -> record(name(id) + "\tPASS\t" + ms + "\t", 0);
                    case ABORTED -> record(name(id) + "\tSKIP\t" + ms + "\t" + describe(result.getThrowable().orElse(null)), 2);
                    case FAILED -> {
                        Throwable t = result.getThrowable().orElse(null);
                        System.err.println("rank " + rank + ": FAILED " + name(id));
                        if (t != null) t.printStackTrace();
                        record(name(id) + "\tFAIL\t" + ms + "\t" + describe(t), 1);
                    }
                }
            }

            private void record(String line, int kind) {
                counts[kind]++;
                appendQuietly(out, lines, line);
            }
        };

        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request()
                // jqwik (BadInputMatrix): no database in the working directory, reports only on failure
                .configurationParameter("jqwik.database", dir.resolve("jqwik-database-rank" + rank).toString())
                .configurationParameter("jqwik.reporting.onlyfailures", "true");
        for (String cls : args) {
            request.selectors(selectClass(Class.forName(cls)));
        }
        // -Dferry.test.include=REGEX: only the test methods whose name matches (to narrow a failure down)
        String include = System.getProperty("ferry.test.include");
        if (include != null && !include.isBlank()) {
            java.util.regex.Pattern p = java.util.regex.Pattern.compile(include);
            request.filters((org.junit.platform.launcher.PostDiscoveryFilter) d ->
                    d.getSource().filter(src -> src instanceof org.junit.platform.engine.support.descriptor.MethodSource m
                            && !p.matcher(m.getMethodName()).find()).isPresent()
                            ? org.junit.platform.engine.FilterResult.excluded("not matched by ferry.test.include=" + include)
                            : org.junit.platform.engine.FilterResult.included("ferry.test.include"));
        }
        LauncherDiscoveryRequest req = request.build();
        Launcher launcher = LauncherFactory.create();
        launcher.execute(req, listener);
        watchdog.interrupt();

        System.out.println("rank " + rank + ": " + counts[0] + " passed, " + counts[1] + " failed, " + counts[2] + " skipped");
        world.barrier();
        world.close();
        int exit = counts[1] == 0 ? 0 : 1;
        // Every result is on disk now. MPI_Finalize can hang inside the library (seen with MPICH 4.0.2
        // over UCX's TCP transport between network-namespace hosts: one rank spins flushing an endpoint
        // while the others wait in the PMI barrier); a bounded wait keeps such a hang from turning
        // finished tests into a job timeout, and says so.
        long finalizeSeconds = Long.parseLong(System.getProperty("ferry.test.finalizeTimeout", "30"));
        Thread finalizer = new Thread(Ferry::shutdown, "ferry-test-finalize");
        finalizer.setDaemon(true);
        finalizer.start();
        finalizer.join(finalizeSeconds * 1000);
        if (finalizer.isAlive()) {
            // the results are recorded, but a library that cannot shut down is a failure of the run, not a pass
            String why = "MPI_Finalize did not return within " + finalizeSeconds + " s after " + counts[0] + " passed, " + counts[1]
                    + " failed: the MPI library hangs in its shutdown (ferry.test.finalizeTimeout)";
            // -Dferry.test.knownFinalizeHang=REASON: a job that runs a library with a known shutdown defect records
            // the hang as a skipped MPI_Finalize with that reason (visible in the report), not as a failure
            String known = System.getProperty("ferry.test.knownFinalizeHang");
            boolean skip = known != null && !known.isBlank() && counts[1] == 0;
            appendQuietly(out, lines, "MPI_Finalize\t" + (skip ? "SKIP" : "FAIL") + "\t" + finalizeSeconds * 1000 + "\t" + why + " on rank " + rank
                    + (skip ? "; known library defect: " + oneLine(known) : ""));
            System.err.println("rank " + rank + ": " + why + (skip ? "; a known library defect (" + known + "); exiting with 0" : "; exiting with 4"));
            System.err.flush();
            Runtime.getRuntime().halt(skip ? 0 : 4);
        }
        System.exit(exit);
    }

    static String name(TestIdentifier id) {
        // "[engine:junit-jupiter]/[class:X]/[test-template:m(Kind)]/[test-template-invocation:#2]" -> "X.m(Kind)#2 [display]"
        String uid = id.getUniqueId();
        StringBuilder sb = new StringBuilder();
        for (String seg : uid.split("/")) {
            int colon = seg.indexOf(':');
            if (colon < 0 || seg.startsWith("[engine")) continue;
            String kind = seg.substring(1, colon);
            String val = seg.substring(colon + 1, seg.length() - 1);
            if (kind.equals("class")) {
                sb.append(val.substring(val.lastIndexOf('.') + 1));
            } else if (kind.endsWith("invocation") || kind.equals("dynamic-test")) {
                sb.append(val);
            } else {
                sb.append('.').append(val.replaceAll("\\(.*\\)", ""));
            }
        }
        if (uid.contains("invocation")) {
            sb.append(" ").append(id.getDisplayName());
        }
        return oneLine(sb.toString());
    }

    static String describe(Throwable t) {
        if (t == null) return "";
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        String first = t.toString();
        String at = sw.toString().lines().filter(l -> l.trim().startsWith("at dev.ferry")).findFirst().orElse("").trim();
        return oneLine(first + (at.isEmpty() ? "" : " (" + at + ")"));
    }

    static String oneLine(String s) {
        return s == null ? "" : s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    private static synchronized void appendQuietly(Path out, List<String> lines, String line) {
        lines.add(line);
        try {
            Files.write(out, lines);
        } catch (IOException e) {
            System.err.println("cannot write " + out + ": " + e);
        }
    }
}
