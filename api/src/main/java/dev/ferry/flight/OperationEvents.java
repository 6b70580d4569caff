// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.DataType;
import jdk.jfr.Event;

/**
 * The JFR events of Ferry's calls: which one a call makes, and its fields. An event is made only
 * while a recording enables its type; otherwise the cost of a call is one test per call of a
 * flag that JFR itself keeps (the probes below are never committed).
 */
final class OperationEvents {
    private static final CollectiveEvent COLLECTIVES = new CollectiveEvent();
    private static final PointToPointEvent POINT_TO_POINT = new PointToPointEvent();
    private static final WaitEvent WAITS = new WaitEvent();

    private OperationEvents() {
    }

    /** A begun event for a call of {@code kind}, or null when no recording enables its type. */
    static Event begin(CurrentCall.Kind kind) {
        Event e = switch (kind) {
            case COLLECTIVE -> COLLECTIVES.isEnabled() ? new CollectiveEvent() : null;
            case POINT_TO_POINT -> POINT_TO_POINT.isEnabled() ? new PointToPointEvent() : null;
            case WAIT -> WAITS.isEnabled() ? new WaitEvent() : null;
        };
        if (e != null) {
            e.begin();
        }
        return e;
    }

    /** Fills {@code e} from the call that made it and commits it (JFR drops it below the recording's threshold). */
    static void commit(Event e, CurrentCall c) {
        int rank = FlightRecorder.worldRank();
        String comm = c.ring == null ? null : c.ring.id();
        String type = c.type == null ? null : c.type.toString();
        long bytes = bytes(c.count, c.type);
        String memory = CurrentCall.memoryText(c.memory, c.otherMemory);
        String algorithm = c.algorithmOrBackend();
        switch (e) {
            case CollectiveEvent x -> {
                x.rank = rank;
                x.communicator = comm;
                x.sequence = c.collective;
                x.operation = c.op;
                x.bytes = bytes;
                x.count = c.count;
                x.datatype = type;
                x.root = c.peer >= 0 && CollectiveShape.rooted(c.op) ? c.peer : -1;
                x.memory = memory;
                x.algorithm = algorithm;
                x.commit();
            }
            case PointToPointEvent x -> {
                x.rank = rank;
                x.communicator = comm;
                x.sequence = c.seq;
                x.operation = c.op;
                x.bytes = bytes;
                x.count = c.count;
                x.datatype = type;
                x.peer = c.peer;
                x.tag = c.tag;
                x.source = c.peer2;
                x.receiveTag = c.tag2;
                x.memory = memory;
                x.algorithm = algorithm;
                x.commit();
            }
            case WaitEvent x -> {
                x.rank = rank;
                x.operation = c.op;
                x.subject = String.valueOf(c.subject);
                x.commit();
            }
            default -> throw new IllegalStateException("not a Ferry event: " + e.getClass().getName());
        }
    }

    private static long bytes(long count, DataType type) {
        if (count <= 0 || type == null) return 0;
        try {
            return type.bytes(count);
        } catch (RuntimeException overflow) {
            return Long.MAX_VALUE;
        }
    }
}
