// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Communicator;
import dev.ferry.HostBuffer;
import dev.ferry.Status;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Messages of a staged communicator's user communicator that a probe took off the inner MPI
 * before any receive asked for them (see {@link StagedProbes}): an eager message or a first piece
 * (its header tells the message's size, which a probe must report), each kept as it arrived in a
 * buffer of a slot's size. A receive posted later takes the first one it matches, in arrival order,
 * before it posts anything to MPI ({@link StagedReceive}); since a probe takes every earlier message
 * of the same sender off MPI with it, in order, the messages of one sender stay in MPI's order.
 * Used under the progress lock only.
 */
final class Arrivals {
    /**
     * One message off the wire.
     *
     * @param source    its sender
     * @param tag       its tag
     * @param wireBytes bytes of the MPI message (the eager data, or a first piece)
     * @param total     bytes of the user's message (from the first piece's header)
     * @param data      the MPI message at offset 0, in a buffer of {@link Wire#slot} bytes; owned
     */
    record Arrived(int source, int tag, long wireBytes, long total, HostBuffer data) {
        Status status() {
            return new Status(source, tag, total);
        }

        boolean matches(int s, int t) {
            return (s == Communicator.ANY_SOURCE || s == source) && (t == Communicator.ANY_TAG || t == tag);
        }
    }

    private final List<Arrived> queue = new ArrayList<>();

    void add(Arrived a) {
        queue.add(a);
    }

    /** The first message matching {@code source} and {@code tag}, left in place; null when none. */
    Arrived peek(int source, int tag) {
        for (Arrived a : queue) {
            if (a.matches(source, tag)) return a;
        }
        return null;
    }

    /** The first message matching {@code source} and {@code tag}, taken out; null when none. */
    Arrived take(int source, int tag) {
        for (Iterator<Arrived> it = queue.iterator(); it.hasNext(); ) {
            Arrived a = it.next();
            if (a.matches(source, tag)) {
                it.remove();
                return a;
            }
        }
        return null;
    }

    /** Frees the messages no receive took (the communicator is closing). */
    void close() {
        for (Arrived a : queue) {
            a.data().close();
        }
        queue.clear();
    }
}
