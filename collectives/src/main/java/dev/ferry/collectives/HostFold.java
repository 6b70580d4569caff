// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Blocks;
import dev.ferry.spi.DeviceSupport;
import dev.ferry.spi.HostReduction;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;

/**
 * {@code host-fold}: reductions folded by Ferry on the host, in rank order, with
 * {@link HostReduction}: every rank's input travels as bytes (gather, allGather, or for a
 * reduce-scatter each block to its rank by allToAllV), and the ranks that get a result fold it.
 * Device memory is copied through the host. The way to reduce what the MPI does not (FLOAT16,
 * BFLOAT16, the value/index pairs, whose MINLOC and MAXLOC not every MPI takes), with the same bytes
 * on every backend.
 */
final class HostFold implements Algorithm {
    private final Group group;

    HostFold(Group group) {
        this.group = group;
    }

    @Override
    public String name() {
        return "host-fold";
    }

    @Override
    public String description() {
        return "every input gathered as bytes and folded in rank order on the host (types the MPI does not reduce)";
    }

    @Override
    public boolean carries(Collective c) {
        return c == Collective.REDUCE || c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER || c == Collective.SCAN || c == Collective.EXSCAN;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        return null;
    }

    @Override
    public Agreement agreement() {
        return Agreement.NONE;
    }

    @Override
    public int preference() {
        return 20;
    }

    @Override
    public boolean run(CollectiveCall c) {
        switch (c.collective()) {
            case REDUCE -> gathered(c.send(), c.recv(), c.count(), c.type(), c.op(), c.root());
            case ALL_REDUCE -> gathered(c.send(), c.recv(), c.count(), c.type(), c.op(), -1);
            case SCAN -> prefix(c.send(), c.recv(), c.count(), c.type(), c.op(), true);
            case EXSCAN -> prefix(c.send(), c.recv(), c.count(), c.type(), c.op(), false);
            case REDUCE_SCATTER -> reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
            default -> throw new IllegalArgumentException("host-fold does not run " + c.collective());
        }
        return true;
    }

    /** reduce ({@code root >= 0}) or allReduce: every input gathered as bytes, folded where a result goes. */
    private void gathered(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        Transport t = group.mover();
        int n = t.size();
        long bytes = type.bytes(count);
        boolean result = root < 0 || t.rank() == root;
        try (HostBuffer in = HostBuffer.allocate(bytes); HostBuffer all = HostBuffer.allocate(result ? bytes * n : 0)) {
            DeviceSupport.get().copyToHost(in, send, bytes);
            if (root < 0) {
                t.allGather(in, all, bytes, DataType.BYTE);
            } else {
                t.gather(in, result ? all : null, bytes, DataType.BYTE, root);
            }
            if (result) {
                foldInRankOrder(all, 0, n, count, type, op, recv);
            }
        }
    }

    /** scan or exscan: every input to every rank, which folds those of ranks {@code 0..rank} ({@code 0..rank-1}). */
    private void prefix(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, boolean inclusive) {
        Transport t = group.mover();
        long bytes = type.bytes(count);
        try (HostBuffer in = HostBuffer.allocate(bytes); HostBuffer all = HostBuffer.allocate(bytes * t.size())) {
            DeviceSupport.get().copyToHost(in, send, bytes);
            t.allGather(in, all, bytes, DataType.BYTE);
            int upTo = inclusive ? t.rank() + 1 : t.rank();
            if (upTo > 0 && recv != null) {
                foldInRankOrder(all, 0, upTo, count, type, op, recv);
            }
        }
    }

    /** Block r of every rank's input to rank r (one allToAllV of bytes), which folds them in rank order. */
    private void reduceScatter(Buffer send, Buffer recv, Blocks blocks, DataType type, ReduceOp op) {
        Transport t = group.mover();
        int n = t.size(), me = t.rank();
        long total = type.bytes(blocks.total()), mine = blocks.bytes(me, type);
        try (HostBuffer in = HostBuffer.allocate(total); HostBuffer parts = HostBuffer.allocate(mine * n)) {
            DeviceSupport.get().copyToHost(in, send, total);
            long[] sc = new long[n], sd = new long[n], rc = new long[n], rd = new long[n];
            for (int r = 0; r < n; r++) {
                sc[r] = blocks.bytes(r, type);
                sd[r] = blocks.byteOffset(r, type);
                rc[r] = mine;
                rd[r] = r * mine;
            }
            t.allToAllV(in, Blocks.of(sc, sd), parts, Blocks.of(rc, rd), DataType.BYTE);
            foldInRankOrder(parts, 0, n, blocks.count(me), type, op, recv);
        }
    }

    /** Folds blocks {@code from..to-1} of {@code inputs} ({@code count} elements each, end to end) in rank order into {@code recv}. */
    private static void foldInRankOrder(HostBuffer inputs, int from, int to, long count, DataType type, ReduceOp op, Buffer recv) {
        long bytes = type.bytes(count);
        try (HostBuffer acc = HostBuffer.allocate(bytes)) {
            MemorySegment.copy(inputs.segment(), from * bytes, acc.segment(), 0, bytes);
            for (int r = from + 1; r < to; r++) {
                HostReduction.apply(type, op, acc.segment(), inputs.segment().asSlice(r * bytes, bytes), count);
            }
            DeviceSupport.get().copyFromHost(recv, acc, bytes);
        }
    }
}
