// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.mpi;

import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.mpi.BindingTransport.Probed;
import dev.ferry.mpi.BindingTransport.Region;
import java.util.Optional;

/**
 * A blocking receive of a binding made without blocking (for the virtual threads' {@code recv}):
 * Ferry matches its message, as the blocking receive does with MPI_Mprobe, but with MPI_Improbe
 * at each test, then receives it with a {@link MatchedMessageReceive}. Each test is a few short
 * native calls whatever else is pending. It takes its place in MPI's matching order when its
 * message is matched, as a blocking receive waiting on another thread does.
 */
final class ProbedReceive implements Request {
    private final BindingTransport binding;
    private final Region into;
    private final int source;
    private final int tag;
    private MatchedMessageReceive receiving; // once matched
    private Status cancelled;

    ProbedReceive(BindingTransport binding, Region into, int source, int tag) {
        this.binding = binding;
        this.into = into;
        this.source = source;
        this.tag = tag;
    }

    @Override
    public synchronized Status waitFor() {
        if (cancelled != null) {
            return cancelled;
        }
        if (receiving == null) {
            receiving = new MatchedMessageReceive(binding, binding.mpiMprobe(source, tag), into);
        }
        return receiving.waitFor();
    }

    @Override
    public synchronized Optional<Status> test() {
        if (cancelled != null) {
            return Optional.of(cancelled);
        }
        if (receiving == null) {
            Optional<Probed> m = binding.mpiImprobe(source, tag);
            if (m.isEmpty()) {
                return Optional.empty();
            }
            receiving = new MatchedMessageReceive(binding, m.get(), into);
        }
        return receiving.test();
    }

    /** Cancelled only while no message matched it (MPI has nothing of it then). */
    @Override
    public synchronized boolean cancel() {
        if (receiving != null || cancelled != null) {
            return false;
        }
        cancelled = Status.cancelledReceive(source, tag);
        return true;
    }

    @Override
    public String toString() {
        return "recv from rank " + source + " tag " + tag + " (matched by Ferry)";
    }
}
