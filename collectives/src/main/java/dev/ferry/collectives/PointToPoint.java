// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.spi.PointToPointCollectives;

/**
 * {@code p2p}: rooted and all-to-all collectives as one point-to-point message per pair of ranks,
 * on the communicator's private duplicate (so they never match the program's messages). Takes any
 * buffers; runs where the backend's messages beat its collectives (staged's pipelined messages,
 * CUDA IPC between one node's ranks).
 */
final class PointToPoint implements Algorithm {
    private final Group group;

    PointToPoint(Group group) {
        this.group = group;
    }

    @Override
    public String name() {
        return "p2p";
    }

    @Override
    public String description() {
        return "one point-to-point message per pair of ranks, on a private duplicate of the communicator";
    }

    @Override
    public boolean carries(Collective c) {
        return switch (c) {
            case SCATTER, GATHER, ALL_GATHER, ALL_TO_ALL, SCATTER_V, GATHER_V, ALL_GATHER_V, ALL_TO_ALL_V -> true;
            default -> false;
        };
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
        return 10;
    }

    @Override
    public boolean run(CollectiveCall c) {
        int n = group.size();
        boolean root = group.rank() == c.root();
        switch (c.collective()) {
            case SCATTER -> PointToPointCollectives.scatterV(group.internal(), c.send(), root ? PointToPointCollectives.equal(c.count(), n) : null, c.recv(),
                    c.count(), c.type(), c.root());
            case GATHER -> PointToPointCollectives.gatherV(group.internal(), c.send(), c.count(), c.recv(),
                    root ? PointToPointCollectives.equal(c.count(), n) : null, c.type(), c.root());
            case ALL_GATHER -> PointToPointCollectives.allToAllV(group.internal(), c.send(), PointToPointCollectives.everyRank(c.count(), n), c.recv(),
                    PointToPointCollectives.equal(c.count(), n), c.type());
            case ALL_TO_ALL -> PointToPointCollectives.allToAllV(group.internal(), c.send(), PointToPointCollectives.equal(c.count(), n), c.recv(),
                    PointToPointCollectives.equal(c.count(), n), c.type());
            case SCATTER_V -> PointToPointCollectives.scatterV(group.internal(), c.send(), c.sendBlocks(), c.recv(), c.count(), c.type(), c.root());
            case GATHER_V -> PointToPointCollectives.gatherV(group.internal(), c.send(), c.count(), c.recv(), c.recvBlocks(), c.type(), c.root());
            case ALL_GATHER_V -> PointToPointCollectives.allToAllV(group.internal(), c.send(), PointToPointCollectives.everyRank(c.count(), n), c.recv(),
                    c.recvBlocks(), c.type());
            case ALL_TO_ALL_V -> PointToPointCollectives.allToAllV(group.internal(), c.send(), c.sendBlocks(), c.recv(), c.recvBlocks(), c.type());
            default -> throw new IllegalArgumentException("p2p does not run " + c.collective());
        }
        return true;
    }
}
