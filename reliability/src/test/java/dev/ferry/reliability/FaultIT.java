// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.reliability.ranks.FaultProgram;
import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Faults, per (backend, launcher) pair: a rank lost in the middle of a collective (halt, SIGKILL,
 * System.exit), the watchdog on a receive that never matches and on MPI_Finalize, an uncaught
 * exception, calls after shutdown, and a normal end that leaves everything open. Every job must
 * end within a bound, and the output must say what happened (which rank, which call).
 */
class FaultIT {
    /** How long after the fault the job must have ended, at most (2 cores shared by 4 ranks and other work). */
    static final long BOUND_MS = Long.getLong("ferry.test.faultBoundSeconds", 30) * 1000;
    static final int WATCHDOG_SECONDS = 3;

    @TestFactory
    List<DynamicNode> faults() {
        List<DynamicNode> out = new ArrayList<>();
        for (Pair pair : Pair.selectedWithMvapich2()) {
            List<DynamicNode> tests = new ArrayList<>();
            for (String how : List.of("halt", "sigkill", "exit", "exit-idle")) {
                tests.add(test(pair, "a rank lost by " + how + " inside allReduce ends the job, naming the rank", () -> loseRank(pair, how)));
            }
            tests.add(test(pair, "watchdog: unmatched recv ends the job in ~" + WATCHDOG_SECONDS + " s naming recv, source and tag", () -> watchdogRecv(pair)));
            tests.add(test(pair, "watchdog: MPI_Finalize waiting for busy ranks is reported", () -> finalizeWait(pair)));
            tests.add(test(pair, "an uncaught exception aborts the job", () -> uncaught(pair)));
            tests.add(test(pair, "calls after Ferry.shutdown() throw CommunicatorClosedException", () -> simpleOk(pair, "after-shutdown")));
            tests.add(test(pair, "a normal end with communicators, buffers and requests left open exits 0", () -> simpleOk(pair, "exit-without-close")));
            tests.add(test(pair, "a setting value not accepted fails Ferry.open() with InvalidSettingException on every rank", () -> badSetting(pair)));
            out.add(DynamicContainer.dynamicContainer(pair.id(), tests));
        }
        return out;
    }

    private interface Check {
        void run() throws Exception;
    }

    private static DynamicTest test(Pair pair, String name, Check check) {
        return DynamicTest.dynamicTest(name, () -> {
            pair.unavailable().ifPresent(reason -> dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason));
            check.run();
        });
    }

    /** Runs the fault program; skips when the ranks found the backend unavailable. Returns the result and the end time. */
    private static Ran run(Pair pair, String name, int np, Consumer<MpiJob> extra, String... args) throws Exception {
        MpiJob job = pair.job("fault-" + name, np).main(FaultProgram.class.getName(), args).timeout(150);
        if (pair.family() == MpiJob.Family.MPICH) {
            job.launcherOptions("-print-all-exitcodes");
        }
        extra.accept(job);
        MpiJob.Result r = job.run();
        long end = System.currentTimeMillis();
        Matcher skip = Pattern.compile("ferry-fault: SKIP (.*)").matcher(r.output());
        if (skip.find()) {
            if (pair.equals(Pair.MVAPICH2)) fail(pair + ": the backend must be available under MVAPICH2: " + skip.group(1));
            String reason = pair + ": " + skip.group(1);
            dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason);
        }
        // a program whose Ferry.open() is refused (bad-setting) never gets as far as naming a backend
        if (pair.equals(Pair.MVAPICH2) && !name.equals("bad-setting")) {
            assertTrue(r.output().contains("ferry: backend mvapich") && r.output().contains("MVAPICH2 2."),
                    () -> "rank 0 must report backend mvapich on MVAPICH2:\n" + r.tail(40));
        }
        assertFalse(r.timedOut(), () -> name + ": the job did not end within 150 s; output:\n" + r.tail(60));
        return new Ran(r, end);
    }

    record Ran(MpiJob.Result r, long end) {
        long at(String marker) {
            Matcher m = Pattern.compile(Pattern.quote(marker) + ".* at (\\d{10,})").matcher(r.output());
            if (!m.find()) fail("no '" + marker + "' in the output:\n" + r.tail(60));
            return Long.parseLong(m.group(1));
        }

        String grep(String regex) {
            Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(r.output());
            return m.find() ? m.group() : null;
        }
    }

    private static void report(Pair pair, String what, String detail) {
        System.out.println("[ferry-fault] " + pair + " " + what + ": " + detail);
    }

    void loseRank(Pair pair, String how) throws Exception {
        int np = 4, victim = np - 1;
        Ran ran = run(pair, "lose-" + how, np, j -> { }, "lose-rank", how);
        long left = ran.at("rank " + victim + " leaves by " + how);
        long after = ran.end() - left;
        assertNotEquals(0, ran.r().exitCode(), () -> "the job must fail; output:\n" + ran.r().tail(40));
        assertTrue(after < BOUND_MS, () -> "the job ended " + after + " ms after rank " + victim + " left (bound " + BOUND_MS + " ms)");
        String named;
        if (pair.family() == MpiJob.Family.OPEN_MPI) {
            named = switch (how) {
                case "sigkill" -> ran.grep("process rank " + victim + " with PID \\d+ on node \\S+ exited on signal 9");
                case "halt" -> ran.grep("Process name: \\[\\[\\d+,\\d+\\]," + victim + "\\]\\s+Exit code:\\s+7");
                default -> ran.grep("Process name: \\[\\[\\d+,\\d+\\]," + victim + "\\]\\s+Exit code:\\s+3");
            };
        } else {
            // Hydra names a PID (not always the lost one); -print-all-exitcodes lists every rank's status in rank order
            String codes = ran.grep("Exit codes: .*");
            assertTrue(codes != null, () -> "no 'Exit codes:' line from Hydra:\n" + ran.r().tail(40));
            String[] c = codes.replaceAll(".*\\] ", "").trim().split(",");
            int status = Integer.parseInt(c[victim].trim());
            int expected = switch (how) {
                case "sigkill" -> 9;
                case "halt" -> 7;
                default -> 3;
            };
            named = status == expected || status == expected << 8 ? codes : null;
            if (named == null) {
                // Hydra's per-rank list races with its own clean-up (seen: "0,9,6,0" for a SIGKILLed rank 3,
                // the 9 being Hydra's kill of another rank); then the lost process must be named by
                // its pid in the library's or the launcher's error (UCX: "process_vm_readv(pid=N ...) No such process")
                String pidLine = ran.grep("ferry-fault: rank " + victim + " pid \\d+");
                String pid = pidLine == null ? null : pidLine.substring(pidLine.lastIndexOf(' ') + 1);
                String byPid = pid == null ? null : ran.grep("^(?!ferry-fault).*(pid=|PID )" + pid + "\\b.*$");
                named = byPid == null ? null : codes + "; " + byPid.trim();
            }
        }
        String n = named;
        assertTrue(n != null, () -> "the output does not name rank " + victim + " as lost by " + how + ":\n" + ran.r().tail(40));
        if (how.startsWith("exit")) {
            assertTrue(ran.r().output().contains("not calling MPI_Finalize"), () -> "Ferry's exit path must skip MPI_Finalize:\n" + ran.r().tail(40));
        }
        if (how.equals("exit-idle")) {
            assertTrue(ran.r().output().contains("which initialized MPI, is still running (between Ferry calls)"),
                    () -> "an exit from another thread while main is between calls must skip MPI_Finalize too:\n" + ran.r().tail(40));
        }
        report(pair, "lose-rank " + how, String.format(Locale.ROOT, "job ended %.1f s after rank %d left (exit %d); launcher: %s",
                after / 1000.0, victim, ran.r().exitCode(), n.replaceAll("\\s+", " ")));
    }

    void watchdogRecv(Pair pair) throws Exception {
        Ran ran = run(pair, "watchdog-recv", 2, j -> j.property("ferry.timeout", WATCHDOG_SECONDS + "s"), "watchdog-recv");
        long entered = ran.at("rank 0 enters recv");
        long after = ran.end() - entered;
        String line = ran.grep("ferry: rank 0: TIMEOUT: recv\\(source 1, tag 77, 16 x BYTE\\) on .*");
        assertTrue(line != null, () -> "no TIMEOUT line naming recv, source 1 and tag 77:\n" + ran.r().tail(40));
        assertNotEquals(0, ran.r().exitCode(), "the job must fail");
        assertFalse(ran.r().output().contains("recv returned"), "recv cannot return");
        assertTrue(after >= WATCHDOG_SECONDS * 1000L, () -> "ended after " + after + " ms, before the timeout");
        assertTrue(after < WATCHDOG_SECONDS * 1000L + BOUND_MS, () -> "ended " + after + " ms after the recv began");
        report(pair, "watchdog recv", String.format(Locale.ROOT, "job ended %.1f s after recv began (ferry.timeout=%d, exit %d): %s",
                after / 1000.0, WATCHDOG_SECONDS, ran.r().exitCode(), line));
    }

    void finalizeWait(Pair pair) throws Exception {
        Ran ran = run(pair, "finalize-wait", 2, j -> j.property("ferry.timeout", Integer.toString(WATCHDOG_SECONDS)), "finalize-wait");
        long returned = ran.at("rank 0 returns from main");
        long after = ran.end() - returned;
        String line = ran.grep("ferry: rank 0: TIMEOUT: MPI_Finalize\\(\\).*");
        assertTrue(line != null, () -> "no TIMEOUT line for MPI_Finalize:\n" + ran.r().tail(40));
        assertNotEquals(0, ran.r().exitCode(), "the job must fail");
        assertTrue(after < WATCHDOG_SECONDS * 1000L + BOUND_MS, () -> "ended " + after + " ms after rank 0 returned from main");
        report(pair, "watchdog finalize", String.format(Locale.ROOT, "job ended %.1f s after rank 0 began MPI_Finalize: %s", after / 1000.0, line));
    }

    void uncaught(Pair pair) throws Exception {
        Ran ran = run(pair, "uncaught", 2, j -> { }, "uncaught");
        long thrown = ran.at("rank 1 throws");
        long after = ran.end() - thrown;
        assertNotEquals(0, ran.r().exitCode(), "the job must fail");
        String line = ran.grep("ferry: rank 1: uncaught java.lang.IllegalStateException.*aborting the MPI job.*");
        assertTrue(line != null, () -> "no abort line for the uncaught exception:\n" + ran.r().tail(40));
        assertTrue(after < BOUND_MS, () -> "ended " + after + " ms after the exception");
        report(pair, "uncaught exception", String.format(Locale.ROOT, "job ended %.1f s after the throw (exit %d)", after / 1000.0, ran.r().exitCode()));
    }

    void badSetting(Pair pair) throws Exception {
        Ran ran = run(pair, "bad-setting", 2, j -> j.property("ferry.timeout", "soon"), "bad-setting");
        assertEquals(0, ran.r().exitCode(), () -> "bad-setting must exit 0; output:\n" + ran.r().tail(40));
        long ok = ran.r().output().lines().filter(l -> l.startsWith("ferry-fault: OK Ferry.open() refused a setting: ferry.timeout='soon' "
                + "(from -Dferry.timeout) is not accepted: expected a number of seconds")).count();
        assertEquals(2, ok, () -> "every rank's Ferry.open() names the key, the value, where it came from and what is accepted:\n" + ran.r().tail(40));
        report(pair, "bad setting", ran.grep("ferry-fault: OK .*"));
    }

    void simpleOk(Pair pair, String mode) throws Exception {
        int np = 2;
        Ran ran = run(pair, mode, np, j -> { }, mode);
        assertEquals(0, ran.r().exitCode(), () -> mode + " must exit 0; output:\n" + ran.r().tail(40));
        long ok = ran.r().output().lines().filter(l -> l.startsWith("ferry-fault: OK")).count();
        assertEquals(np, ok, () -> "every rank prints OK; output:\n" + ran.r().tail(40));
        report(pair, mode, String.format(Locale.ROOT, "exit 0 after %.1f s", ran.r().seconds()));
    }
}
