// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import java.lang.foreign.ValueLayout;

/**
 * What one example reports: its name, whether its check passed, and one line saying what was
 * verified. Every rank returns the same status (the examples agree on it before returning), so
 * that every rank can exit with the same code; the summary is meaningful on rank 0.
 *
 * @param name    the example's short name ({@code scatter-shift-gather}, ...)
 * @param status  passed, failed, or skipped (with the reason as summary)
 * @param summary what was done and checked, e.g. "2 ranks, 1M floats, mean 0.4998 -> 2.4998 ..."
 */
public record Outcome(String name, Status status, String summary) {

    /** Result of an example's check. */
    public enum Status {
        /** Ran and every check passed. */
        OK("[ok]"),
        /** Could not run here (no GPU, one rank, ...); the summary says why. Not a failure. */
        SKIP("[skip]"),
        /** Ran and a check failed. */
        FAIL("[FAIL]");

        private final String tag;

        Status(String tag) {
            this.tag = tag;
        }

        /** The tag at the start of the result line. */
        public String tag() {
            return tag;
        }
    }

    public static Outcome ok(String name, String summary) {
        return new Outcome(name, Status.OK, summary);
    }

    public static Outcome skip(String name, String why) {
        return new Outcome(name, Status.SKIP, why);
    }

    public static Outcome fail(String name, String why) {
        return new Outcome(name, Status.FAIL, why);
    }

    /** True unless the check failed. */
    public boolean passed() {
        return status != Status.FAIL;
    }

    /** The result line: {@code [ok] name: summary}. */
    public String line() {
        return status.tag() + " " + name + ": " + summary;
    }

    /**
     * Makes every rank return the worst status of all ranks (collective): a check that failed on
     * any rank fails everywhere. A rank whose own status is better keeps its summary, with a note.
     */
    public Outcome agree(Communicator comm) {
        if (status == Status.FAIL && comm.rank() != 0) {
            System.err.println("rank " + comm.rank() + ": " + line()); // rank 0 prints only its own summary
        }
        try (HostBuffer mine = HostBuffer.allocate(4); HostBuffer worst = HostBuffer.allocate(4)) {
            mine.segment().set(ValueLayout.JAVA_INT, 0, status.ordinal());
            comm.allReduce(mine, worst, 1, DataType.INT, ReduceOp.MAX);
            Status all = Status.values()[worst.segment().get(ValueLayout.JAVA_INT, 0)];
            if (all.ordinal() <= status.ordinal()) {
                return this;
            }
            return new Outcome(name, all, summary + " (but another rank reported " + all.tag() + ")");
        }
    }
}
