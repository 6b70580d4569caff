// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Latency and bandwidth of the chosen backend: rank 0 sends a message to rank 1, which sends it
 * back; the one-way time is half the median round trip. Sizes 8 B, 64 KiB, 4 MiB and 64 MiB by
 * default, with host buffers and, where the backend carries them, device buffers. The echoed
 * bytes are checked after each size. Ranks above 1 wait.
 *
 * <p>Run: {@code mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.PingPong [--sizes 8,1M,256M] [--reps 1000]}
 */
public final class PingPong {
    /** Name in result lines. */
    public static final String NAME = "ping-pong";

    private static final int TAG = 401;

    private PingPong() {
    }

    /** Runs this example alone: {@code mpirun -np N java ... dev.ferry.examples.PingPong [options]}; exit 1 when its check fails. */
    public static void main(String[] args) {
        Examples.main(args, PingPong::run);
    }

    /**
     * One measured size.
     *
     * @param memory      "host" or "device"
     * @param bytes       message size
     * @param roundTrips  round trips timed (after a few untimed ones)
     * @param medianNanos median round-trip time
     */
    public record Measurement(String memory, long bytes, int roundTrips, long medianNanos) {
        /** One-way time in microseconds. */
        public double latencyMicros() {
            return medianNanos / 2e3;
        }

        /** One-way bandwidth in bytes per second. */
        public double bytesPerSecond() {
            return bytes / (medianNanos / 2e9);
        }
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options options) {
        if (comm.size() < 2) {
            return Outcome.skip(NAME, "needs 2 ranks").agree(comm);
        }
        Mode mode = Mode.agree(comm, options.mode());
        long[] sizes = options.sizes();
        long max = Arrays.stream(sizes).max().orElseThrow();
        List<Measurement> results = new ArrayList<>();
        String problem = null;
        List<String> memories = mode == Mode.DEVICE ? List.of("host", "device") : List.of("host");
        if (comm.rank() <= 1) {
            for (String memory : memories) {
                try (Pair p = Pair.allocate(memory, comm.rank(), max)) {
                    for (long size : sizes) {
                        Measurement m = measure(comm, p, size, repsFor(size, options.reps()));
                        if (comm.rank() == 0) {
                            results.add(m);
                            if (problem == null) {
                                problem = p.checkEcho(size);
                            }
                        }
                    }
                }
            }
        }
        Outcome outcome = Outcome.ok(NAME, "");
        if (comm.rank() == 0) {
            System.out.print(table(comm.backend(), results));
            String device = switch (mode) {
                case DEVICE -> "";
                case GPU -> "; device buffers not carried by " + comm.backend();
                case HOST -> "; no device buffers (no GPU)";
            };
            String what = comm.backend() + ", " + summary(results) + device;
            outcome = problem != null ? Outcome.fail(NAME, what + ": " + problem) : Outcome.ok(NAME, what + "; echoed data checked");
        }
        return outcome.agree(comm);
    }

    /** Round trips for one size: {@code reps} up to 64 KiB, fewer for larger messages. */
    static int repsFor(long bytes, int reps) {
        if (bytes <= 64L << 10) {
            return reps;
        }
        if (bytes <= 4L << 20) {
            return Math.max(5, reps / 10);
        }
        return Math.max(3, reps / 40);
    }

    private static Measurement measure(Communicator comm, Pair p, long size, int reps) {
        int warmup = Math.max(1, reps / 10);
        long[] times = new long[reps];
        if (comm.rank() == 0) {
            p.clearReceived(size);
        }
        int other = 1 - comm.rank();
        try (HostBuffer out = HostBuffer.allocate(1); HostBuffer in = HostBuffer.allocate(1)) {
            comm.sendRecv(out, 1, DataType.BYTE, other, TAG, in, 1, DataType.BYTE, other, TAG); // both ranks are here: start
        }
        for (int i = -warmup; i < reps; i++) {
            if (comm.rank() == 0) {
                long t0 = System.nanoTime();
                comm.send(p.send, size, DataType.BYTE, 1, TAG);
                comm.recv(p.receive, size, DataType.BYTE, 1, TAG);
                long t = System.nanoTime() - t0;
                if (i >= 0) {
                    times[i] = t;
                }
            } else {
                comm.recv(p.receive, size, DataType.BYTE, 0, TAG);
                comm.send(p.receive, size, DataType.BYTE, 0, TAG);
            }
        }
        Arrays.sort(times);
        return new Measurement(p.memory, size, reps, times[reps / 2]);
    }

    /** The send and receive buffers of one rank; rank 0's send buffer holds a known pattern. */
    private static final class Pair implements AutoCloseable {
        final String memory;
        final Buffer send;
        final Buffer receive;
        final HostBuffer pattern;

        private Pair(String memory, Buffer send, Buffer receive, HostBuffer pattern) {
            this.memory = memory;
            this.send = send;
            this.receive = receive;
            this.pattern = pattern;
        }

        /** Rank 0 sends from a patterned buffer; rank 1 echoes from its receive buffer. */
        static Pair allocate(String memory, int rank, long bytes) {
            HostBuffer pattern = HostBuffer.allocate(rank == 0 ? bytes : 0);
            fill(pattern.segment());
            if (memory.equals("host")) {
                return new Pair(memory, pattern, HostBuffer.allocate(bytes), pattern);
            }
            DeviceBuffer send = Cuda.allocate(rank == 0 ? bytes : 0);
            if (rank == 0) {
                Cuda.copy(send, pattern, bytes);
            }
            return new Pair(memory, send, Cuda.allocate(bytes), pattern);
        }

        void clearReceived(long size) {
            if (receive instanceof HostBuffer h) {
                h.segment().asSlice(0, size).fill((byte) 0);
            } else {
                Cuda.fill(receive.slice(0, size), (byte) 0);
            }
        }

        /** Null when the first {@code size} received bytes equal the pattern, else what differs. */
        String checkEcho(long size) {
            MemorySegment got;
            HostBuffer copy = null;
            if (receive instanceof HostBuffer h) {
                got = h.segment();
            } else {
                copy = HostBuffer.allocate(size);
                Cuda.copy(copy, receive, size);
                got = copy.segment();
            }
            try {
                long at = MemorySegment.mismatch(got, 0, size, pattern.segment(), 0, size);
                return at < 0 ? null : memory + " message of " + Fmt.bytes(size) + " came back wrong at byte " + at;
            } finally {
                if (copy != null) {
                    copy.close();
                }
            }
        }

        private static void fill(MemorySegment s) {
            long chunk = Math.min(s.byteSize(), 1 << 16);
            for (long i = 0; i < chunk; i++) {
                s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7 + (i >> 8)));
            }
            for (long at = chunk; at < s.byteSize(); at += chunk) {
                long n = Math.min(chunk, s.byteSize() - at);
                MemorySegment.copy(s, 0, s, at, n);
                s.set(ValueLayout.JAVA_BYTE, at, (byte) (at >> 16)); // chunks differ: a misplaced chunk shows
            }
        }

        @Override
        public void close() {
            if (send instanceof DeviceBuffer d) {
                d.close();
            }
            if (receive instanceof DeviceBuffer d) {
                d.close();
            } else if (receive instanceof HostBuffer h) {
                h.close();
            }
            pattern.close();
        }
    }

    /** Rank 0's table of every measurement. */
    static String table(String backend, List<Measurement> results) {
        StringBuilder sb = new StringBuilder();
        sb.append("ping-pong over ").append(backend).append(" between ranks 0 and 1 (one way = median round trip / 2):\n");
        sb.append(String.format(Locale.ROOT, "  %-7s %9s %7s %12s %12s%n", "memory", "size", "trips", "one-way", "bandwidth"));
        for (Measurement m : results) {
            sb.append(String.format(Locale.ROOT, "  %-7s %9s %7d %12s %12s%n", m.memory(), Fmt.bytes(m.bytes()), m.roundTrips(),
                    Fmt.micros(m.latencyMicros()), Fmt.rate(m.bytesPerSecond())));
        }
        return sb.toString();
    }

    /** "host 8 B 1.92 us, 64 KiB 3.10 GB/s, ...; device ...": latency for small messages, bandwidth for the rest. */
    static String summary(List<Measurement> results) {
        StringBuilder sb = new StringBuilder();
        String memory = null;
        for (Measurement m : results) {
            if (!m.memory().equals(memory)) {
                sb.append(memory == null ? "" : "; ").append(m.memory()).append(' ');
                memory = m.memory();
            } else {
                sb.append(", ");
            }
            sb.append(Fmt.bytes(m.bytes())).append(' ').append(m.bytes() <= 1024 ? Fmt.micros(m.latencyMicros()) : Fmt.rate(m.bytesPerSecond()));
        }
        return sb.toString();
    }
}
