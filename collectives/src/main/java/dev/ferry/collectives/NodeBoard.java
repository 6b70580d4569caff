// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Transport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Host memory shared by the ranks of one node (a file in {@code /dev/shm}, mapped by each and
 * unlinked once all have mapped it), on which the node-local device collectives exchange their
 * per-call records and meet, instead of host MPI collectives: a record round and a barrier cost
 * a few hundred nanoseconds here against several microseconds through the MPI (measured:
 * bench/results, SmallCollectiveFloor).
 *
 * <p>Layout: per rank one 64-byte line of two counters (records published, barriers reached) and the
 * last odd and even barriers the rank failed, then
 * two record slots per rank, used by calls of alternate parity: a rank writes call k+2's record
 * over call k's only after every rank published k+1, which each does after reading call k's
 * records, so no reader ever sees a record change under it. Counters are written with release
 * stores and read with acquire loads.
 *
 * <p>Each record starts with what the exchange is for: a kind, a key and a size, the caller's words
 * ({@link #exchange}). Every exchange of one board is one step of the same sequence on every rank;
 * ranks whose records of one step are of different kinds are in different steps (for example,
 * collective calls that the ranks' sizes planned onto algorithms that meet differently), and every
 * one of them throws the same {@link Diverged} there instead of reading a record it cannot parse.
 *
 * <p>A wait spins (with {@link Thread#onSpinWait}), polls the caller's progress (pending transfers) now and then
 * and yields the processor after a while, so that ranks that share cores still make progress. A
 * rank that never arrives leaves the others waiting, as an MPI collective would; the watchdog
 * ({@code ferry.timeout}) sees the caller's collective in progress.
 */
public final class NodeBoard implements AutoCloseable {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int LINE = 64;
    /** A record's header: kind, key and size (8 bytes each). */
    private static final int HEADER = 24;

    private final Arena arena;
    private final MemorySegment board;
    private final int n;
    private final int me;
    private final long slotBytes;
    private final long slotsAt;
    private long records; // calls of exchange() so far (the same on every rank)
    private long barriers;

    private NodeBoard(Arena arena, MemorySegment board, int n, int me, long recordBytes) {
        this.arena = arena;
        this.board = board;
        this.n = n;
        this.me = me;
        this.slotBytes = slotBytesFor(recordBytes);
        this.slotsAt = (long) LINE * n;
    }

    /** Bytes of a board for {@code n} ranks of records of up to {@code recordBytes}. */
    private static long size(int n, long recordBytes) {
        return (long) LINE * n + 2L * n * slotBytesFor(recordBytes);
    }

    /** A slot: the header and a record of up to {@code recordBytes}, in whole 64-byte lines. */
    private static long slotBytesFor(long recordBytes) {
        return (recordBytes + HEADER + 63) & ~63L;
    }

    /**
     * The board of {@code t}'s ranks (collective; every rank of {@code t} is on this node), or null on
     * every rank when some rank could not make or map it (the caller then uses host MPI collectives).
     */
    public static NodeBoard open(Transport t, long recordBytes, Runnable progress) {
        int n = t.size(), me = t.rank();
        long bytes = size(n, recordBytes);
        Path file = null;
        String failure = null;
        try (HostBuffer name = HostBuffer.allocate(256); HostBuffer ok = HostBuffer.allocate(8)) {
            if (me == 0) {
                try {
                    file = Files.createTempFile(Path.of("/dev/shm"), "ferry-board-" + ProcessHandle.current().pid() + "-", ".tmp");
                    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                        ch.truncate(0);
                        ch.write(java.nio.ByteBuffer.allocate(1), bytes - 1); // the file's size, as zeros
                    }
                } catch (IOException | RuntimeException e) {
                    failure = "/dev/shm: " + e;
                    file = null;
                }
                byte[] p = file == null ? new byte[0] : file.toString().getBytes(StandardCharsets.UTF_8);
                name.segment().set(ValueLayout.JAVA_INT, 0, p.length);
                MemorySegment.copy(MemorySegment.ofArray(p), 0, name.segment(), 4, Math.min(p.length, 250));
            }
            progress.run();
            t.broadcast(name, 256, DataType.BYTE, 0);
            int len = name.segment().get(ValueLayout.JAVA_INT, 0);
            Arena arena = Arena.ofShared();
            MemorySegment mapped = null;
            if (len > 0) {
                byte[] p = new byte[len];
                MemorySegment.copy(name.segment(), 4, MemorySegment.ofArray(p), 0, len);
                try (FileChannel ch = FileChannel.open(Path.of(new String(p, StandardCharsets.UTF_8)), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
                } catch (IOException | RuntimeException e) {
                    failure = "mapping the node's board: " + e;
                }
            }
            ok.segment().set(ValueLayout.JAVA_INT, 0, mapped != null ? 1 : 0);
            progress.run();
            t.allReduce(ok.slice(0, 4), ok.slice(4, 4), 1, DataType.INT, ReduceOp.MIN); // every rank mapped it (or none uses it)
            if (file != null) {
                try {
                    Files.deleteIfExists(file); // the mappings stay; nothing is left behind
                } catch (IOException e) {
                    // a leftover file in /dev/shm costs its few KiB; the board works
                }
            }
            if (ok.segment().get(ValueLayout.JAVA_INT, 4) == 0) {
                arena.close();
                if (failure != null) {
                    System.getLogger("dev.ferry.collectives").log(System.Logger.Level.WARNING, "rank " + me
                            + ": no shared-memory board for node-local collectives (" + failure + "); they exchange their records through MPI instead");
                }
                return null;
            }
            return new NodeBoard(arena, mapped, n, me, recordBytes);
        }
    }

    /**
     * Publishes {@code mine} (at most the size the board was opened for) after its header (what it is:
     * {@code kind}, and the caller's {@code key} and {@code size}), and waits for every rank's record of
     * this call, which it copies, rank after rank, into {@code all} (as an allGather would); throws
     * {@link Diverged} on every rank, after reading every record, when some rank's kind differs.
     */
    public void exchange(long kind, long key, long size, MemorySegment mine, MemorySegment all, long recordBytes, Runnable progress) {
        if (recordBytes > slotBytes - HEADER) {
            throw new IllegalArgumentException("a record of " + recordBytes + " bytes on a board of " + (slotBytes - HEADER) + "-byte records");
        }
        long k = ++records;
        long parity = k & 1;
        long at = slot(me, parity);
        board.set(ValueLayout.JAVA_LONG, at, kind);
        board.set(ValueLayout.JAVA_LONG, at + 8, key);
        board.set(ValueLayout.JAVA_LONG, at + 16, size);
        MemorySegment.copy(mine, 0, board, at + HEADER, recordBytes);
        LONG.setRelease(board, (long) LINE * me, k);
        boolean same = true;
        for (int r = 0; r < n; r++) {
            await(r, 0, k, progress);
            same &= board.get(ValueLayout.JAVA_LONG, slot(r, parity)) == kind;
            MemorySegment.copy(board, slot(r, parity) + HEADER, all, r * recordBytes, recordBytes);
        }
        if (!same) {
            long[] kinds = new long[n], keys = new long[n], sizes = new long[n];
            for (int r = 0; r < n; r++) {
                kinds[r] = board.get(ValueLayout.JAVA_LONG, slot(r, parity));
                keys[r] = board.get(ValueLayout.JAVA_LONG, slot(r, parity) + 8);
                sizes[r] = board.get(ValueLayout.JAVA_LONG, slot(r, parity) + 16);
            }
            throw new Diverged(kinds, keys, sizes);
        }
    }

    /**
     * Thrown by {@link #exchange} on every rank when the ranks' records of one exchange are of
     * different kinds: each rank's kind, key and size, by rank (the same on every rank).
     */
    public static final class Diverged extends RuntimeException {
        private final long[] kinds, keys, sizes;

        Diverged(long[] kinds, long[] keys, long[] sizes) {
            super("the ranks' exchanges on the node's board are of different kinds: " + java.util.Arrays.toString(kinds), null, false, false);
            this.kinds = kinds;
            this.keys = keys;
            this.sizes = sizes;
        }

        /** The kind of {@code rank}'s exchange. */
        public long kind(int rank) {
            return kinds[rank];
        }

        /** The key {@code rank} gave its exchange. */
        public long key(int rank) {
            return keys[rank];
        }

        /** The size {@code rank} gave its exchange. */
        public long size(int rank) {
            return sizes[rank];
        }
    }

    /**
     * Returns once every rank has called it as many times as this one: true when every rank passed
     * {@code ok}. A rank's failure of barrier k is published before it arrives, at {@code 16 + 8 * (k & 1)} of its
     * line: it cannot reach barrier k + 2, which would write there again, before every rank has left k.
     */
    public boolean barrier(boolean ok, Runnable progress) {
        long k = ++barriers;
        long failed = 16 + 8 * (k & 1);
        if (!ok) LONG.setRelease(board, (long) LINE * me + failed, k);
        LONG.setRelease(board, (long) LINE * me + 8, k);
        boolean all = true;
        for (int r = 0; r < n; r++) {
            await(r, 8, k, progress);
            all &= (long) LONG.getAcquire(board, (long) LINE * r + failed) != k;
        }
        return all;
    }

    private long slot(int r, long parity) {
        return slotsAt + (2L * r + parity) * slotBytes;
    }

    private void await(int r, int counter, long k, Runnable progress) {
        long at = (long) LINE * r + counter;
        for (int spins = 0; (long) LONG.getAcquire(board, at) < k; spins++) {
            if ((spins & 1023) == 1023) {
                progress.run();
                if (spins > 1 << 16) Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
    }

    @Override
    public void close() {
        arena.close();
    }
}
