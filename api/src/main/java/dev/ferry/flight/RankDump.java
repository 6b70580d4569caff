// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.Communicator;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One rank's flight-recorder dump: what it was doing (every thread's Ferry call in progress) and
 * the last operations of each of its communicators. Written as text, one record per line, tab
 * separated {@code key=value} fields after the record's kind ({@code rank}, {@code comm},
 * {@code op}, {@code call}), so that it reads in a terminal and parses back ({@link #read}) for
 * {@link HangReport}.
 *
 * @param header the rank, the job and why it dumped
 * @param comms  its communicators, each with its ring (oldest first)
 * @param calls  the calls in progress on its threads
 */
public record RankDump(Header header, List<Comm> comms, List<Operation> calls) {
    static final String MAGIC = "ferry-flight-dump";

    /**
     * @param job     the job's name (the folder of its dumps)
     * @param rank    world rank
     * @param size    world size, or -1 when unknown
     * @param at      when it was written (epoch milliseconds, this node's clock)
     * @param reason  why this rank dumped on its own (a timeout, an uncaught exception, an exit in a call), or ""
     * @param asked   the request it answered, when another rank or a tool asked, or ""
     * @param exiting true when the process was exiting as it dumped (it is gone by now)
     */
    public record Header(String job, int rank, int size, String host, long pid, long at, String reason, String asked, boolean exiting) {
    }

    /**
     * @param id          the id every rank gives it
     * @param origin      how it was made
     * @param rank        this process's rank in it
     * @param size        its size
     * @param local       its name in this process's messages ("Communicator#3[ompi, rank 0 of 2]")
     * @param operations  operations of this rank on it so far
     * @param collectives collectives entered on it so far (the newest collective number)
     * @param ops         the ring, oldest first
     */
    public record Comm(String id, String origin, int rank, int size, String backend, String local, long operations, long collectives,
                       List<Operation> ops) {
    }

    /**
     * One operation: a ring entry, or a call in progress.
     *
     * @param comm       the communicator's id, null for a wait or MPI_Finalize
     * @param seq        its number among this rank's operations on the communicator, -1 for none
     * @param collective its collective number, -1 when not a collective
     * @param kind       COLLECTIVE, POINT_TO_POINT or WAIT
     * @param peer       root, destination or source (-1: any; -2: none)
     * @param tag        tag (-1: any; -2: none); for split: the key
     * @param count      count, -1 for none
     * @param millis     milliseconds since it started, at the dump
     * @param text       for a wait: what it waits for; else ""
     */
    public record Operation(String comm, long seq, long collective, String op, String kind, int peer, int tag, int peer2, int tag2, long count,
                            String type, String memory, String algorithm, double millis, boolean done, String thread, String text) {
        /** "allReduce(8 x LONG)", "broadcast(root 0, 4 x INT)", "send(destination 1, tag 5, 16 x BYTE)", "waitFor() of ..." */
        public String describe() {
            if (kind.equals("WAIT")) {
                return text;
            }
            String n = count < 0 || type.isEmpty() ? "" : count + " x " + type;
            String args = switch (op) {
                case "send", "isend" -> "destination " + rank(peer) + ", tag " + tagText(tag) + (n.isEmpty() ? "" : ", " + n);
                case "recv", "irecv", "probe", "iprobe", "mprobe", "improbe", "MatchedMessage.recv", "MatchedMessage.irecv" ->
                        "source " + rank(peer) + ", tag " + tagText(tag) + (n.isEmpty() ? "" : ", " + n);
                case "sendRecv" -> "destination " + rank(peer) + ", send tag " + tagText(tag) + ", source " + rank(peer2) + ", receive tag "
                        + tagText(tag2) + (n.isEmpty() ? "" : ", " + n);
                case "split" -> "color " + peer + ", key " + tag;
                default -> CollectiveShape.rooted(op) ? "root " + peer + (n.isEmpty() ? "" : ", " + n) : n;
            };
            return op + "(" + args + ")";
        }

        private static String rank(int r) {
            return r == Communicator.ANY_SOURCE ? "any" : Integer.toString(r);
        }

        private static String tagText(int t) {
            return t == Communicator.ANY_TAG ? "any" : Integer.toString(t);
        }
    }

    // ---- writing -----------------------------------------------------------------------------

    /** This process's dump now, as text. */
    static String render(String job, int rank, int size, String reason, String asked, boolean exiting) {
        long now = System.nanoTime();
        StringBuilder sb = new StringBuilder(8192);
        line(sb, MAGIC, "version", "1");
        line(sb, "rank", "job", job, "world", Integer.toString(rank), "size", Integer.toString(size), "host", host(), "pid",
                Long.toString(ProcessHandle.current().pid()), "at", Long.toString(System.currentTimeMillis()), "reason", reason, "asked", asked, "exiting",
                Boolean.toString(exiting));
        for (OperationRing r : FlightRecorder.rings()) {
            Communicator c = r.communicator();
            if (c == null || c.isClosed()) continue; // closed since: its last operations cannot be what hangs
            line(sb, "comm", "id", r.id(), "origin", r.origin(), "rank", Integer.toString(c.rank()), "size", Integer.toString(c.size()), "backend",
                    c.backend(), "local", c.toString(), "operations", Long.toString(r.operations()), "collectives", Long.toString(r.collectives()));
            for (RingEntry.Snapshot e : r.snapshot()) {
                operation(sb, "op", r.id(), e.seq(), e.collective(), e.op(), e.kind(), e.peer(), e.tag(), e.peer2(), e.tag2(), e.count(),
                        e.type() == null ? "" : e.type().toString(), CurrentCall.memoryText(e.memory(), e.otherMemory()), e.algorithm(),
                        (now - e.start()) / 1e6, e.done(), e.thread(), "");
            }
        }
        for (CurrentCall c : CurrentCall.inProgressEverywhere()) {
            long since = c.since();
            OperationRing ring = c.ring;
            String op = c.op;
            CurrentCall.Kind kind = c.kind;
            Object subject = c.subject;
            long seq = c.seq, collective = c.collective, count = c.count;
            int peer = c.peer, tag = c.tag, peer2 = c.peer2, tag2 = c.tag2;
            String type = c.type == null ? "" : c.type.toString();
            String memory = CurrentCall.memoryText(c.memory, c.otherMemory);
            String algorithm = c.algorithm;
            if (since == 0 || c.since() != since || op == null || kind == null) {
                continue; // the call ended while it was read
            }
            String text = kind != CurrentCall.Kind.WAIT ? "" : op.equals("MPI_Finalize") ? "MPI_Finalize() of " + subject : op + "() of " + subject;
            operation(sb, "call", ring == null ? "" : ring.id(), ring == null ? -1 : seq, ring == null ? -1 : collective, op, kind, peer, tag, peer2,
                    tag2, count, type, memory, algorithm, (now - since) / 1e6, false, c.thread.getName(), text);
        }
        return sb.toString();
    }

    private static void operation(StringBuilder sb, String record, String comm, long seq, long collective, String op, CurrentCall.Kind kind, int peer,
                                  int tag, int peer2, int tag2, long count, String type, String memory, String algorithm, double millis, boolean done,
                                  String thread, String text) {
        line(sb, record, "comm", comm, "seq", Long.toString(seq), "collective", Long.toString(collective), "op", op, "kind", kind.toString(), "peer",
                Integer.toString(peer), "tag", Integer.toString(tag), "peer2", Integer.toString(peer2), "tag2", Integer.toString(tag2), "count",
                Long.toString(count), "type", type, "memory", memory, "algorithm", algorithm == null ? "" : algorithm, "millis",
                String.format(Locale.ROOT, "%.3f", millis), "done", Boolean.toString(done), "thread", thread, "text", text);
    }

    private static void line(StringBuilder sb, String record, String... keyValues) {
        sb.append(record);
        for (int i = 0; i < keyValues.length; i += 2) {
            String v = keyValues[i + 1] == null ? "" : keyValues[i + 1];
            sb.append('\t').append(keyValues[i]).append('=').append(v.replace('\t', ' ').replace('\n', ' ').replace('\r', ' '));
        }
        sb.append('\n');
    }

    private static String host() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
    }

    // ---- reading -----------------------------------------------------------------------------

    /** Parses a dump written by this class; {@link IOException} when the file is not one. */
    public static RankDump read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        if (lines.isEmpty() || !lines.get(0).startsWith(MAGIC)) {
            throw new IOException(file + " is not a Ferry flight-recorder dump (no '" + MAGIC + "' first line)");
        }
        Header header = null;
        List<Comm> comms = new ArrayList<>();
        List<Operation> calls = new ArrayList<>();
        String commId = null, origin = null, backend = null, local = null;
        int commRank = 0, commSize = 0;
        long operations = 0, collectives = 0;
        List<Operation> ops = null;
        for (String l : lines.subList(1, lines.size())) {
            if (l.isBlank()) continue;
            int tab = l.indexOf('\t');
            String record = tab < 0 ? l : l.substring(0, tab);
            Map<String, String> f = fields(l);
            try {
                switch (record) {
                    case "rank" -> header = new Header(f.get("job"), Integer.parseInt(f.get("world")), Integer.parseInt(f.get("size")), f.get("host"),
                            Long.parseLong(f.get("pid")), Long.parseLong(f.get("at")), f.get("reason"), f.get("asked"), Boolean.parseBoolean(f.get("exiting")));
                    case "comm" -> {
                        if (ops != null) comms.add(new Comm(commId, origin, commRank, commSize, backend, local, operations, collectives, ops));
                        commId = f.get("id");
                        origin = f.get("origin");
                        commRank = Integer.parseInt(f.get("rank"));
                        commSize = Integer.parseInt(f.get("size"));
                        backend = f.get("backend");
                        local = f.get("local");
                        operations = Long.parseLong(f.get("operations"));
                        collectives = Long.parseLong(f.get("collectives"));
                        ops = new ArrayList<>();
                    }
                    case "op" -> {
                        if (ops == null) throw new IOException("an op line before any comm line");
                        ops.add(operation(f));
                    }
                    case "call" -> calls.add(operation(f));
                    default -> {
                        // a later version's record: skipped
                    }
                }
            } catch (RuntimeException e) {
                throw new IOException(file + ": cannot read the line '" + l + "': " + e, e);
            }
        }
        if (ops != null) comms.add(new Comm(commId, origin, commRank, commSize, backend, local, operations, collectives, ops));
        if (header == null) {
            throw new IOException(file + " has no 'rank' line");
        }
        return new RankDump(header, List.copyOf(comms), List.copyOf(calls));
    }

    private static Operation operation(Map<String, String> f) {
        String comm = f.get("comm");
        return new Operation(comm == null || comm.isEmpty() ? null : comm, Long.parseLong(f.get("seq")), Long.parseLong(f.get("collective")), f.get("op"),
                f.get("kind"), Integer.parseInt(f.get("peer")), Integer.parseInt(f.get("tag")), Integer.parseInt(f.get("peer2")),
                Integer.parseInt(f.get("tag2")), Long.parseLong(f.get("count")), f.get("type"), f.get("memory"), f.get("algorithm"),
                Double.parseDouble(f.get("millis")), Boolean.parseBoolean(f.get("done")), f.get("thread"), f.getOrDefault("text", ""));
    }

    private static Map<String, String> fields(String line) {
        Map<String, String> m = new LinkedHashMap<>();
        String[] parts = line.split("\t");
        for (int i = 1; i < parts.length; i++) {
            int eq = parts[i].indexOf('=');
            if (eq > 0) m.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
        }
        return m;
    }
}
