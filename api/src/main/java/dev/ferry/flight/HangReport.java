// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.Communicator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The hang report of one job, from its ranks' {@link RankDump}s: the first line names the culprit
 * (the rank and the call), then the detail: for each communicator the last collective each rank
 * reached, the first collective where ranks disagree (operation, root, count, datatype) or where
 * a rank never arrived, the ranks blocked in point-to-point with their peer and tag, and the last
 * operations of every rank.
 *
 * <p>The culprit, in this order: ranks that disagree on a collective (the ranks apart from the
 * majority); a rank that never received a blocked send; ranks that never arrived at a collective
 * that others wait in (lost ranks among them); a rank that never sent what a blocked receive waits
 * for; a lost rank. Ranks are world ranks; a peer or root is a rank of the communicator named.
 *
 * <p>{@code java -cp ... dev.ferry.flight.HangReport DIR} ({@code ./ferry hang-report DIR}) prints
 * the report of DIR: a job's folder of dumps, or the flight folder ({@code ferry.flight.dir}),
 * whose newest job is taken.
 */
public final class HangReport {
    private static final Pattern REQUEST = Pattern.compile(
            "request (isend|irecv|MatchedMessage\\.irecv)\\((?:destination|source) (any|-?\\d+), tag (any|-?\\d+)(?:, (\\d+) x (\\w+))?\\) on (.*)$");

    private final int size;
    private final Map<Integer, RankDump> dumps;
    private final Map<String, Group> groups = new TreeMap<>(HangReport::compareIds);
    private final List<Blocked> blocked = new ArrayList<>();

    /** One communicator across the ranks that dumped it. */
    private record Group(String id, String origin, int size, Map<Integer, Member> members) {
    }

    /** One rank's view of a communicator. */
    private record Member(int world, RankDump.Comm comm) {
    }

    /** A point-to-point operation a rank is blocked in (a blocking call, or the wait of a request). */
    private record Blocked(int world, String comm, String op, boolean sends, boolean receives, int peer, int tag, int peer2, int tag2, String text,
                           double millis) {
    }

    private HangReport(Map<Integer, RankDump> dumps) {
        this.dumps = dumps;
        int n = -1;
        for (RankDump d : dumps.values()) {
            n = Math.max(n, Math.max(d.header().size(), d.header().rank() + 1));
        }
        this.size = n;
        for (RankDump d : dumps.values()) {
            int w = d.header().rank();
            for (RankDump.Comm c : d.comms()) {
                groups.computeIfAbsent(c.id(), id -> new Group(id, c.origin(), c.size(), new TreeMap<>())).members().put(c.rank(), new Member(w, c));
            }
            for (RankDump.Operation call : d.calls()) {
                Blocked b = blocked(w, d, call);
                if (b != null) blocked.add(b);
            }
        }
    }

    // ---- entry points ----------------------------------------------------------------------

    /** The report of the dumps in {@code dir} (a job's folder). */
    public static String build(Path dir) throws IOException {
        Map<Integer, RankDump> dumps = new TreeMap<>();
        List<String> unreadable = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(f -> f.getFileName().toString().matches("rank-\\d+\\.txt")).sorted().toList()) {
                try {
                    RankDump d = RankDump.read(p);
                    dumps.put(d.header().rank(), d);
                } catch (IOException e) {
                    unreadable.add(p.getFileName() + ": " + e.getMessage());
                }
            }
        }
        if (dumps.isEmpty()) {
            throw new IOException("no rank dumps (rank-N.txt) in " + dir + (unreadable.isEmpty() ? "" : "; unreadable: " + unreadable));
        }
        String text = new HangReport(dumps).text();
        return unreadable.isEmpty() ? text : text + "unreadable dumps: " + String.join("; ", unreadable) + "\n";
    }

    /** The report of dumps already read (for tests). */
    static String of(List<RankDump> dumps) {
        Map<Integer, RankDump> m = new TreeMap<>();
        for (RankDump d : dumps) m.put(d.header().rank(), d);
        return new HangReport(m).text();
    }

    /** The job folder to report on: {@code dir} itself when it holds dumps, else its newest sub-folder that does. */
    static Optional<Path> jobFolder(Path dir) throws IOException {
        if (hasDumps(dir)) return Optional.of(dir);
        if (!Files.isDirectory(dir)) return Optional.empty();
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isDirectory).filter(HangReport::hasDumps)
                    .max(Comparator.comparingLong(p -> p.resolve("rank-0.txt").toFile().lastModified() | newestDump(p)));
        }
    }

    private static boolean hasDumps(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(f -> f.getFileName().toString().matches("rank-\\d+\\.txt"));
        } catch (IOException e) {
            return false;
        }
    }

    private static long newestDump(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.mapToLong(f -> f.toFile().lastModified()).max().orElse(0);
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * {@code ferry doctor --hang}: asks every running job whose ranks watch {@code root} (their
     * {@code ferry.flight.dir}) for their dumps, waits for them (until no new dump came for 2 s, at
     * most {@code waitMillis}), and returns the report of each job that answered, by job folder.
     */
    public static Map<Path, String> ofRunningJobs(Path root, long waitMillis) throws IOException {
        Files.createDirectories(root);
        Path request = root.resolve(DumpCoordinator.REQUEST);
        DumpCoordinator.writeAtomically(request, "ferry doctor --hang (pid " + ProcessHandle.current().pid() + ")\n");
        long asked = request.toFile().lastModified();
        long end = System.currentTimeMillis() + waitMillis;
        Map<Path, Long> fresh = Map.of();
        long changed = System.currentTimeMillis();
        while (System.currentTimeMillis() < end) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            Map<Path, Long> now = freshDumps(root, asked);
            if (!now.equals(fresh)) {
                fresh = now;
                changed = System.currentTimeMillis();
            } else if (!fresh.isEmpty() && System.currentTimeMillis() - changed > 2000) {
                break;
            }
        }
        Map<Path, String> reports = new TreeMap<>();
        for (Path job : fresh.keySet()) {
            reports.put(job, build(job));
        }
        return reports;
    }

    /** The job folders under {@code root} with dumps written at or after {@code since}, with their newest dump's time. */
    private static Map<Path, Long> freshDumps(Path root, long since) throws IOException {
        Map<Path, Long> out = new TreeMap<>();
        try (Stream<Path> jobs = Files.list(root)) {
            for (Path job : jobs.filter(Files::isDirectory).toList()) {
                try (Stream<Path> s = Files.list(job)) {
                    long newest = s.filter(f -> f.getFileName().toString().matches("rank-\\d+\\.txt")).mapToLong(f -> f.toFile().lastModified())
                            .filter(t -> t >= since).max().orElse(0);
                    if (newest > 0) out.put(job, newest);
                }
            }
        }
        return out;
    }

    /** {@code HangReport DIR}: prints the report of DIR (a job's folder, or the flight folder: its newest job). */
    public static void main(String[] args) throws IOException {
        if (args.length != 1 || args[0].startsWith("-")) {
            System.err.println("usage: HangReport DIR   (DIR: a job's folder of rank-N.txt dumps, or the flight folder (ferry.flight.dir): its newest job)");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        Optional<Path> job = jobFolder(dir);
        if (job.isEmpty()) {
            System.err.println("hang-report: no flight-recorder dumps (rank-N.txt) in " + dir + " or its sub-folders");
            System.exit(2);
        }
        if (!job.get().equals(dir)) {
            System.err.println("hang-report: newest job in " + dir + ": " + job.get().getFileName());
        }
        System.out.print(build(job.get()));
    }

    // ---- reading the dumps -----------------------------------------------------------------

    /** The point-to-point operation {@code call} is blocked in, or null. */
    private static Blocked blocked(int world, RankDump d, RankDump.Operation call) {
        if (call.kind().equals("POINT_TO_POINT")) {
            String op = call.op();
            boolean sends = op.equals("send") || op.equals("sendRecv");
            boolean receives = !op.equals("send");
            return new Blocked(world, call.comm(), op, sends, receives, call.peer(), call.tag(), call.peer2(), call.tag2(), call.describe(), call.millis());
        }
        if (call.kind().equals("WAIT")) {
            Matcher m = REQUEST.matcher(call.text());
            if (!m.find()) return null;
            String comm = null;
            for (RankDump.Comm c : d.comms()) {
                if (m.group(6).equals(c.local())) comm = c.id();
            }
            if (comm == null) return null;
            boolean sends = m.group(1).equals("isend");
            int peer = m.group(2).equals("any") ? Communicator.ANY_SOURCE : Integer.parseInt(m.group(2));
            int tag = m.group(3).equals("any") ? Communicator.ANY_TAG : Integer.parseInt(m.group(3));
            return new Blocked(world, comm, m.group(1), sends, !sends, peer, tag, -2, -2, localToIds(d, call.text()), call.millis());
        }
        return null;
    }

    /** {@code text} with this rank's names of its communicators replaced by their ids. */
    private static String localToIds(RankDump d, String text) {
        String t = text;
        for (RankDump.Comm c : d.comms()) {
            if (c.local() != null && !c.local().isEmpty()) t = t.replace(c.local(), "communicator " + c.id());
        }
        return t;
    }

    private static int compareIds(String a, String b) {
        String[] x = a.split("\\."), y = b.split("\\.");
        for (int i = 0; i < Math.min(x.length, y.length); i++) {
            int c = compareNumbered(x[i], y[i]);
            if (c != 0) return c;
        }
        return Integer.compare(x.length, y.length);
    }

    private static int compareNumbered(String a, String b) {
        Matcher ma = Pattern.compile("^(\\d+)").matcher(a), mb = Pattern.compile("^(\\d+)").matcher(b);
        if (ma.find() && mb.find()) {
            int c = Long.compare(Long.parseLong(ma.group(1)), Long.parseLong(mb.group(1)));
            if (c != 0) return c;
        }
        return a.compareTo(b);
    }

    // ---- analysis --------------------------------------------------------------------------

    /** A finding: its line, and how strongly it names the culprit (lower first). */
    private record Finding(int rank, String line) {
    }

    private String text() {
        List<Finding> findings = new ArrayList<>();
        StringBuilder detail = new StringBuilder();
        for (Group g : groups.values()) {
            communicator(g, findings, detail);
        }
        pointToPoint(findings, detail);
        lost(findings);
        findings.sort(Comparator.comparingInt(Finding::rank));
        StringBuilder sb = new StringBuilder();
        sb.append(findings.isEmpty() ? nothingFound() : findings.get(0).line()).append('\n');
        header(sb);
        if (findings.size() > 1) {
            sb.append("also:\n");
            for (Finding f : findings.subList(1, findings.size())) sb.append("  ").append(f.line()).append('\n');
        }
        sb.append(detail);
        recent(sb);
        return sb.toString();
    }

    private String nothingFound() {
        List<String> inside = new ArrayList<>();
        for (RankDump d : dumps.values()) {
            for (RankDump.Operation c : d.calls()) inside.add("rank " + d.header().rank() + " in " + callText(d, c));
        }
        return inside.isEmpty() ? "no rank is inside a Ferry call, and the ranks' collectives agree: no hang in Ferry's calls"
                : "no mismatch found in the ranks' records: " + String.join("; ", inside);
    }

    private void header(StringBuilder sb) {
        RankDump any = dumps.values().iterator().next();
        List<Integer> missing = missing();
        sb.append("job ").append(any.header().job()).append(": ").append(size < 0 ? "?" : Integer.toString(size)).append(" ranks; dumps from ranks ")
                .append(list(dumps.keySet()));
        if (!missing.isEmpty()) sb.append("; no dump from ").append(ranks(missing)).append(" (lost, or its flight folder is not this one)");
        sb.append('\n');
        for (RankDump d : dumps.values()) {
            RankDump.Header h = d.header();
            String why = !h.reason().isEmpty() ? h.reason() : !h.asked().isEmpty() ? "asked by " + h.asked() : "?";
            sb.append("  rank ").append(h.rank()).append(" (").append(h.host()).append(", pid ").append(h.pid()).append("): ").append(why)
                    .append(h.exiting() ? " [exited]" : "").append('\n');
        }
    }

    private List<Integer> missing() {
        List<Integer> out = new ArrayList<>();
        for (int r = 0; r < size; r++) if (!dumps.containsKey(r)) out.add(r);
        return out;
    }

    private void communicator(Group g, List<Finding> findings, StringBuilder detail) {
        String name = "communicator " + g.id();
        detail.append(name).append(" (").append(g.origin().equals("opened") ? "opened" : "made by " + g.origin()).append(", ").append(g.size())
                .append(g.size() == 1 ? " rank):\n" : " ranks):\n");
        Map<Integer, Long> reached = new TreeMap<>();
        Map<Integer, RankDump.Operation> inside = new TreeMap<>();
        Map<Long, Map<Integer, RankDump.Operation>> byNumber = new TreeMap<>();
        for (Map.Entry<Integer, Member> e : g.members().entrySet()) {
            RankDump.Comm c = e.getValue().comm();
            reached.put(e.getKey(), c.collectives());
            for (RankDump.Operation op : c.ops()) {
                if (op.collective() > 0) byNumber.computeIfAbsent(op.collective(), k -> new TreeMap<>()).put(e.getKey(), op);
            }
            for (RankDump.Operation call : dumps.get(e.getValue().world()).calls()) {
                if (g.id().equals(call.comm()) && call.kind().equals("COLLECTIVE")) inside.put(e.getKey(), call);
            }
        }
        // the last collective each rank reached
        List<String> last = new ArrayList<>();
        for (Map.Entry<Integer, Long> e : reached.entrySet()) {
            int r = e.getKey();
            RankDump.Operation op = byNumber.getOrDefault(e.getValue(), Map.of()).get(r);
            String state = inside.containsKey(r) ? "inside for " + seconds(inside.get(r).millis()) : op != null && op.done() ? "done" : "";
            last.add(who(g, r) + ": " + (e.getValue() == 0 ? "none" : (op != null ? op.op() + " " : "") + "#" + e.getValue())
                    + (state.isEmpty() ? "" : " (" + state + ")"));
        }
        detail.append("  last collective reached: ").append(last.isEmpty() ? "none" : String.join(", ", last)).append('\n');

        // the first collective where ranks disagree
        String disagreement = null;
        for (Map.Entry<Long, Map<Integer, RankDump.Operation>> e : byNumber.entrySet()) {
            if (e.getValue().size() < 2) continue;
            Map<String, List<Integer>> bySignature = new LinkedHashMap<>();
            for (Map.Entry<Integer, RankDump.Operation> m : e.getValue().entrySet()) {
                bySignature.computeIfAbsent(signature(m.getValue()), k -> new ArrayList<>()).add(m.getKey());
            }
            if (bySignature.size() < 2) continue;
            List<Map.Entry<String, List<Integer>>> sorted = new ArrayList<>(bySignature.entrySet());
            // the majority: most ranks; among equals, the one with the lowest rank
            sorted.sort(Comparator.comparingInt((Map.Entry<String, List<Integer>> x) -> -x.getValue().size()).thenComparingInt(x -> x.getValue().get(0)));
            Map.Entry<String, List<Integer>> majority = sorted.get(0);
            Map.Entry<String, List<Integer>> culprits = sorted.get(1);
            RankDump.Operation theirs = e.getValue().get(culprits.getValue().get(0));
            RankDump.Operation ours = e.getValue().get(majority.getValue().get(0));
            disagreement = whoList(g, culprits.getValue()) + " called " + theirs.describe() + " as collective #" + e.getKey() + " on " + name + ", where "
                    + whoList(g, majority.getValue()) + " called " + ours.describe();
            if (sorted.size() > 2) {
                disagreement += sorted.subList(2, sorted.size()).stream().map(x -> " and " + whoList(g, x.getValue()) + " called "
                        + e.getValue().get(x.getValue().get(0)).describe()).collect(Collectors.joining());
            }
            findings.add(new Finding(1, disagreement));
            break;
        }
        detail.append("  first disagreement: ").append(disagreement == null ? "none in the records" : disagreement).append('\n');

        // a collective that some ranks wait in and others never reached
        long newest = inside.values().stream().mapToLong(RankDump.Operation::collective).max().orElse(0);
        if (newest > 0) {
            List<Integer> waiting = inside.entrySet().stream().filter(e -> e.getValue().collective() == newest).map(Map.Entry::getKey).toList();
            boolean oneOp = waiting.stream().map(r -> inside.get(r).op()).distinct().count() == 1;
            String call = (oneOp ? inside.get(waiting.get(0)).op() : "collective") + " #" + newest + " on " + name;
            List<Integer> behind = new ArrayList<>();
            for (int r = 0; r < g.size(); r++) {
                Long got = reached.get(r);
                if (got == null || got < newest) behind.add(r);
            }
            if (behind.isEmpty()) {
                detail.append("  ").append(whoList(g, waiting)).append(waiting.size() == 1 ? " is" : " are").append(" inside ").append(call)
                        .append(", and every rank has reached it\n");
            } else {
                List<Integer> lost = behind.stream().filter(r -> !g.members().containsKey(r)).toList();
                List<Integer> present = behind.stream().filter(r -> g.members().containsKey(r)).toList();
                if (!present.isEmpty()) {
                    String line = whoList(g, present) + " never called " + call + " (" + whoList(g, waiting) + " wait in it); "
                            + present.stream().map(r -> whereIs(g.members().get(r).world())).collect(Collectors.joining("; "));
                    findings.add(new Finding(3, line));
                    detail.append("  ").append(line).append('\n');
                }
                if (!lost.isEmpty()) {
                    boolean noDump = worldLike(g) && lost.stream().noneMatch(dumps::containsKey);
                    String line = whoList(g, lost) + (noDump ? (lost.size() == 1 ? " is" : " are") + " lost (no dump)"
                            : " left no record of it (lost, or never made it)") + ": " + whoList(g, waiting) + " wait in " + call;
                    findings.add(new Finding(3, line));
                    detail.append("  ").append(line).append('\n');
                }
            }
        }
    }

    /** The arguments every rank must pass alike. */
    private static String signature(RankDump.Operation op) {
        String s = op.op();
        if (CollectiveShape.rooted(op.op())) s += " root " + op.peer();
        if (CollectiveShape.sameCount(op.op())) s += " count " + op.count();
        if (CollectiveShape.sameType(op.op())) s += " type " + op.type();
        return s;
    }

    private void pointToPoint(List<Finding> findings, StringBuilder detail) {
        if (blocked.isEmpty()) return;
        detail.append("blocked in point-to-point:\n");
        for (Blocked b : blocked) {
            detail.append("  rank ").append(b.world()).append(": ").append(b.text())
                    .append(b.text().contains(" on communicator ") ? "" : " on communicator " + b.comm()).append(" for ").append(seconds(b.millis()))
                    .append('\n');
        }
        for (Blocked b : blocked) {
            Group g = groups.get(b.comm());
            if (g == null) continue;
            int me = commRank(g, b.world());
            if (b.sends()) {
                unmatched(g, me, b, b.peer(), b.tag(), true, findings);
            }
            if (b.receives()) {
                int source = b.op().equals("sendRecv") ? b.peer2() : b.peer();
                int tag = b.op().equals("sendRecv") ? b.tag2() : b.tag();
                if (source != Communicator.ANY_SOURCE) unmatched(g, me, b, source, tag, false, findings);
            }
        }
    }

    /** A finding when {@code peer} (a rank of {@code g}) is not in an operation that matches {@code b}'s send ({@code send}) or receive. */
    private void unmatched(Group g, int me, Blocked b, int peer, int tag, boolean send, List<Finding> findings) {
        Member m = g.members().get(peer);
        if (m == null) {
            return; // a lost peer is a finding of its own
        }
        for (Blocked o : blocked) {
            if (o.world() != m.world() || !Objects.equals(o.comm(), b.comm())) continue;
            if (send && o.receives()) {
                int source = o.op().equals("sendRecv") ? o.peer2() : o.peer();
                int t = o.op().equals("sendRecv") ? o.tag2() : o.tag();
                if ((source == me || source == Communicator.ANY_SOURCE) && (t == tag || t == Communicator.ANY_TAG)) return;
            }
            if (!send && o.sends() && o.peer() == me && (tag == Communicator.ANY_TAG || o.tag() == tag)) return;
        }
        String call = b.text().replaceAll(" on communicator \\S+$", "") + " on communicator " + b.comm();
        String line = send
                ? who(g, peer) + " never received rank " + b.world() + "'s " + call + "; " + whereIs(m.world())
                : who(g, peer) + " never sent what rank " + b.world() + " waits for in " + call + "; " + whereIs(m.world());
        findings.add(new Finding(send ? 2 : 4, line));
    }

    private void lost(List<Finding> findings) {
        List<Integer> missing = missing();
        if (!missing.isEmpty()) {
            findings.add(new Finding(5, ranks(missing) + (missing.size() == 1 ? " is" : " are") + " lost: no dump (dead, or its flight folder is not this one)"));
        }
        for (RankDump d : dumps.values()) {
            if (d.header().exiting()) {
                findings.add(new Finding(5, "rank " + d.header().rank() + " exited: " + d.header().reason()));
            }
        }
    }

    /** Where a rank is: its calls in progress, else its last operation. */
    private String whereIs(int world) {
        RankDump d = dumps.get(world);
        if (d == null) return "rank " + world + " is lost (no dump)";
        String exited = d.header().exiting() ? " as it exited" : "";
        if (!d.calls().isEmpty()) {
            return "rank " + world + " is in " + d.calls().stream().map(c -> callText(d, c)).collect(Collectors.joining(", and in ")) + exited;
        }
        RankDump.Operation newest = null;
        String comm = null;
        for (RankDump.Comm c : d.comms()) {
            for (RankDump.Operation op : c.ops()) {
                if (newest == null || op.millis() < newest.millis()) {
                    newest = op;
                    comm = c.id();
                }
            }
        }
        return "rank " + world + " is not in a Ferry call" + exited + (newest == null ? "" : " (its last: " + opText(comm, newest) + ", "
                + seconds(newest.millis()) + " ago)");
    }

    private static String callText(RankDump d, RankDump.Operation c) {
        return c.kind().equals("WAIT") ? localToIds(d, c.text()) : opText(c.comm(), c);
    }

    private static String opText(String comm, RankDump.Operation op) {
        return numbered(op) + " on communicator " + comm;
    }

    /** "allReduce #5 (1 x LONG)", "barrier #4"; a point-to-point operation as {@link RankDump.Operation#describe()}. */
    private static String numbered(RankDump.Operation op) {
        if (op.collective() <= 0) {
            return op.describe();
        }
        String d = op.describe();
        String args = d.substring(d.indexOf('(') + 1, d.length() - 1);
        return op.op() + " #" + op.collective() + (args.isEmpty() ? "" : " (" + args + ")");
    }

    private void recent(StringBuilder sb) {
        sb.append("last operations (oldest first; at most 8 per rank and communicator):\n");
        for (RankDump d : dumps.values()) {
            for (RankDump.Comm c : d.comms()) {
                List<RankDump.Operation> ops = c.ops();
                if (ops.isEmpty()) continue;
                sb.append("  rank ").append(d.header().rank()).append(", communicator ").append(c.id()).append(": ");
                List<String> items = new ArrayList<>();
                for (RankDump.Operation op : ops.subList(Math.max(0, ops.size() - 8), ops.size())) {
                    items.add(numbered(op) + (op.done() ? "" : " [inside " + seconds(op.millis()) + "]")
                            + (op.algorithm() == null || op.algorithm().isEmpty() || op.algorithm().equals(c.backend()) ? "" : " via " + op.algorithm()));
                }
                sb.append(String.join(", ", items)).append('\n');
            }
        }
    }

    // ---- names -----------------------------------------------------------------------------

    private static int commRank(Group g, int world) {
        for (Map.Entry<Integer, Member> e : g.members().entrySet()) {
            if (e.getValue().world() == world) return e.getKey();
        }
        return -1;
    }

    /** "rank 2", or "rank 5 (rank 2 of communicator 0.3c1)" where the ranks differ; "rank 2 of communicator C" when unknown. */
    private String who(Group g, int commRank) {
        Member m = g.members().get(commRank);
        if (m == null) return worldLike(g) ? "rank " + commRank : "rank " + commRank + " of communicator " + g.id();
        return "rank " + m.world() + (m.world() == commRank ? "" : " (rank " + commRank + " of communicator " + g.id() + ")");
    }

    /**
     * Whether {@code g}'s ranks are the world's (its size is the world's, and every rank that dumped
     * it has the same rank in both): then a rank of it without a record is that world rank.
     */
    private boolean worldLike(Group g) {
        return g.size() == size && g.members().entrySet().stream().allMatch(e -> e.getKey() == e.getValue().world());
    }

    private String whoList(Group g, List<Integer> commRanks) {
        if (commRanks.size() == 1) return who(g, commRanks.get(0));
        boolean same = worldLike(g) || commRanks.stream().allMatch(r -> g.members().containsKey(r) && g.members().get(r).world() == r);
        if (same) return "ranks " + list(commRanks);
        return commRanks.stream().map(r -> who(g, r)).collect(Collectors.joining(", "));
    }

    private static String ranks(List<Integer> r) {
        return (r.size() == 1 ? "rank " : "ranks ") + list(r);
    }

    private static String list(java.util.Collection<Integer> r) {
        return r.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    private static String seconds(double millis) {
        return millis >= 1000 ? String.format(Locale.ROOT, "%.1f s", millis / 1000) : String.format(Locale.ROOT, "%.1f ms", millis);
    }
}
