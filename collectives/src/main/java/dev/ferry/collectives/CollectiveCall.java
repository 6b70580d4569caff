// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.spi.Blocks;

/**
 * One collective call as an algorithm gets it: the checked arguments of the front
 * ({@link dev.ferry.spi.Transport}'s rules: a parameter significant only at some ranks is null
 * elsewhere), and its {@link Shape}.
 *
 * <p>{@code count}: elements per block as the operation takes them (broadcast, scatter, gather,
 * allGather, allToAll, reduce, allReduce, scan, exscan: the API's count; reduceScatter: this rank's
 * receive count, with {@code recvBlocks} every rank's; scatterV: the receive count; gatherV and
 * allGatherV: the send count). Blocks: as in the SPI, null where not significant.
 */
public record CollectiveCall(Shape shape, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root,
                             Blocks sendBlocks, Blocks recvBlocks) {

    public Collective collective() {
        return shape.collective();
    }

    /** A call of one of the block collectives or reductions (no vector blocks). */
    public static CollectiveCall of(Collective c, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
        return new CollectiveCall(new Shape(c, type, op, type.bytes(count), root), send, recv, count, type, op, root, null, null);
    }

    /** A reduce-scatter: {@code blocks} every rank's receive count, laid out one after the other in the send buffer. */
    public static CollectiveCall reduceScatter(Buffer send, Buffer recv, Blocks blocks, int rank, DataType type, ReduceOp op) {
        return new CollectiveCall(new Shape(Collective.REDUCE_SCATTER, type, op, type.bytes(blocks.total()), -1), send, recv, blocks.count(rank), type, op, -1,
                null, blocks);
    }

    /** A vector collective (its block sizes are not the same on every rank: the shape has none). */
    public static CollectiveCall vector(Collective c, Buffer send, Blocks sendBlocks, Buffer recv, Blocks recvBlocks, long count, DataType type, int root) {
        return new CollectiveCall(new Shape(c, type, null, 0, root), send, recv, count, type, null, root, sendBlocks, recvBlocks);
    }

    @Override
    public String toString() {
        return shape.toString();
    }
}
