// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.CommunicatorClosedException;
import dev.ferry.FerryException;
import dev.ferry.MatchedMessage;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.ThreadLevel;
import dev.ferry.mpi.BindingTransport.Probed;
import dev.ferry.mpi.BindingTransport.Region;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import dev.ferry.spi.Backoff;
import dev.ferry.spi.MpiLifecycle;

/**
 * Receives of one communicator of a binding that Ferry matches itself before the MPI library
 * receives into them: the message is found (MPI_Iprobe), taken out of matching (MPI_Improbe) and
 * received whole (MPI_Imrecv), so that the library never gets a receive shorter than its message.
 *
 * <p>Why: a non-blocking device receive (MPI_Irecv) that truncates its message leaves Open MPI's
 * CUDA path in a state where a later device receive crashes the process (SIGSEGV in
 * {@code mca_rcache_rgpusm_register}, see {@code bench/experiments/smcuda-probe.c}), and a
 * truncated rendezvous receive can leave the sender waiting. Blocking receives already match
 * first ({@link BindingTransport#mpiRecv}); here the same holds for {@code irecv} on device
 * memory. A message longer than the buffer is received into host memory of its own; the buffer
 * gets its first bytes and the request fails with the binding's truncation exception.
 *
 * <p>MPI's matching order is kept: while one receive of this communicator waits here, every
 * receive and probe of the communicator goes through here too ({@link #active()}), in the order
 * they were posted. A message goes to the earliest waiting receive whose source and tag match it,
 * and each receive takes the first message that matches it, as MPI matches posted receives.
 * Receives posted to the library before stay with the library: they matched at arrival, so the
 * messages seen here are those they did not take.
 *
 * <p>Progress: the waits and tests of these receives match them; under
 * {@code MPI_THREAD_MULTIPLE} a thread of Ferry's also does while any is waiting, so that a sender
 * blocked in a rendezvous completes while its receiver blocks in another call (MPI's progress
 * rule). Below that thread level, complete a device {@code irecv} before blocking in another call.
 */
final class MatchedReceives {
    private final BindingTransport binding;
    /** Unmatched receives, in the order they were posted; guarded by this. */
    private final List<Waiting> waiting = new ArrayList<>();
    private volatile boolean active;
    private boolean closed;

    MatchedReceives(BindingTransport binding) {
        this.binding = binding;
    }

    /** True while a receive of this communicator waits to be matched here: every receive and probe must then come here too. */
    boolean active() {
        return active;
    }

    /** A receive into {@code into} of the message from {@code source} with {@code tag} (wildcards allowed), matched here. */
    Request post(Region into, int source, int tag) {
        Waiting w = new Waiting(into, source, tag);
        synchronized (this) {
            if (closed) {
                throw new CommunicatorClosedException("irecv: the communicator was closed");
            }
            waiting.add(w);
            if (!active) {
                active = true;
                Progress.register(this);
            }
        }
        progress();
        return w;
    }

    /** Matches every waiting receive whose message has arrived. */
    void progress() {
        synchronized (this) {
            int i = 0;
            while (i < waiting.size()) {
                Waiting r = waiting.get(i);
                Optional<Status> next = binding.mpiIprobe(r.source, r.tag);
                if (next.isEmpty()) {
                    i++;
                    continue;
                }
                int first = earliestFor(next.get());
                if (first < i) {
                    i = first; // an earlier receive matches it: that one takes the first message it matches
                    continue;
                }
                // the first message from its source with its tag is the one just seen (MPI's non-overtaking order)
                Optional<Probed> m = binding.mpiImprobe(next.get().source(), next.get().tag());
                if (m.isEmpty()) {
                    i++;
                    continue;
                }
                waiting.remove(i);
                r.matched(m.get());
            }
            if (waiting.isEmpty() && active) {
                active = false;
                Progress.unregister(this);
            }
        }
    }

    private int earliestFor(Status message) {
        for (int i = 0; i < waiting.size(); i++) {
            Waiting w = waiting.get(i);
            if ((w.source == dev.ferry.Communicator.ANY_SOURCE || w.source == message.source())
                    && (w.tag == dev.ferry.Communicator.ANY_TAG || w.tag == message.tag())) {
                return i;
            }
        }
        return waiting.size();
    }

    /** True when a waiting receive would take a message from {@code source} with {@code tag}. */
    private synchronized boolean claims(Status message) {
        return earliestFor(message) < waiting.size();
    }

    /** MPI_Iprobe as MPI would answer it after the receives waiting here took their messages. */
    Optional<Status> iprobe(int source, int tag) {
        while (true) {
            progress();
            // probe and claim check under the lock: otherwise the progress thread can take the
            // message between them and this probe would report a message that is gone
            synchronized (this) {
                Optional<Status> st = binding.mpiIprobe(source, tag);
                if (st.isEmpty() || !claims(st.get())) {
                    return st;
                }
            }
        }
    }

    /** MPI_Improbe as MPI would answer it after the receives waiting here took their messages. */
    Optional<MatchedMessage> improbe(int source, int tag, java.util.function.Function<Probed, MatchedMessage> message) {
        while (true) {
            progress();
            synchronized (this) {
                Optional<Status> st = binding.mpiIprobe(source, tag);
                if (st.isEmpty()) {
                    return Optional.empty();
                }
                if (!claims(st.get())) {
                    Optional<Probed> m = binding.mpiImprobe(st.get().source(), st.get().tag());
                    if (m.isPresent()) {
                        return m.map(message);
                    }
                }
            }
        }
    }

    /** Blocking probes while receives wait here: the non-blocking form until it finds a message. */
    <T> T await(java.util.function.Supplier<Optional<T>> attempt) {
        Backoff idle = new Backoff();
        while (true) {
            Optional<T> got = attempt.get();
            if (got.isPresent()) {
                return got.get();
            }
            idle.pause();
        }
    }

    /** The communicator is being freed: receives still waiting end with {@link CommunicatorClosedException}. */
    void close() {
        List<Waiting> left;
        synchronized (this) {
            closed = true;
            left = new ArrayList<>(waiting);
            waiting.clear();
            if (active) {
                active = false;
                Progress.unregister(this);
            }
        }
        for (Waiting w : left) {
            w.fail(new CommunicatorClosedException("irecv from rank " + w.source + " tag " + w.tag + ": the communicator was closed before a message matched it"));
        }
    }

    /** One receive: waiting for its message, then the library's receive of it. */
    private final class Waiting implements Request {
        private final Region into;
        private final int source;
        private final int tag;
        private volatile Request inner; // the library's receive, once matched
        private Status result;
        private RuntimeException failure;

        Waiting(Region into, int source, int tag) {
            this.into = into;
            this.source = source;
            this.tag = tag;
        }

        /** Called under the matcher's lock: starts the library's receive of the matched message. */
        void matched(Probed m) {
            try {
                inner = new MatchedMessageReceive(binding, m, into);
            } catch (RuntimeException e) {
                fail(e);
                inner = Completed.INSTANCE;
            }
        }

        synchronized void fail(RuntimeException e) {
            if (result == null && failure == null) {
                failure = e;
            }
        }

        @Override
        public Status waitFor() {
            Backoff idle = new Backoff();
            while (inner == null && !done()) {
                progress();
                if (inner == null) {
                    idle.pause();
                }
            }
            synchronized (this) {
                if (!done()) {
                    try {
                        result = inner.waitFor();
                    } catch (RuntimeException e) {
                        failure = e;
                    }
                }
                return outcome();
            }
        }

        @Override
        public Optional<Status> test() {
            if (inner == null && !done()) {
                progress();
            }
            synchronized (this) {
                if (!done()) {
                    if (inner == null) {
                        return Optional.empty();
                    }
                    try {
                        Optional<Status> st = inner.test();
                        if (st.isEmpty()) {
                            return Optional.empty();
                        }
                        result = st.get();
                    } catch (RuntimeException e) {
                        failure = e;
                    }
                }
                return Optional.of(outcome());
            }
        }

        /** Cancelled only while no message matched it. */
        @Override
        public boolean cancel() {
            synchronized (MatchedReceives.this) {
                if (!waiting.remove(this)) {
                    return false; // matched: it completes by receiving its message
                }
                if (waiting.isEmpty() && active) {
                    active = false;
                    Progress.unregister(MatchedReceives.this);
                }
            }
            synchronized (this) {
                result = Status.cancelledReceive(source, tag);
            }
            return true;
        }

        private boolean done() {
            synchronized (this) {
                return result != null || failure != null;
            }
        }

        private Status outcome() {
            if (failure != null) {
                throw failure;
            }
            return result;
        }

        @Override
        public String toString() {
            return "irecv from rank " + source + " tag " + tag + " (matched by Ferry)";
        }
    }

    /** The receive of a matched message that could not be started: its failure is the request's. */
    private enum Completed implements Request {
        INSTANCE;

        @Override
        public Status waitFor() {
            throw new FerryException("the receive was not started");
        }

        @Override
        public Optional<Status> test() {
            return Optional.of(waitFor());
        }
    }

    /**
     * The thread that matches waiting receives while their ranks are inside other calls, under
     * {@code MPI_THREAD_MULTIPLE}: it runs only while some communicator has a receive waiting.
     */
    static final class Progress {
        private static final List<MatchedReceives> ACTIVE = new CopyOnWriteArrayList<>();
        private static Thread thread;

        private Progress() {
        }

        static void register(MatchedReceives m) {
            if (MpiLifecycle.threadLevel() != ThreadLevel.MULTIPLE) {
                return;
            }
            ACTIVE.add(m);
            synchronized (Progress.class) {
                if (thread == null) {
                    thread = new Thread(Progress::run, "ferry-receive-matching");
                    thread.setDaemon(true);
                    thread.start();
                } else {
                    LockSupport.unpark(thread);
                }
            }
        }

        static void unregister(MatchedReceives m) {
            ACTIVE.remove(m);
        }

        private static void run() {
            Backoff idle = new Backoff();
            while (!MpiLifecycle.isFinalized()) {
                if (ACTIVE.isEmpty()) {
                    LockSupport.parkNanos(10_000_000L);
                    idle = new Backoff();
                    continue;
                }
                for (MatchedReceives m : ACTIVE) {
                    try {
                        m.progress();
                    } catch (RuntimeException e) {
                        // the receives' own waits see the failure when they probe again
                    }
                }
                idle.pause();
            }
        }
    }
}
