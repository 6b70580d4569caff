// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.spi.MpiLifecycle;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * When and where the ranks of one job write their dumps, without MPI (which is what hangs): through
 * files in the job's folder {@code ferry.flight.dir/JOB}. A rank with a reason of its own (a
 * watchdog timeout, an uncaught exception, an exit in the middle of a call, SIGUSR1) writes a
 * request {@code dump-request} for a new round (or joins the round under way) and its dump
 * {@code rank-R.txt}; every rank watches that file (a daemon thread, five looks a second) and
 * answers a new round with its own dump; rank 0 then waits for every rank's dump of the round (4 s
 * at most), builds the {@link HangReport}, writes it to {@code report.txt} and prints it. A rank about to abort the job
 * waits for that report first (12 s at most), since the abort ends every rank. {@code ferry doctor
 * --hang} asks every job under the folder at once through {@code ferry.flight.dir/dump-request}.
 * Where the folder is not shared between nodes, ranks of other nodes dump only for their own
 * reasons, and the report says which dumps are missing.
 *
 * <p>While JFR records, each dump also writes the recordings so far ({@code rank-R.jfr}).
 */
final class DumpCoordinator {
    /** A request for dumps: in a job's folder (that job), or in the flight folder (every job in it). */
    static final String REQUEST = "dump-request";
    static final String REPORT = "report.txt";
    private static final long LOOK_MILLIS = 200;
    private static final long COLLECT_MILLIS = 4000;
    /** A launcher that ends the job after a lost rank sends SIGKILL soon after SIGTERM (Open MPI: about half a second). */
    private static final long COLLECT_EXITING_MILLIS = 300;
    /**
     * How long a rank about to abort waits for rank 0's report: rank 0 first writes its own
     * recordings and dump, then waits up to {@link #COLLECT_MILLIS} for the others', each of which
     * also writes its recordings first (with a wait of 6 s, 3 ranks on 2 busy cores once ended in
     * another rank's abort before rank 0 had printed its report).
     */
    private static final long REPORT_WAIT_MILLIS = 12_000;
    private static final long JOIN_MILLIS = 10_000;
    /** How long the launcher gets to forward rank 0's print of the report before an abort ends the job. */
    private static final long FORWARD_MILLIS = 1000;

    private final Path root;
    private final Path dir;
    private final String job;
    private final int rank;
    private final int size;
    private final long startedMillis = System.currentTimeMillis();
    private final File jobRequest;
    private final File allRequest;
    private long jobRequestSeen; // the request files' modification times last answered
    private long allRequestSeen;
    private long roundMillis; // this node's clock when this rank last asked for or answered a round
    private String ownReason = ""; // the latest reason this rank had to dump on its own
    private boolean exiting;

    DumpCoordinator(Path root, String job, int rank, int size) {
        this.root = root.toAbsolutePath();
        this.dir = this.root.resolve(job);
        this.job = job;
        this.rank = rank;
        this.size = size;
        this.jobRequest = dir.resolve(REQUEST).toFile();
        this.allRequest = this.root.resolve(REQUEST).toFile();
    }

    /** For a process whose world was never opened through {@code Ferry.open()}: its own folder, no requests. */
    static DumpCoordinator alone(Path root, int rank) {
        return new DumpCoordinator(root, "process-" + ProcessHandle.current().pid(), rank, -1);
    }

    int rank() {
        return rank;
    }

    /**
     * Starts the watcher thread and the SIGUSR1 handler: not SIGUSR2, which HotSpot sends its own
     * threads to sample them while JFR records. A handler the program installed first stays.
     */
    void start() {
        allRequestSeen = allRequest.lastModified(); // a request older than this job is not for it
        Thread t = new Thread(this::watch, "ferry-flight");
        t.setDaemon(true);
        t.start();
        try {
            sun.misc.Signal usr1 = new sun.misc.Signal("USR1");
            sun.misc.SignalHandler before = sun.misc.Signal.handle(usr1, s -> signalled());
            if (before != sun.misc.SignalHandler.SIG_DFL) {
                sun.misc.Signal.handle(usr1, before); // the program's own: dumps come from the other triggers
            }
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            // the signal is taken (-Xrs, or the JVM uses it here): dumps come from the other triggers
        }
    }

    /** SIGUSR1: a new round, whatever is under way (someone asks for a report now). */
    private void signalled() {
        try {
            dumpNow("SIGUSR1", false, false, true);
        } catch (RuntimeException | Error e) {
            MpiLifecycle.reportFault("ferry: rank " + rank + ": the flight recorder could not write its dump: " + e);
        }
    }

    private void watch() {
        while (true) {
            try {
                Thread.sleep(LOOK_MILLIS);
                answerRequests();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                MpiLifecycle.reportFault("ferry: rank " + rank + ": the flight recorder's watcher failed: " + e);
            }
        }
    }

    private synchronized void answerRequests() {
        long j = jobRequest.lastModified();
        long a = allRequest.lastModified();
        if (j != 0 && j != jobRequestSeen) {
            jobRequestSeen = j;
            roundMillis = System.currentTimeMillis();
            answer(read(jobRequest.toPath()));
        }
        if (a != 0 && a != allRequestSeen && a >= startedMillis) {
            allRequestSeen = a;
            String asked = read(allRequest.toPath());
            request(asked); // the job's own request too: ranks whose watcher looked at the folder's one earlier answer as well
            answer(asked);
        }
    }

    /**
     * See {@link FlightRecorder#dump} ({@code exiting}: {@link FlightRecorder#dumpAtExit}). A rank
     * whose reason comes while a round is under way (a request it has not answered yet, or one of
     * the last {@link #JOIN_MILLIS}) joins it instead of asking for another: the ranks that time
     * out in one hang do so within a few seconds of each other, and each new round would make
     * every rank dump again and rank 0 wait and print again. {@code newRound}: ask for one anyway.
     */
    void dumpNow(String reason, boolean abortFollows, boolean exiting, boolean newRound) {
        long round;
        synchronized (this) {
            ownReason = reason;
            this.exiting |= exiting;
            long pending = jobRequest.lastModified();
            if (!newRound && pending != 0 && pending != jobRequestSeen) {
                jobRequestSeen = pending;
                roundMillis = System.currentTimeMillis();
            } else if (newRound || roundMillis == 0 || System.currentTimeMillis() - roundMillis > JOIN_MILLIS) {
                request("rank " + rank + ": " + reason); // first: every dump of this round is then newer than the request
            }
            round = jobRequestSeen;
            write("");
            if (rank == 0) {
                report(round, exiting ? COLLECT_EXITING_MILLIS : COLLECT_MILLIS);
            }
        }
        if (abortFollows && size > 0) {
            if (rank != 0) {
                // outside the lock: meanwhile the watcher answers a round that starts now
                long end = System.currentTimeMillis() + REPORT_WAIT_MILLIS;
                while (System.currentTimeMillis() < end && dir.resolve(REPORT).toFile().lastModified() < round) {
                    sleep(50);
                }
            }
            // the launcher still has to forward rank 0's print of the report before the abort ends it (rank 0's
            // own abort too: under MPICH's Hydra a report printed just before rank 0's MPI_Abort was lost)
            sleep(FORWARD_MILLIS);
        }
    }

    private void answer(String asked) {
        write(asked);
        if (rank == 0) {
            report(jobRequestSeen, exiting ? COLLECT_EXITING_MILLIS : COLLECT_MILLIS);
        }
    }

    /**
     * Writes this rank's JFR recordings, then its dump: once rank 0 has every dump, the job may be
     * aborted, and a recording cut short by that would be lost.
     */
    private void write(String asked) {
        try {
            Files.createDirectories(dir);
            JfrRecordings.dump(dir, "rank-" + rank);
            String text = RankDump.render(job, rank, size, ownReason, asked, exiting);
            writeAtomically(dir.resolve("rank-" + rank + ".txt"), text);
        } catch (IOException e) {
            MpiLifecycle.reportFault("ferry: rank " + rank + ": cannot write the flight-recorder dump into " + dir + ": " + e);
        }
    }

    /** Writes a request for a new round of dumps of this job. */
    private void request(String asked) {
        try {
            Files.createDirectories(dir);
            writeAtomically(jobRequest.toPath(), asked + "\n");
            jobRequestSeen = jobRequest.lastModified();
            roundMillis = System.currentTimeMillis();
        } catch (IOException e) {
            MpiLifecycle.reportFault("ferry: rank " + rank + ": cannot ask the other ranks for their dumps (" + jobRequest + "): " + e);
        }
    }

    /**
     * Rank 0: waits for every rank's dump of the round asked at {@code requested} (the request
     * file's modification time: the dumps' times come from the same file system), at most
     * {@code collectMillis}; then builds the report, writes and prints it.
     */
    private void report(long requested, long collectMillis) {
        long end = System.currentTimeMillis() + collectMillis;
        while (size > 0 && System.currentTimeMillis() < end && !allDumped(requested)) {
            sleep(LOOK_MILLIS / 4);
        }
        try {
            String text = HangReport.build(dir);
            // printed before the file is written: the file tells ranks about to abort that the report is out
            MpiLifecycle.reportFault("ferry: rank 0: hang report (" + dir.resolve(REPORT) + "):\n" + text.stripTrailing());
            writeAtomically(dir.resolve(REPORT), text);
        } catch (IOException | RuntimeException e) {
            MpiLifecycle.reportFault("ferry: rank 0: cannot build the hang report from " + dir + ": " + e
                    + " (./ferry hang-report " + dir + " builds it from the dumps)");
        }
    }

    /** Whether every rank's dump was written at or after {@code since} (a file time). */
    private boolean allDumped(long since) {
        for (int r = 0; r < size; r++) {
            if (dir.resolve("rank-" + r + ".txt").toFile().lastModified() < since) {
                return false;
            }
        }
        return true;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p).strip();
        } catch (IOException e) {
            return "a request (" + p + " unreadable: " + e.getMessage() + ")";
        }
    }

    static void writeAtomically(Path target, String text) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp-" + ProcessHandle.current().pid());
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        try {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
