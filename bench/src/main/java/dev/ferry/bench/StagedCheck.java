// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.SelectionReport;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaStream;
import dev.ferry.spi.Probe;
import dev.ferry.staged.StagedDiagnostics;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The GPU check of the staged backend, for two ranks: correctness of every path at sizes from
 * 1 byte to 1 GiB (random data, receive buffers poisoned, every byte compared on the host, and
 * the bytes after the message checked untouched), and a bandwidth table measured in the same run
 * (ping-pong, one-way time = half a round trip; median, min and max of several repetitions):
 *
 * <ul>
 * <li>staged: device to device through the pipeline (IPC off);</li>
 * <li>ipc: device to device by CUDA IPC (when the two ranks share a node);</li>
 * <li>naive: one device-to-host copy, one MPI message of pinned memory, one host-to-device copy;</li>
 * <li>host: pinned host to pinned host through the inner MPI backend alone;</li>
 * <li>peer: cuMemcpyPeer from GPU 0 to GPU 1 inside rank 0 (which opens both), when two GPUs are visible.</li>
 * </ul>
 *
 * and the verdicts: from 1 MiB up, the staged pipeline at least 90% of the native C pinned host
 * bandwidth ({@code --native}: ferry-osu's CSV from the same MPI), both as ping-pong (osu_latency's
 * one-way time, the method of the reference figures) and as a window (osu_bw); staged
 * 8-byte latency within twice native pinned latency plus an 8-byte device-to-host and host-to-device
 * copy; IPC at least 80% of cuMemcpyPeer from 256 MiB up. With {@code --native-staged} (the CSV of
 * bench/experiments/staged-pipeline.c) the same pipeline written in C stands next to Ferry's, which
 * separates Java's and the protocol's cost from the platform's. Prints a markdown report and writes it to {@code --out FILE}.
 * Exits 1 when a byte is wrong, 3 when a verdict fails (0 with {@code --no-verdict-exit}), 0
 * with a printed reason when there is no GPU ({@code --cpu}: host memory stands in for device
 * memory, a test of the check itself on a machine without one).
 *
 * <p>It lives in the bench module, out of the backend's jar, and reaches the staged backend's
 * internals only through its measurement hook {@link StagedDiagnostics}; its statistics are
 * {@link Stats}', its CSV files are read by {@link Csv}.
 *
 * <pre>
 * mpirun -np 2 java -cp ... -Dferry.backend=staged dev.ferry.bench.StagedCheck [--out] staged-check.md [--max 1g] [--quick]
 * </pre>
 */
public final class StagedCheck {
    private static final byte POISON = (byte) 0xA5;
    private static final long GUARD = 64;

    private final Communicator world;
    private final int rank;
    private final int peer;
    private final long max;
    private final boolean quick;
    private boolean sweep;
    /** The native C reference's pinned host figures (ferry-osu), when given: GB/s by size, and us by size. */
    private Map<Long, Double> nativeBw = Map.of(), nativeLatency = Map.of();
    private String nativeSource;
    /** The same pipeline in C (bench/experiments/staged-pipeline.c), when given: GB/s by size, ping-pong and window. */
    private Map<Long, Double> cStagedPingPong = Map.of(), cStagedWindow = Map.of();
    private String cStagedSource;
    private final StringBuilder report = new StringBuilder();
    private final List<String> failures = new ArrayList<>();
    private final MemorySpace mem;

    private StagedCheck(Communicator world, long max, boolean quick, MemorySpace mem) {
        this.world = world;
        this.rank = world.rank();
        this.peer = 1 - rank;
        this.max = max;
        this.quick = quick;
        this.mem = mem;
    }

    /** Device memory and copies: CUDA's, or host memory standing in for it ({@code --cpu}, to test the check itself without a GPU). */
    private interface MemorySpace {
        Buffer device(long bytes);

        HostBuffer pinned(long bytes);

        /** Synchronous copy in any direction. */
        void copy(Buffer dst, Buffer src, long bytes);

        void fill(Buffer dst, long bytes, byte value);

        String describe();
    }

    private static final MemorySpace CUDA = new MemorySpace() {
        public Buffer device(long bytes) { return Cuda.allocate(bytes); }
        public HostBuffer pinned(long bytes) { return Cuda.allocatePinned(bytes); }
        public void copy(Buffer dst, Buffer src, long bytes) {
            if (dst instanceof HostBuffer d && src instanceof HostBuffer h) {
                MemorySegment.copy(h.segment(), 0, d.segment(), 0, bytes);
            } else {
                Cuda.copy(dst, src, bytes);
            }
        }
        public void fill(Buffer dst, long bytes, byte value) { Cuda.fill(dst.slice(0, bytes), value); }
        public String describe() { return Cuda.describe(); }
    };

    private static final MemorySpace HOST = new MemorySpace() {
        public Buffer device(long bytes) { return HostBuffer.allocate(bytes); }
        public HostBuffer pinned(long bytes) { return HostBuffer.allocate(bytes); }
        public void copy(Buffer dst, Buffer src, long bytes) {
            MemorySegment.copy(((HostBuffer) src).segment(), 0, ((HostBuffer) dst).segment(), 0, bytes);
        }
        public void fill(Buffer dst, long bytes, byte value) { ((HostBuffer) dst).segment().asSlice(0, bytes).fill(value); }
        public String describe() { return "none: --cpu, host memory stands in for device memory (a test of the check itself, not a measurement)"; }
    };

    public static void main(String[] args) throws IOException {
        String out = null;
        long max = 1L << 30;
        boolean quick = false, verdictExit = true, cpu = false, sweep = false;
        Path nativeCsv = null, cStagedCsv = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = args[++i];
                case "--max" -> max = Suite.parseSize(args[++i]);
                case "--quick" -> quick = true;
                case "--no-verdict-exit" -> verdictExit = false;
                case "--cpu" -> cpu = true;
                case "--sweep" -> sweep = true;
                case "--native" -> nativeCsv = Path.of(args[++i]);
                case "--native-staged" -> cStagedCsv = Path.of(args[++i]);
                default -> {
                    if (args[i].startsWith("-") || out != null) {
                        System.err.println("usage: mpirun -np 2 java ... dev.ferry.bench.StagedCheck [[--out] FILE] [--max BYTES] [--quick] [--sweep] [--native FERRY_OSU.csv] [--native-staged STAGED_PIPELINE.csv] [--no-verdict-exit] [--cpu]");
                        System.exit(2);
                    }
                    out = args[i]; // the report file may also be given alone
                }
            }
        }
        Communicator world = Ferry.open("staged");
        if (world.size() != 2) {
            if (world.rank() == 0) System.err.println("StagedCheck needs exactly 2 ranks, not " + world.size());
            world.close();
            Ferry.shutdown();
            System.exit(2);
        }
        if (!Cuda.isAvailable() && !cpu) {
            if (world.rank() == 0) {
                String msg = "StagedCheck SKIPPED: no GPU here (" + Cuda.unavailabilityCause().getMessage() + ")";
                System.out.println(msg);
                if (out != null) Files.writeString(Path.of(out), msg + "\n");
            }
            world.close();
            Ferry.shutdown();
            return;
        }
        StagedCheck c = new StagedCheck(world, max, quick, Cuda.isAvailable() && !cpu ? CUDA : HOST);
        c.sweep = sweep;
        if (nativeCsv != null) {
            c.nativeBw = readNative(nativeCsv, Question.BANDWIDTH);
            c.nativeLatency = readNative(nativeCsv, Question.LATENCY);
            c.nativeSource = nativeCsv.getFileName().toString();
        }
        if (cStagedCsv != null) {
            CStaged cs = readCStaged(cStagedCsv);
            c.cStagedPingPong = cs.pingPong();
            c.cStagedWindow = cs.window();
            c.cStagedSource = cStagedCsv.getFileName().toString() + " (" + cs.config() + ")";
        }
        int code = c.run();
        if (world.rank() == 0) {
            System.out.println(c.report);
            if (out != null) {
                Files.writeString(Path.of(out), c.report.toString());
                System.out.println("(written to " + out + ")");
            }
        }
        world.close();
        Ferry.shutdown();
        System.exit(code == 3 && !verdictExit ? 0 : code);
    }

    // ---- data ----------------------------------------------------------------------------------

    /** SplitMix64 words of {@code seed}: cheap, reproducible on both ranks. */
    private static void pattern(MemorySegment s, long n, long seed) {
        long words = n / 8;
        long z = seed * 0x9E3779B97F4A7C15L;
        for (long i = 0; i < words; i++) {
            long x = (z += 0x9E3779B97F4A7C15L);
            x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
            x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i * 8, x ^ (x >>> 31));
        }
        for (long i = words * 8; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
    }

    private static long seed(int who, long size, int path) {
        return (who + 1) * 1_000_003L + size * 7 + path * 131;
    }

    private final class Buffers implements AutoCloseable {
        final Buffer send = mem.device(max);
        final Buffer recv = mem.device(max + GUARD);
        final HostBuffer pinnedOut = mem.pinned(max);
        final HostBuffer pinnedIn = mem.pinned(max + GUARD);
        final HostBuffer mine = HostBuffer.allocate(max);
        final HostBuffer expected = HostBuffer.allocate(max);
        final HostBuffer readback = HostBuffer.allocate(max + GUARD);

        @Override
        public void close() {
            for (AutoCloseable c : new AutoCloseable[] {(AutoCloseable) send, (AutoCloseable) recv, pinnedOut, pinnedIn, mine, expected, readback}) {
                try {
                    c.close();
                } catch (Exception e) {
                    // at exit
                }
            }
        }
    }

    /** Prepares a checked transfer of {@code n} bytes: my data into the source, poison into the receiver. */
    private void prepare(Buffers b, long n, int path, Buffer source, Buffer target) {
        pattern(b.mine.segment(), n, seed(rank, n, path));
        pattern(b.expected.segment(), n, seed(peer, n, path));
        mem.copy(source, b.mine, n);
        mem.fill(target, n + GUARD, POISON);
    }

    /** Compares what arrived (and the guard after it) on the host; records a failure; true when every rank saw its data right. */
    private boolean verify(Buffers b, long n, String path, Buffer target) {
        return allAgree(verifyHere(b, n, path, target));
    }

    /** {@link #verify} on this rank only (no collective). */
    private boolean verifyHere(Buffers b, long n, String path, Buffer target) {
        mem.copy(b.readback, target, n + GUARD);
        MemorySegment got = b.readback.segment();
        long bad = got.asSlice(0, n).mismatch(b.expected.segment().asSlice(0, n));
        String what = null;
        if (bad >= 0) {
            what = path + " " + n + " B on rank " + rank + ": first wrong byte at " + bad + " (0x" + Integer.toHexString(got.get(ValueLayout.JAVA_BYTE, bad) & 0xFF)
                    + " instead of 0x" + Integer.toHexString(b.expected.segment().get(ValueLayout.JAVA_BYTE, bad) & 0xFF) + ")";
        } else {
            for (long i = n; i < n + GUARD; i++) {
                if (got.get(ValueLayout.JAVA_BYTE, i) != POISON) {
                    what = path + " " + n + " B on rank " + rank + ": byte " + i + " after the message was overwritten";
                    break;
                }
            }
        }
        boolean ok = what == null;
        if (!ok) {
            failures.add(what);
            System.err.println("StagedCheck: WRONG DATA: " + what);
        }
        return ok;
    }

    private boolean allAgree(boolean mine) {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
            world.allReduce(in, out, 1, DataType.INT, dev.ferry.ReduceOp.MIN);
            return out.segment().get(ValueLayout.JAVA_INT, 0) == 1;
        }
    }

    // ---- measurement ---------------------------------------------------------------------------

    /** One-way times in seconds, from ping-pong round trips. */
    private interface Exchange {
        void send(long n);

        void recv(long n);
    }

    private static int reps(long n, boolean quick) {
        int r = n <= (64 << 10) ? 200 : n <= (8 << 20) ? 40 : n <= (128L << 20) ? 10 : 5;
        return quick ? Math.max(3, r / 5) : r;
    }

    /**
     * Median, min and max one-way seconds, as osu_latency: a barrier, a few warm-up round trips,
     * then {@code reps} round trips back to back, each timed (a ping-pong keeps the two ranks in
     * step by itself; a barrier before every round would time the skew of leaving it too).
     */
    private Stats pingPong(Exchange x, long n, int reps) {
        double[] t = new double[reps];
        world.barrier();
        for (int i = -Math.min(3, reps); i < reps; i++) { // the first rounds warm up
            long t0 = System.nanoTime();
            if (rank == 0) {
                x.send(n);
                x.recv(n);
            } else {
                x.recv(n);
                x.send(n);
            }
            long t1 = System.nanoTime();
            if (i >= 0) t[i] = (t1 - t0) / 2e9;
        }
        return Stats.of(t);
    }

    private record Row(long bytes, Map<String, Stats> times, boolean checked) {
    }

    private static final String[] PATHS = {"staged", "ipc", "naive", "host", "peer"};

    private int run() {
        Buffers b = new Buffers();
        Communicator pipe = world.duplicate();
        StagedDiagnostics.offerIpc(pipe, false);
        Communicator ipcComm = world.duplicate();
        boolean ipc = mem == CUDA && StagedDiagnostics.ipcWith(world, peer);
        String innerName = StagedDiagnostics.innerBackend(world);
        Communicator host = Ferry.open(innerName);
        SelectionReport sel = Ferry.lastReport();

        String[] deviceNames = new String[2];
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer all = HostBuffer.allocate(8)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mem == CUDA ? Cuda.defaultDevice().ordinal() : -1);
            world.allGather(in, all, 1, DataType.INT);
            for (int r = 0; r < 2; r++) {
                int d = all.segment().getAtIndex(ValueLayout.JAVA_INT, r);
                deviceNames[r] = d < 0 ? "host memory (--cpu)" : "GPU " + d + " (" + Cuda.device(Math.min(d, Cuda.deviceCount() - 1)).name() + ")";
            }
        }

        List<Long> sizes = new ArrayList<>();
        for (long n = 8; n <= max; n *= 4) sizes.add(n);
        for (long n : new long[] {1L << 20, 256L << 20, 1L << 30}) if (n <= max && !sizes.contains(n)) sizes.add(n);
        sizes.sort(Long::compare);
        long[] odd = {1, 7, 1_000_003, (4L << 20) + 1, (64L << 20) + 7};

        List<Row> rows = new ArrayList<>();
        double[] smallCopies = smallCopyMicros(b);
        Map<Long, Stats> peerTimes = rank == 0 && mem == CUDA ? peerCopies(sizes) : Map.of();

        // The JIT first: a path's first thousands of calls run interpreted (the first rows of the
        // first run measured that, 55 us for an 8-byte staged message against 20 us once compiled).
        // osu_latency warms up for the same reason, and so does the bench suite.
        Exchange warmStaged = new Exchange() {
            public void send(long m) { pipe.send(b.send, m, DataType.BYTE, peer, 9); }
            public void recv(long m) { pipe.recv(b.recv, m, DataType.BYTE, peer, 9); }
        };
        Exchange warmHost = new Exchange() {
            public void send(long m) { host.send(b.pinnedOut, m, DataType.BYTE, peer, 9); }
            public void recv(long m) { host.recv(b.pinnedIn, m, DataType.BYTE, peer, 9); }
        };
        warmUp(warmStaged, b);
        warmUp(warmHost, b);

        Map<String, Long> countersBefore = StagedDiagnostics.counters(world);
        List<Long> all = new ArrayList<>(sizes);
        for (long n : odd) if (n <= max) all.add(n);
        for (long n : all) {
            boolean timed = sizes.contains(n);
            int reps = timed ? reps(n, quick) : 3;
            Map<String, Stats> times = new LinkedHashMap<>();
            boolean ok = true;
            // staged pipeline, IPC off
            ok &= checkedPingPong(b, n, 0, "staged", b.send, b.recv, reps, times, new Exchange() {
                public void send(long m) { pipe.send(b.send, m, DataType.BYTE, peer, 1); }
                public void recv(long m) { pipe.recv(b.recv, m, DataType.BYTE, peer, 1); }
            });
            if (ipc) {
                ok &= checkedPingPong(b, n, 1, "ipc", b.send, b.recv, reps, times, new Exchange() {
                    public void send(long m) { ipcComm.send(b.send, m, DataType.BYTE, peer, 2); }
                    public void recv(long m) { ipcComm.recv(b.recv, m, DataType.BYTE, peer, 2); }
                });
            }
            ok &= checkedPingPong(b, n, 2, "naive", b.send, b.recv, reps, times, new Exchange() {
                public void send(long m) {
                    mem.copy(b.pinnedOut, b.send, m);
                    host.send(b.pinnedOut, m, DataType.BYTE, peer, 3);
                }

                public void recv(long m) {
                    host.recv(b.pinnedIn, m, DataType.BYTE, peer, 3);
                    mem.copy(b.recv, b.pinnedIn, m);
                }
            });
            ok &= checkedPingPong(b, n, 3, "host", b.pinnedOut, b.pinnedIn, reps, times, new Exchange() {
                public void send(long m) { host.send(b.pinnedOut, m, DataType.BYTE, peer, 4); }
                public void recv(long m) { host.recv(b.pinnedIn, m, DataType.BYTE, peer, 4); }
            });
            if (peerTimes.containsKey(n)) times.put("peer", peerTimes.get(n));
            rows.add(new Row(n, times, ok));
            if (rank == 0) {
                System.err.printf(Locale.ROOT, "StagedCheck: %s %s%n", Suite.formatSize(n), ok ? "ok" : "WRONG");
            }
        }
        Map<String, Long> countersAfter = StagedDiagnostics.counters(world);
        long ipcCopies = countersAfter.get("ipcCopies") - countersBefore.get("ipcCopies");
        long refused = countersAfter.get("ipcRefused") - countersBefore.get("ipcRefused");
        boolean ipcUsed = allAgree(!ipc || (ipcCopies > 0 || rank == 1) && refused == 0);
        if (ipc && !ipcUsed) {
            failures.add("the ipc path fell back to staging (ipc copies " + ipcCopies + ", refused " + refused + " on rank " + rank + ")");
        }

        windowed(b, pipe, host);
        StringBuilder breakdownReport = breakdown(b, pipe);
        StringBuilder sweepReport = sweep ? sweep(b, pipe, host) : null;

        int code = failures.isEmpty() && allAgree(failures.isEmpty()) ? 0 : 1;
        if (rank == 0) {
            code = Math.max(code, write(rows, smallCopies, sel, innerName, deviceNames, ipc, code));
            report.append(breakdownReport);
            if (sweepReport != null) report.append(sweepReport);
        }
        code = broadcastCode(code);
        host.close();
        pipe.close();
        ipcComm.close();
        b.close();
        return code;
    }

    /** Round trips enough for the JIT to compile a path: small messages many times, a few large ones. */
    private void warmUp(Exchange x, Buffers b) {
        int small = quick ? 500 : 3000;
        for (long[] plan : new long[][] {{8, small}, {64 << 10, small / 20}, {Math.min(max, 4L << 20), 10}}) {
            for (int i = 0; i < plan[1]; i++) {
                if (rank == 0) { x.send(plan[0]); x.recv(plan[0]); } else { x.recv(plan[0]); x.send(plan[0]); }
            }
        }
        world.barrier();
    }

    /** Messages in flight in one window, as the bench suite and the C reference (256 MiB on the wire at most, 64 messages at most). */
    static int window(long n) {
        return (int) Math.max(1, Math.min(64, (256L << 20) / n));
    }

    /** Sizes of the windowed bandwidth table. */
    private List<Long> windowSizes() {
        List<Long> out = new ArrayList<>();
        for (long n = 256 << 10; n <= Math.min(max, 256L << 20); n *= 2) out.add(n);
        return out;
    }

    /**
     * Seconds per window (median, min, max) of osu_bw's loop on rank 0: {@code w} non-blocking
     * sends of {@code n} bytes from rank 0, {@code w} non-blocking receives on rank 1, then a
     * one-byte acknowledgement back; the same buffer every time, as osu_bw.
     */
    private Stats window(Communicator c, Buffer src, Buffer dst, HostBuffer ack, long n, int w, int windows) {
        double[] t = new double[windows];
        dev.ferry.Request[] reqs = new dev.ferry.Request[w];
        world.barrier();
        for (int i = -2; i < windows; i++) {
            long t0 = System.nanoTime();
            if (rank == 0) {
                for (int k = 0; k < w; k++) reqs[k] = c.isend(src, n, DataType.BYTE, peer, 20);
                for (dev.ferry.Request r : reqs) r.waitFor();
                c.recv(ack, 1, DataType.BYTE, peer, 21);
            } else {
                for (int k = 0; k < w; k++) reqs[k] = c.irecv(dst, n, DataType.BYTE, peer, 20);
                for (dev.ferry.Request r : reqs) r.waitFor();
                c.send(ack, 1, DataType.BYTE, peer, 21);
            }
            long t1 = System.nanoTime();
            if (i >= 0) t[i] = (t1 - t0) / 1e9;
        }
        return Stats.of(t);
    }

    /** Windowed results by size: staged pipeline and host pinned, GB/s (median, min, max); checked. */
    private record WindowRow(long bytes, int window, Stats staged, Stats host, boolean checked) {
    }

    private final List<WindowRow> windowRows = new ArrayList<>();

    /**
     * Unidirectional bandwidth as osu_bw measures it (a window of non-blocking sends): the staged
     * pipeline (IPC off) device to device, and pinned host to pinned host on the inner backend, at
     * every size from 256 KiB; the last window of each size is checked byte for byte. This is the
     * figure the native C reference reports as bandwidth, so the verdict compares with it.
     */
    private void windowed(Buffers b, Communicator pipe, Communicator host) {
        try (HostBuffer ack = HostBuffer.allocate(8)) {
            for (long n : windowSizes()) {
                int w = window(n);
                int windows = quick ? 3 : n <= (4L << 20) ? 10 : 6;
                Stats st = window(pipe, b.send, b.recv, ack, n, w, windows);
                prepare(b, n, 30, b.send, b.recv); // the checked window: fresh data, poisoned target
                window(pipe, b.send, b.recv, ack, n, w, 1);
                boolean ok = allAgree(rank == 0 || verifyHere(b, n, "staged window", b.recv));
                Stats ho = window(host, b.pinnedOut, b.pinnedIn, ack, n, w, windows);
                windowRows.add(new WindowRow(n, w, gb(n * w, st), gb(n * w, ho), ok));
                if (rank == 0) {
                    System.err.printf(Locale.ROOT, "StagedCheck: window %s x %d: staged %.2f GB/s, host %.2f GB/s%n", Suite.formatSize(n), w,
                            n * w / st.median() / 1e9, n * w / ho.median() / 1e9);
                }
            }
        }
    }

    /** GB/s of {@code bytes} moved in each of the times {@code t} (seconds). */
    private static Stats gb(long bytes, Stats t) {
        return t.mapDecreasing(sec -> bytes / sec / 1e9);
    }

    /**
     * The native C reference's pinned results (ferry-osu CSV, {@code --native FILE}) of {@code question}
     * by size: GB/s for {@link Question#BANDWIDTH}, one-way microseconds for {@link Question#LATENCY}
     * (medians).
     */
    static Map<Long, Double> readNative(Path csv, Question question) throws IOException {
        Map<Long, Double> out = new LinkedHashMap<>();
        for (Measurement m : Measurement.readNative(csv, "")) {
            if (m.question() == question && m.memory() == Memory.PINNED) {
                out.put(m.size(), m.shown().median());
            }
        }
        return out;
    }

    /** The C pipeline's figures: its first staged config, and GB/s by size of its ping-pong and window. */
    record CStaged(String config, Map<Long, Double> pingPong, Map<Long, Double> window) {
    }

    /**
     * The C pipeline's figures ({@code --native-staged FILE}, the CSV of bench/experiments/staged-pipeline.c)
     * for the file's first staged config; rows whose check failed are left out.
     */
    static CStaged readCStaged(Path csv) throws IOException {
        List<Csv.Row> rows = Csv.read(csv).stream().filter(r -> r.get("mem").equals("staged")).toList();
        String config = rows.isEmpty() ? "none" : rows.get(0).get("config");
        Map<Long, Double> pingPong = new LinkedHashMap<>(), window = new LinkedHashMap<>();
        for (Csv.Row r : rows) {
            String bench = r.get("bench");
            Map<Long, Double> into = bench.equals("window") ? window : bench.equals("pingpong") ? pingPong : null;
            if (into == null || !r.get("config").equals(config) || !r.get("check").equals("ok")) continue;
            into.put(r.getLong("size"), r.getDouble("median_GBps"));
        }
        return new CStaged(config, pingPong, window);
    }

    /** A tuning of the sweep ({@link StagedDiagnostics#tune}): how the sender cuts a message. */
    private record Tuning(long chunk, long minChunk, long threshold, int depth) {
        void apply(Communicator c) {
            StagedDiagnostics.tune(c, chunk, minChunk, threshold, depth);
        }

        @Override
        public String toString() {
            return "chunk " + Suite.formatSize(chunk) + (minChunk < chunk ? " (adaptive from " + Suite.formatSize(minChunk) + ")" : " (fixed)")
                    + ", threshold " + Suite.formatSize(threshold) + ", depth " + depth;
        }
    }

    /**
     * The staged pipeline under several tunings (chunk sizes, threshold, depth) at sizes around the
     * chunk sizes, every transfer checked, to choose the defaults from one run. Tunings whose chunk
     * exceeds the staging buffers ({@code ferry.staged.chunk}) are left out: run with
     * {@code -Dferry.staged.chunk=8m} to sweep up to 8 MiB chunks.
     */
    private StringBuilder sweep(Buffers b, Communicator pipe, Communicator host) {
        long kib = 1024, mib = kib * kib;
        long cap = StagedDiagnostics.stagingBufferBytes(pipe);
        List<Tuning> tunings = new ArrayList<>();
        for (Tuning t : new Tuning[] {
                new Tuning(4 * mib, 4 * mib, mib, 4),          // fixed 4 MiB chunks, 1 MiB threshold
                new Tuning(4 * mib, mib, mib, 4),              // adaptive from 1 MiB (the default)
                new Tuning(4 * mib, 256 * kib, mib, 4),        // adaptive from 256 KiB (the first default)
                new Tuning(4 * mib, 256 * kib, 256 * kib, 4),
                new Tuning(2 * mib, 128 * kib, 256 * kib, 4),
                new Tuning(8 * mib, 512 * kib, mib, 4),
                new Tuning(4 * mib, 256 * kib, 256 * kib, 2),
                new Tuning(4 * mib, 256 * kib, 256 * kib, 8),
                new Tuning(mib, mib, 256 * kib, 4)}) {    // fixed 1 MiB chunks
            if (t.chunk() <= cap && !tunings.contains(t)) tunings.add(t);
        }
        List<Long> sizes = new ArrayList<>();
        for (long n : new long[] {256 * kib, mib, 2 * mib, 4 * mib, 16 * mib, 64 * mib, 256 * mib}) if (n <= max) sizes.add(n);
        StringBuilder r = new StringBuilder("\n## Sweep: staged pipeline by tuning (one-way GB/s, median; IPC off)\n\n");
        r.append("| bytes | host pinned |");
        for (int i = 0; i < tunings.size(); i++) r.append(" T").append(i + 1).append(" |");
        r.append("\n|---:|---:|");
        for (int i = 0; i < tunings.size(); i++) r.append("---:|");
        r.append('\n');
        for (long n : sizes) {
            int reps = Math.max(3, reps(n, quick) / 2);
            Map<String, Stats> t = new LinkedHashMap<>();
            checkedPingPong(b, n, 3, "host", b.pinnedOut, b.pinnedIn, reps, t, new Exchange() {
                public void send(long m) { host.send(b.pinnedOut, m, DataType.BYTE, peer, 5); }
                public void recv(long m) { host.recv(b.pinnedIn, m, DataType.BYTE, peer, 5); }
            });
            double hostT = t.get("host").median();
            r.append("| ").append(n).append(" | ").append(String.format(Locale.ROOT, "%.2f", n / hostT / 1e9)).append(" |");
            for (int i = 0; i < tunings.size(); i++) {
                tunings.get(i).apply(pipe);
                String name = "sweep T" + (i + 1);
                boolean ok = checkedPingPong(b, n, 10 + i, name, b.send, b.recv, reps, t, new Exchange() {
                    public void send(long m) { pipe.send(b.send, m, DataType.BYTE, peer, 6); }
                    public void recv(long m) { pipe.recv(b.recv, m, DataType.BYTE, peer, 6); }
                });
                double x = t.get(name).median();
                r.append(String.format(Locale.ROOT, " %.2f (%.0f%%)%s |", n / x / 1e9, 100 * hostT / x, ok ? "" : " **WRONG**"));
            }
            r.append('\n');
            if (rank == 0) System.err.printf(Locale.ROOT, "StagedCheck: sweep %s done%n", Suite.formatSize(n));
        }
        StagedDiagnostics.resetTuning(pipe);
        r.append('\n');
        for (int i = 0; i < tunings.size(); i++) r.append("- T").append(i + 1).append(": ").append(tunings.get(i)).append('\n');
        r.append("- percentages: of the host pinned bandwidth in the same row\n");
        return r;
    }

    /**
     * Where the time of the staged pipeline goes (IPC off), for an 8-byte and a 4 MiB message: a
     * ping-pong with every native call timed ({@link StagedDiagnostics#timeNativeCalls}), per rank and per round trip (one send
     * and one receive on each rank): time inside cuCtxSynchronize, the device-to-host and
     * host-to-device copy calls (a synchronous cuMemcpy includes its transfer; an asynchronous one
     * only its issue), event record/query/synchronize, MPI posts and tests (tests include the
     * waiting for data), the staging pool, and the rest (protocol, bookkeeping, the polling loop),
     * with the number of calls of each kind per round trip.
     */
    private StringBuilder breakdown(Buffers b, Communicator pipe) {
        StringBuilder mine = new StringBuilder();
        for (long n : new long[] {8, 4L << 20}) {
            if (n > max) continue;
            int reps = n <= 8 ? (quick ? 100 : 1000) : (quick ? 10 : 50);
            Exchange x = new Exchange() {
                public void send(long m) { pipe.send(b.send, m, DataType.BYTE, peer, 7); }
                public void recv(long m) { pipe.recv(b.recv, m, DataType.BYTE, peer, 7); }
            };
            for (int i = 0; i < 5; i++) { // warm up: pools, streams, events
                if (rank == 0) { x.send(n); x.recv(n); } else { x.recv(n); x.send(n); }
            }
            world.barrier();
            mine.append(timedRow(pipe, Long.toString(n), reps, () -> {
                for (int i = 0; i < reps; i++) {
                    if (rank == 0) { x.send(n); x.recv(n); } else { x.recv(n); x.send(n); }
                }
            }));
        }
        // and one osu_bw window of 64 x 1 MiB (the row's "round trip" is then one whole window)
        if ((1L << 20) <= max) {
            long n = 1L << 20;
            int windows = quick ? 3 : 8;
            try (HostBuffer ack = HostBuffer.allocate(8)) {
                window(pipe, b.send, b.recv, ack, n, window(n), 2);
                // window() adds two warm-up windows of its own: they are timed too
                mine.append(timedRow(pipe, n + " x " + window(n) + " (window)", windows + 2,
                        () -> window(pipe, b.send, b.recv, ack, n, window(n), windows)));
            }
        }
        // rank 1's rows travel to rank 0 as text
        String text = mine.toString();
        String other = "";
        try (HostBuffer t = HostBuffer.allocate(8192)) {
            if (rank == 1) {
                byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                int len = Math.min(bytes.length, 8188);
                t.segment().set(ValueLayout.JAVA_INT, 0, len);
                MemorySegment.copy(MemorySegment.ofArray(bytes), 0, t.segment(), 4, len);
                world.send(t, 8192, DataType.BYTE, 0, 8);
            } else {
                world.recv(t, 8192, DataType.BYTE, 1, 8);
                int len = t.segment().get(ValueLayout.JAVA_INT, 0);
                byte[] bytes = new byte[len];
                MemorySegment.copy(t.segment(), 4, MemorySegment.ofArray(bytes), 0, len);
                other = new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
            }
        }
        StringBuilder r = new StringBuilder("\n## Where the staged time goes (pipeline, IPC off; per round trip = one send + one receive on the rank)\n\n");
        r.append("| rank | bytes | one-way us | round trip us | ctx sync | D2H copy | H2D copy | events (record/query/sync) | MPI post | MPI test/wait | pool | other (protocol, loop) | of it idle polls | calls per round trip |\n");
        r.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n");
        if (rank == 0) {
            r.append(text.replace("| R |", "| 0 |")).append(other.replace("| R |", "| 1 |"));
        }
        r.append("\n- times in us per round trip, summed over the calls of that kind (timing adds two System.nanoTime() per call);"
                + " a synchronous cuMemcpy counts its whole transfer, an asynchronous one only its issue; MPI test time includes waiting for the peer's data;"
                + " the window row: per window of osu_bw (64 non-blocking 1 MiB sends on rank 0, receives on rank 1, and the acknowledgement; its one-way column is half a window)\n");
        return r;
    }

    /** Runs {@code rounds} (that many round trips) with every native call timed; its breakdown row, then a barrier. */
    private String timedRow(Communicator pipe, String label, int reps, Runnable rounds) {
        long[] wall = new long[1];
        Map<String, StagedDiagnostics.NativeCalls> d = StagedDiagnostics.timeNativeCalls(pipe, () -> {
            long t0 = System.nanoTime();
            rounds.run();
            wall[0] = System.nanoTime() - t0;
        });
        world.barrier();
        return phaseRow(label, reps, wall[0], d);
    }

    /** The breakdown's columns: kinds of native calls summed into each. */
    private static final String[][] PHASES = {
            {"CTX_SYNC"},
            {"D2H_ASYNC", "D2H_SYNC"},
            {"H2D_ASYNC", "H2D_SYNC"},
            {"EVENT_RECORD", "EVENT_QUERY", "EVENT_SYNC", "EVENT_CREATE", "STREAM_CREATE"},
            {"MPI_POST"},
            {"MPI_TEST"},
            {"POOL"}};

    private static String phaseRow(String label, int reps, long wallNanos, Map<String, StagedDiagnostics.NativeCalls> d) {
        double per = reps;
        double wall = wallNanos / 1e3 / per;
        StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| R | %s | %.1f | %.1f |", label, wall / 2, wall));
        double sum = 0;
        for (String[] g : PHASES) {
            double us = 0;
            for (String k : g) us += d.get(k).nanos() / 1e3 / per;
            sum += us;
            row.append(String.format(Locale.ROOT, " %.1f |", us));
        }
        row.append(String.format(Locale.ROOT, " %.1f | %.1f |", wall - sum, d.get("IDLE").nanos() / 1e3 / per));
        StringBuilder counts = new StringBuilder();
        for (StagedDiagnostics.NativeCalls e : d.values()) {
            if (e.count() == 0) continue;
            if (counts.length() > 0) counts.append(", ");
            counts.append(e.label()).append(' ').append(String.format(Locale.ROOT, "%.1f", e.count() / per));
        }
        row.append(' ').append(counts).append(" |\n");
        return row.toString();
    }

    private int broadcastCode(int code) {
        try (HostBuffer c = HostBuffer.allocate(4)) {
            c.segment().set(ValueLayout.JAVA_INT, 0, code);
            world.broadcast(c, 1, DataType.INT, 0);
            return c.segment().get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** A ping-pong checked on its first and last round: poisoned receive buffers, every byte compared. */
    private boolean checkedPingPong(Buffers b, long n, int path, String name, Buffer source, Buffer target, int reps,
                                    Map<String, Stats> times, Exchange x) {
        prepare(b, n, path, source, target);
        if (rank == 0) {
            x.send(n);
            x.recv(n);
        } else {
            x.recv(n);
            x.send(n);
        }
        boolean ok = verify(b, n, name + " (first)", target);
        mem.fill(target, n + GUARD, POISON);
        Stats t = pingPong(x, n, reps);
        ok &= verify(b, n, name + " (after timing)", target);
        times.put(name, t);
        return ok;
    }

    /** Median microseconds of an 8-byte device-to-host and host-to-device copy (cuMemcpy, pinned). */
    private double[] smallCopyMicros(Buffers b) {
        int n = 2000;
        double[] d2h = new double[n], h2d = new double[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            mem.copy(b.pinnedOut, b.send, 8);
            long t1 = System.nanoTime();
            mem.copy(b.recv, b.pinnedIn, 8);
            long t2 = System.nanoTime();
            d2h[i] = (t1 - t0) / 1e3;
            h2d[i] = (t2 - t1) / 1e3;
        }
        return new double[] {Stats.of(d2h).median(), Stats.of(h2d).median()};
    }

    /** cuMemcpyPeer GPU 0 -> GPU 1 inside this process, one-way seconds by size (rank 0, two GPUs). */
    private Map<Long, Stats> peerCopies(List<Long> sizes) {
        Map<Long, Stats> out = new LinkedHashMap<>();
        if (Cuda.deviceCount() < 2) {
            return out;
        }
        boolean peerOn = Cuda.enablePeerAccess(0, 1) & Cuda.enablePeerAccess(1, 0);
        try (DeviceBuffer src = Cuda.allocate(0, max); DeviceBuffer dst = Cuda.allocate(1, max); CudaStream s = Cuda.newStream(0);
             HostBuffer h = HostBuffer.allocate(Math.min(max, 64L << 20)); HostBuffer back = HostBuffer.allocate(Math.min(max, 64L << 20))) {
            pattern(h.segment(), h.byteSize(), 99);
            Cuda.copy(src, h, h.byteSize());
            for (long n : sizes) {
                int reps = reps(n, quick);
                double[] t = new double[reps];
                for (int i = -2; i < reps; i++) {
                    long t0 = System.nanoTime();
                    Cuda.copyPeerAsync(dst.address(), 1, src.address(), 0, n, s);
                    s.synchronize();
                    long t1 = System.nanoTime();
                    if (i >= 0) t[i] = (t1 - t0) / 1e9;
                }
                long k = Math.min(n, h.byteSize());
                Cuda.copy(back, dst, k);
                if (back.segment().asSlice(0, k).mismatch(h.segment().asSlice(0, k)) >= 0) {
                    failures.add("cuMemcpyPeer " + n + " B copied wrong bytes");
                }
                out.put(n, Stats.of(t));
            }
        }
        if (!peerOn) {
            report.append("(cuMemcpyPeer ran without peer access: GPU 0 and 1 cannot access each other)\n");
        }
        return out;
    }

    // ---- report --------------------------------------------------------------------------------

    private static String gbps(long n, Stats t) {
        if (t == null) return "n/a";
        return String.format(Locale.ROOT, "%.2f (%.2f–%.2f)", n / t.median() / 1e9, n / t.max() / 1e9, n / t.min() / 1e9);
    }

    private int write(List<Row> rows, double[] smallCopies, SelectionReport sel, String inner, String[] devices, boolean ipc,
                      int code) {
        Probe innerProbe = sel == null ? null : sel.probe(inner);
        StringBuilder r = report;
        r.append("# Ferry staged check\n\n");
        r.append("- ranks: 2, rank 0 on ").append(devices[0]).append(", rank 1 on ").append(devices[1]).append('\n');
        r.append("- inner backend: ").append(inner).append(innerProbe == null ? "" : " (" + innerProbe.reason() + ")").append('\n');
        r.append("- settings: ").append(StagedDiagnostics.describeSettings(world)).append(", ipc ").append(ipc ? "on between the two ranks" : "not available between the two ranks").append('\n');
        r.append("- CUDA: ").append(mem.describe()).append('\n');
        r.append("- peer access: ").append(mem == CUDA ? StagedDiagnostics.peerAccess() : "n/a").append('\n');
        r.append("- one-way GB/s (1e9 bytes/s) from ping-pong: median (min–max); peer = cuMemcpyPeer GPU 0 -> GPU 1 in one process\n\n");
        r.append("- native C pinned: ferry-osu `latency` (osu_latency) at each size, ").append(nativeLatency.isEmpty() ? "not given" : nativeSource)
                .append("; C staged: the same pipeline in C, ").append(cStagedSource == null ? "not given" : cStagedSource).append("\n\n");
        r.append("| bytes | staged | ipc | naive staging | host pinned (").append(inner).append(") | native C pinned | C staged | cuMemcpyPeer | staged/host | staged/C pinned | staged/C staged | ipc/peer | bytes checked |\n");
        r.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n");
        int verdict = 0;
        List<String> verdicts = new ArrayList<>();
        double worstStaged = Double.MAX_VALUE, worstIpc = Double.MAX_VALUE, worstVsC = Double.MAX_VALUE, worstVsCStaged = Double.MAX_VALUE;
        long worstVsCAt = 0;
        for (Row row : rows) {
            Map<String, Stats> t = row.times();
            Stats st = t.get("staged"), ho = t.get("host"), ip = t.get("ipc"), pe = t.get("peer");
            Double cUs = nativeLatency.get(row.bytes()), cSt = cStagedPingPong.get(row.bytes());
            double cGb = cUs == null ? Double.NaN : row.bytes() / (cUs * 1e-6) / 1e9, stGb = st == null ? Double.NaN : row.bytes() / st.median() / 1e9;
            String sh = st != null && ho != null ? String.format(Locale.ROOT, "%.0f%%", 100 * ho.median() / st.median()) : "";
            String ipe = ip != null && pe != null ? String.format(Locale.ROOT, "%.0f%%", 100 * pe.median() / ip.median()) : "";
            r.append("| ").append(row.bytes()).append(" | ").append(gbps(row.bytes(), st)).append(" | ").append(gbps(row.bytes(), ip))
                    .append(" | ").append(gbps(row.bytes(), t.get("naive"))).append(" | ").append(gbps(row.bytes(), ho))
                    .append(" | ").append(cUs == null ? "" : String.format(Locale.ROOT, "%.2f", cGb))
                    .append(" | ").append(cSt == null ? "" : String.format(Locale.ROOT, "%.2f", cSt))
                    .append(" | ").append(gbps(row.bytes(), pe)).append(" | ").append(sh)
                    .append(" | ").append(cUs == null || st == null ? "" : String.format(Locale.ROOT, "%.0f%%", 100 * stGb / cGb))
                    .append(" | ").append(cSt == null || st == null ? "" : String.format(Locale.ROOT, "%.0f%%", 100 * stGb / cSt))
                    .append(" | ").append(ipe).append(" | ").append(row.checked() ? "ok" : "**WRONG**").append(" |\n");
            if (row.bytes() >= (1 << 20) && st != null && ho != null && Long.bitCount(row.bytes()) == 1) {
                worstStaged = Math.min(worstStaged, ho.median() / st.median());
                if (cUs != null && stGb / cGb < worstVsC) {
                    worstVsC = stGb / cGb;
                    worstVsCAt = row.bytes();
                }
                if (cSt != null) worstVsCStaged = Math.min(worstVsCStaged, stGb / cSt);
            }
            if (row.bytes() >= (256L << 20) && ip != null && pe != null) {
                worstIpc = Math.min(worstIpc, pe.median() / ip.median());
            }
        }
        r.append("\n## Latency (8 B, one-way median)\n\n");
        Row eight = rows.stream().filter(x -> x.bytes() == 8).findFirst().orElse(null);
        if (eight != null) {
            double st = eight.times().get("staged").median() * 1e6, ho = eight.times().get("host").median() * 1e6;
            Double c = nativeLatency.get(8L);
            double base = c != null ? c : ho;
            String baseName = c != null ? "native C pinned" : "host pinned";
            double limit = 2 * (base + smallCopies[0] + smallCopies[1]);
            r.append(String.format(Locale.ROOT, "- staged %.1f us, host pinned (Java, %s) %.1f us, %s, 8 B copies: D2H %.1f us + H2D %.1f us%n", st, inner, ho,
                    c == null ? "no native C figure" : String.format(Locale.ROOT, "native C pinned %.1f us (%s)", c, nativeSource), smallCopies[0], smallCopies[1]));
            r.append("- ping-pong as osu_latency: after a JIT warm-up of every path, round trips back to back, each timed\n");
            boolean pass = st <= limit;
            verdicts.add(String.format(Locale.ROOT, "%s staged 8 B latency %.1f us <= 2 x (%s %.1f + copies %.1f) = %.1f us",
                    pass ? "PASS" : "FAIL", st, baseName, base, smallCopies[0] + smallCopies[1], limit));
            if (!pass) verdict = 3;
        }
        if (!windowRows.isEmpty()) {
            r.append("\n## Bandwidth (window of non-blocking sends, as osu_bw; GB/s, median (min–max))\n\n");
            r.append("| bytes | window | staged pipeline (device, IPC off) | host pinned (Java, ").append(inner).append(") | native C pinned | C staged | staged / C | staged / C staged | staged / host | bytes checked |\n");
            r.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n");
            double worst = Double.MAX_VALUE;
            long worstAt = 0;
            String against = nativeBw.isEmpty() ? "host pinned (Java)" : "native C pinned";
            for (WindowRow w : windowRows) {
                Double c = nativeBw.get(w.bytes()), cs = cStagedWindow.get(w.bytes());
                double ref = nativeBw.isEmpty() ? w.host().median() : c == null ? Double.NaN : c;
                r.append(String.format(Locale.ROOT, "| %d | %d | %.2f (%.2f–%.2f) | %.2f (%.2f–%.2f) | %s | %s | %s | %s | %.0f%% | %s |%n", w.bytes(), w.window(),
                        w.staged().median(), w.staged().min(), w.staged().max(), w.host().median(), w.host().min(), w.host().max(),
                        c == null ? "n/a" : String.format(Locale.ROOT, "%.2f", c),
                        cs == null ? "n/a" : String.format(Locale.ROOT, "%.2f", cs),
                        c == null ? "" : String.format(Locale.ROOT, "%.0f%%", 100 * w.staged().median() / c),
                        cs == null ? "" : String.format(Locale.ROOT, "%.0f%%", 100 * w.staged().median() / cs),
                        100 * w.staged().median() / w.host().median(), w.checked() ? "ok" : "**WRONG**"));
                if (w.bytes() >= (1 << 20) && !Double.isNaN(ref) && w.staged().median() / ref < worst) {
                    worst = w.staged().median() / ref;
                    worstAt = w.bytes();
                }
            }
            if (!nativeBw.isEmpty()) r.append("\n- native C: ").append(nativeSource).append(" (ferry-osu `bw`, pinned host buffers, same window and sizes, same MPI, same job script)\n");
            if (cStagedSource != null) r.append("- C staged: ").append(cStagedSource).append(", the same window through the same kind of pipeline in C, no protocol\n");
            if (worst != Double.MAX_VALUE) {
                boolean pass = worst >= 0.9;
                verdicts.add(String.format(Locale.ROOT, "%s staged pipeline >= 90%% of %s bandwidth (osu_bw window) from 1 MiB up (worst %.0f%% at %s)",
                        pass ? "PASS" : "FAIL", against, 100 * worst, Suite.formatSize(worstAt)));
                if (!pass) verdict = 3;
            }
        }
        if (worstVsC != Double.MAX_VALUE) {
            // the reference figures (11 GB/s at 4-16 MiB, 5.8 GB/s at 256 MiB) are ping-pong ones; a single
            // message's ping-pong pays the pipeline's fill and drain (first copy out, last copy in) every time
            boolean pass = worstVsC >= 0.9;
            verdicts.add(String.format(Locale.ROOT, "%s staged ping-pong >= 90%% of native C pinned ping-pong (osu_latency's one-way time) from 1 MiB up (worst %.0f%% at %s)",
                    pass ? "PASS" : "FAIL", 100 * worstVsC, Suite.formatSize(worstVsCAt)));
            if (!pass) verdict = 3;
        } else if (worstStaged != Double.MAX_VALUE) {
            verdicts.add(String.format(Locale.ROOT, "(info) staged ping-pong one-way bandwidth from 1 MiB up: worst %.0f%% of host pinned ping-pong (Java)", 100 * worstStaged));
        }
        double worstWindowVsCStaged = Double.MAX_VALUE;
        for (WindowRow w : windowRows) {
            Double c = cStagedWindow.get(w.bytes());
            if (w.bytes() >= (1 << 20) && c != null) worstWindowVsCStaged = Math.min(worstWindowVsCStaged, w.staged().median() / c);
        }
        if (worstVsCStaged != Double.MAX_VALUE || worstWindowVsCStaged != Double.MAX_VALUE) {
            verdicts.add(String.format(Locale.ROOT, "(info) Java's overhead: staged against the same pipeline in C, from 1 MiB up: worst %s in ping-pong, %s in the window",
                    worstVsCStaged == Double.MAX_VALUE ? "n/a" : String.format(Locale.ROOT, "%.0f%%", 100 * worstVsCStaged),
                    worstWindowVsCStaged == Double.MAX_VALUE ? "n/a" : String.format(Locale.ROOT, "%.0f%%", 100 * worstWindowVsCStaged)));
        }
        if (worstIpc != Double.MAX_VALUE) {
            boolean pass = worstIpc >= 0.8;
            verdicts.add(String.format(Locale.ROOT, "%s ipc >= 80%% of cuMemcpyPeer from 256 MiB up (worst %.0f%%)", pass ? "PASS" : "FAIL", 100 * worstIpc));
            if (!pass) verdict = 3;
        } else {
            verdicts.add("n/a ipc vs cuMemcpyPeer (" + (ipc ? "no cuMemcpyPeer figure: fewer than two GPUs visible, or sizes below 256 MiB" : "no IPC between the ranks") + ")");
        }
        r.append("\n## Verdicts\n\n");
        for (String v : verdicts) r.append("- ").append(v).append('\n');
        r.append("- ").append(failures.isEmpty() && code == 0 ? "PASS every byte of every path and size was right" : "FAIL wrong data: " + failures).append('\n');
        r.append("\nstaged counters on rank 0: ").append(StagedDiagnostics.describeCounters(world)).append('\n');
        return verdict;
    }
}
