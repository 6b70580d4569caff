// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.ReduceOp;

/**
 * One collective of a {@link dev.ferry.StreamCommunicator}, checked: what a transport may enqueue
 * on a stream by itself ({@link Transport#enqueueOnStream}), and what the view's thread runs
 * otherwise. {@code count} as the operation takes it (reduceScatterBlock: the receive count);
 * {@code root} -1 where the operation has none; {@code op} null where it reduces nothing.
 */
public record StreamCollective(Kind kind, Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
    /** The collectives a stream-ordered view runs. */
    public enum Kind {
        BARRIER("barrier"), BROADCAST("broadcast"), SCATTER("scatter"), GATHER("gather"), ALL_GATHER("allGather"), ALL_TO_ALL("allToAll"),
        REDUCE("reduce"), ALL_REDUCE("allReduce"), REDUCE_SCATTER_BLOCK("reduceScatterBlock");

        /** The operation's name in the API. */
        public final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    /** Runs this collective on {@code c} as its blocking call. */
    public void runOn(Communicator c) {
        switch (kind) {
            case BARRIER -> c.barrier();
            case BROADCAST -> c.broadcast(send, count, type, root);
            case SCATTER -> c.scatter(send, recv, count, type, root);
            case GATHER -> c.gather(send, recv, count, type, root);
            case ALL_GATHER -> c.allGather(send, recv, count, type);
            case ALL_TO_ALL -> c.allToAll(send, recv, count, type);
            case REDUCE -> c.reduce(send, recv, count, type, op, root);
            case ALL_REDUCE -> c.allReduce(send, recv, count, type, op);
            case REDUCE_SCATTER_BLOCK -> c.reduceScatterBlock(send, recv, count, type, op);
        }
    }

    /** The buffers the collective uses (the in-place marker left out). */
    public Buffer[] buffers() {
        Buffer s = send == Communicator.IN_PLACE ? null : send;
        Buffer r = recv == Communicator.IN_PLACE ? null : recv; // a scatter's root in place
        return new Buffer[] {s, r};
    }
}
