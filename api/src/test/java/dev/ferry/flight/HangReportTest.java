// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The report's first line over dumps written by hand, one per kind of hang (the real ones run in reliability's FlightRecorderIT). */
class HangReportTest {
    static final String LOCAL = "Communicator#3[ompi, rank %d of %d]";

    static RankDump.Operation coll(long n, String op, int root, long count, String type, boolean done) {
        return new RankDump.Operation("0", n, n, op, "COLLECTIVE", root, -2, -2, -2, count, type, "HOST_PAGEABLE", "", done ? 900 : 3000, done, "main", "");
    }

    static RankDump.Operation p2p(String op, int peer, int tag, long count, String type, boolean done) {
        return new RankDump.Operation("0", 40, -1, op, "POINT_TO_POINT", peer, tag, -2, -2, count, type, "HOST_PAGEABLE", "", done ? 800 : 3000, done, "main", "");
    }

    static RankDump.Operation waiting(String text) {
        return new RankDump.Operation(null, -1, -1, text.substring(0, text.indexOf('(')), "WAIT", -2, -2, -2, -2, -1, "", "", "", 3000, false, "main", text);
    }

    /** A rank's dump: its ring of communicator 0 (the last entry not done is also its call in progress), and its other calls. */
    static RankDump dump(int rank, int size, List<RankDump.Operation> ring, RankDump.Operation... otherCalls) {
        List<RankDump.Operation> calls = new ArrayList<>(List.of(otherCalls));
        for (RankDump.Operation op : ring) if (!op.done()) calls.add(op);
        long collectives = ring.stream().mapToLong(RankDump.Operation::collective).max().orElse(0);
        RankDump.Header h = new RankDump.Header("job-1", rank, size, "node", 100 + rank, 0, rank == 0 ? "TIMEOUT: ..." : "", rank == 0 ? "" : "rank 0: TIMEOUT", false);
        return new RankDump(h, List.of(new RankDump.Comm("0", "opened", rank, size, "ompi", String.format(LOCAL, rank, size), 50, collectives, ring)), calls);
    }

    /** allReduce #1 .. #n-1 done, then {@code last} as #n. */
    static List<RankDump.Operation> ring(int n, RankDump.Operation last) {
        List<RankDump.Operation> ops = new ArrayList<>();
        for (int i = 1; i < n; i++) ops.add(coll(i, "allReduce", -2, 1, "LONG", true));
        if (last != null) ops.add(last);
        return ops;
    }

    static String first(String report) {
        return report.lines().findFirst().orElse("");
    }

    @Test
    void aRankThatSkipsACollective() {
        String r = HangReport.of(List.of(
                dump(0, 3, ring(5, coll(5, "allReduce", -2, 1, "LONG", false))),
                dump(1, 3, ring(5, coll(5, "allReduce", -2, 1, "LONG", false))),
                dump(2, 3, ring(5, null), waiting("MPI_Finalize() of Open MPI 4.1.4"))));
        assertEquals("rank 2 never called allReduce #5 on communicator 0 (ranks 0,1 wait in it); rank 2 is in MPI_Finalize() of Open MPI 4.1.4", first(r), r);
        assertTrue(r.contains("last collective reached: rank 0: allReduce #5 (inside for 3.0 s), rank 1: allReduce #5 (inside for 3.0 s), rank 2: allReduce #4 (done)"), r);
    }

    @Test
    void collectivesInADifferentOrder() {
        String r = HangReport.of(List.of(
                dump(0, 3, ring(3, coll(3, "allReduce", -2, 1, "LONG", false))),
                dump(1, 3, ring(3, coll(3, "barrier", -2, -1, "", false))),
                dump(2, 3, ring(3, coll(3, "allReduce", -2, 1, "LONG", false)))));
        assertEquals("rank 1 called barrier() as collective #3 on communicator 0, where ranks 0,2 called allReduce(1 x LONG)", first(r), r);
    }

    @Test
    void mismatchedCountsAndRoots() {
        String counts = HangReport.of(List.of(
                dump(0, 3, ring(3, coll(3, "allReduce", -2, 8, "LONG", false))),
                dump(1, 3, ring(3, coll(3, "allReduce", -2, 4, "LONG", false))),
                dump(2, 3, ring(3, coll(3, "allReduce", -2, 8, "LONG", false)))));
        assertEquals("rank 1 called allReduce(4 x LONG) as collective #3 on communicator 0, where ranks 0,2 called allReduce(8 x LONG)", first(counts), counts);
        String roots = HangReport.of(List.of(
                dump(0, 3, ring(2, coll(2, "broadcast", 0, 8, "BYTE", false))),
                dump(1, 3, ring(2, coll(2, "broadcast", 1, 8, "BYTE", true)), waiting("waitFor() of request irecv(source 0, tag 1, 8 x BYTE) on "
                        + String.format(LOCAL, 1, 3))),
                dump(2, 3, ring(2, coll(2, "broadcast", 0, 8, "BYTE", false)))));
        assertEquals("rank 1 called broadcast(root 1, 8 x BYTE) as collective #2 on communicator 0, where ranks 0,2 called broadcast(root 0, 8 x BYTE)",
                first(roots), roots);
    }

    @Test
    void aSendWithoutAReceive() {
        List<RankDump.Operation> sender = ring(2, null);
        sender.add(p2p("send", 1, 5, 131072, "LONG", false));
        String r = HangReport.of(List.of(
                dump(0, 3, sender),
                dump(1, 3, ring(2, coll(2, "barrier", -2, -1, "", false))),
                dump(2, 3, ring(2, coll(2, "barrier", -2, -1, "", false)))));
        assertEquals("rank 1 never received rank 0's send(destination 1, tag 5, 131072 x LONG) on communicator 0; rank 1 is in barrier #2 on communicator 0",
                first(r), r);
        assertTrue(r.contains("rank 0 never called barrier #2 on communicator 0 (ranks 1,2 wait in it); rank 0 is in send(destination 1, tag 5, "
                + "131072 x LONG) on communicator 0"), r);
        assertTrue(r.contains("blocked in point-to-point:\n  rank 0: send(destination 1, tag 5, 131072 x LONG) on communicator 0 for 3.0 s"), r);
    }

    @Test
    void aWaitForAMessageNobodySends() {
        String r = HangReport.of(List.of(
                dump(0, 2, ring(2, null), waiting("waitFor() of request irecv(source 1, tag 7, 4 x INT) on " + String.format(LOCAL, 0, 2))),
                dump(1, 2, ring(2, null))));
        assertEquals("rank 1 never sent what rank 0 waits for in waitFor() of request irecv(source 1, tag 7, 4 x INT) on communicator 0; "
                + "rank 1 is not in a Ferry call (its last: allReduce #1 (1 x LONG) on communicator 0, 900.0 ms ago)", first(r), r);
    }

    @Test
    void aLostRank() {
        String r = HangReport.of(List.of(
                dump(0, 3, ring(4, coll(4, "allReduce", -2, 1, "LONG", false))),
                dump(1, 3, ring(4, coll(4, "allReduce", -2, 1, "LONG", false)))));
        assertEquals("rank 2 is lost (no dump): ranks 0,1 wait in allReduce #4 on communicator 0", first(r), r);
        assertTrue(r.contains("no dump from rank 2"), r);
    }

    @Test
    void nothingWrong() {
        String r = HangReport.of(List.of(dump(0, 2, ring(3, null)), dump(1, 2, ring(3, null))));
        assertTrue(first(r).startsWith("no rank is inside a Ferry call"), r);
    }
}
