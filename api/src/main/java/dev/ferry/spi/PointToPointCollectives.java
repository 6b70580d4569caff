// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.Request;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The rooted and all-to-all collectives made of one point-to-point message per pair of ranks, for
 * transports whose collective calls cannot take the buffers at hand (a binding's {@code int}
 * counts, or staged chunks that pipeline on their own). Run on a private transport (a duplicate
 * of the caller's, made once), so that these messages never match the caller's own; every rank
 * posts its receives first, then sends, starting with a different peer on every rank.
 *
 * <p>The block collectives are the vector ones with equal blocks: scatter and gather are
 * {@link #scatterV} and {@link #gatherV}, allToAll is {@link #allToAllV}, and allGather(V) is
 * {@link #allToAllV} whose send blocks are all the whole send buffer ({@link #everyRank}).
 */
public final class PointToPointCollectives {
    private PointToPointCollectives() {
    }

    /** Blocks of {@code count} elements, one after the other, for each of {@code size} ranks. */
    public static Blocks equal(long count, int size) {
        long[] counts = new long[size];
        Arrays.fill(counts, count);
        return Blocks.contiguous(counts);
    }

    /** The same {@code count} elements at displacement 0 for each of {@code size} ranks (one send buffer to every rank). */
    public static Blocks everyRank(long count, int size) {
        long[] counts = new long[size];
        Arrays.fill(counts, count);
        return Blocks.of(counts, new long[size]);
    }

    /** {@code send} and {@code sendBlocks} are significant only at {@code root}. */
    public static void scatterV(Transport t, Buffer send, Blocks sendBlocks, Buffer recv, long recvCount, DataType type, int root) {
        List<Request> reqs = new ArrayList<>();
        reqs.add(t.irecv(recv, recvCount, type, root, 0));
        if (t.rank() == root) {
            for (int k = 0; k < t.size(); k++) {
                int r = (root + k) % t.size();
                reqs.add(t.isend(sendBlocks.block(send, r, type), sendBlocks.count(r), type, r, 0));
            }
        }
        Request.waitAll(reqs);
    }

    /** {@code recv} and {@code recvBlocks} are significant only at {@code root}. */
    public static void gatherV(Transport t, Buffer send, long sendCount, Buffer recv, Blocks recvBlocks, DataType type, int root) {
        List<Request> reqs = new ArrayList<>();
        if (t.rank() == root) {
            for (int r = 0; r < t.size(); r++) {
                reqs.add(t.irecv(recvBlocks.block(recv, r, type), recvBlocks.count(r), type, r, 0));
            }
        }
        reqs.add(t.isend(send, sendCount, type, root, 0));
        Request.waitAll(reqs);
    }

    /** Block {@code r} of {@code send} to rank {@code r}, block {@code r} of {@code recv} from rank {@code r}. */
    public static void allToAllV(Transport t, Buffer send, Blocks sendBlocks, Buffer recv, Blocks recvBlocks, DataType type) {
        List<Request> reqs = new ArrayList<>();
        int n = t.size(), me = t.rank();
        for (int r = 0; r < n; r++) {
            reqs.add(t.irecv(recvBlocks.block(recv, r, type), recvBlocks.count(r), type, r, 0));
        }
        for (int k = 0; k < n; k++) {
            int r = (me + k) % n;
            reqs.add(t.isend(sendBlocks.block(send, r, type), sendBlocks.count(r), type, r, 0));
        }
        Request.waitAll(reqs);
    }
}
