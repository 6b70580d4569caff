// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.spi.Transport;

/**
 * {@code native}: the backend's own collective, one call of the mover: the MPI library's collective
 * under {@code ompi} and {@code mvapich} (device memory straight to a CUDA-aware MPI), the pipeline
 * through pinned host memory over the MPI under {@code staged}. Takes any buffers the backend carries;
 * not where the backend cannot reduce the type (FLOAT16, BFLOAT16, the value/index pairs: see
 * {@code host-fold}).
 */
final class Native implements Algorithm {
    private final Group group;

    Native(Group group) {
        this.group = group;
    }

    @Override
    public String name() {
        return "native";
    }

    @Override
    public String description() {
        return "the backend's own collective (the MPI library's; staged: pipelined through pinned host memory over it)";
    }

    @Override
    public boolean carries(Collective c) {
        return true;
    }

    @Override
    public String unfit(Shape s, Topology t) {
        if (s.collective().reduces() && !group.mover().reduces(s.type(), s.op())) {
            return "backend " + group.mover().backend() + " does not reduce " + s.type() + " with " + s.op();
        }
        return null;
    }

    @Override
    public Agreement agreement() {
        return Agreement.NONE;
    }

    @Override
    public int preference() {
        return 0;
    }

    @Override
    public boolean run(CollectiveCall c) {
        Transport m = group.mover();
        switch (c.collective()) {
            case BROADCAST -> m.broadcast(c.send() != null ? c.send() : c.recv(), c.count(), c.type(), c.root());
            case SCATTER -> m.scatter(c.send(), c.recv(), c.count(), c.type(), c.root());
            case GATHER -> m.gather(c.send(), c.recv(), c.count(), c.type(), c.root());
            case ALL_GATHER -> m.allGather(c.send(), c.recv(), c.count(), c.type());
            case ALL_TO_ALL -> m.allToAll(c.send(), c.recv(), c.count(), c.type());
            case REDUCE -> m.reduce(c.send(), c.recv(), c.count(), c.type(), c.op(), c.root());
            case ALL_REDUCE -> m.allReduce(c.send(), c.recv(), c.count(), c.type(), c.op());
            case REDUCE_SCATTER -> m.reduceScatter(c.send(), c.recv(), c.recvBlocks(), c.type(), c.op());
            case SCAN -> m.scan(c.send(), c.recv(), c.count(), c.type(), c.op());
            case EXSCAN -> m.exscan(c.send(), c.recv(), c.count(), c.type(), c.op());
            case SCATTER_V -> m.scatterV(c.send(), c.sendBlocks(), c.recv(), c.count(), c.type(), c.root());
            case GATHER_V -> m.gatherV(c.send(), c.count(), c.recv(), c.recvBlocks(), c.type(), c.root());
            case ALL_GATHER_V -> m.allGatherV(c.send(), c.count(), c.recv(), c.recvBlocks(), c.type());
            case ALL_TO_ALL_V -> m.allToAllV(c.send(), c.sendBlocks(), c.recv(), c.recvBlocks(), c.type());
        }
        return true;
    }
}
