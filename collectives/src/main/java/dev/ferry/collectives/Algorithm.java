// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

/**
 * One way of running collectives on one communicator: a name, the calls it can serve, and the run.
 * An {@link AlgorithmProvider} makes one per communicator ({@link Group}); the {@link Planner}
 * chooses among them by cost ({@link CostTable}) and nothing else chooses.
 *
 * <p>Whether an algorithm serves a call is decided in two steps. {@link #unfit} from what every
 * rank knows alike (the call's {@link Shape} and the communicator's {@link Topology}): the same
 * answer everywhere, no message. Then, where the algorithm needs every rank's buffers to suit it
 * (device memory of one GPU, say) and MPI lets ranks pass different kinds of memory, an agreement
 * ({@link #agreement()}): the planner asks every rank's {@link #takes} in one round, or the
 * algorithm's own first exchange decides and {@link #run} declines on every rank alike.
 */
public interface Algorithm extends AutoCloseable {
    /** How the ranks agree that a call's buffers suit this algorithm. */
    enum Agreement {
        /** Any buffers the backend carries: no agreement. */
        NONE,
        /** The planner asks every rank ({@link Algorithm#takes}) in one round before the run. */
        VOTE,
        /** The algorithm's own first exchange decides: {@link Algorithm#run} returns false on every rank alike. */
        WITHIN
    }

    /** The name settings, tables and reports use ({@code native}, {@code p2p}, {@code ipc-short}, ...). */
    String name();

    /** One line: what the algorithm does. */
    String description();

    /** True when it runs {@code c} at all. */
    boolean carries(Collective c);

    /** Why calls of {@code shape} cannot take it on this communicator, or null when they can; the same answer on every rank. */
    String unfit(Shape shape, Topology topology);

    /** How ranks agree on a call's buffers (see the class comment). */
    Agreement agreement();

    /**
     * True when it serves only calls whose buffers are device memory on every rank: once a call's
     * agreement finds host memory on some rank, the planner passes it over.
     */
    default boolean needsDevice() {
        return false;
    }

    /**
     * True when the ranks' calls of {@code c} must be compared before this algorithm runs one
     * ({@link SameCall}): its library completes calls that the ranks disagree on, with wrong data.
     * The planner compares them in the round of a vote where one runs, else in a round of its own.
     * False (the default): the algorithm compares them itself, or the library fails such calls.
     */
    default boolean comparesCalls(Collective c) {
        return false;
    }

    /**
     * True when {@link #run} makes its GPU work wait on the GPU for the caller's earlier device
     * work ({@link dev.ferry.spi.PendingDeviceWork#before}) before anything touches this rank's
     * buffers, and no peer touches them before that work does: the planner then leaves the wait
     * to it. False (the default): the planner waits on the host first.
     */
    default boolean ordersOnGpu() {
        return false;
    }

    /** For {@link Agreement#WITHIN}: whether its last decline was because some rank passed host memory (the same on every rank). */
    default boolean declinedForHostMemory() {
        return false;
    }

    /** This rank's side of the agreement ({@link Agreement#VOTE}): whether its buffers of {@code call} suit the algorithm. */
    default boolean takes(CollectiveCall call) {
        return true;
    }

    /**
     * True when its time depends on the backend's MPI library, because it moves data through the
     * backend's transport (the library's own collectives, point-to-point, host staging): a time a
     * table measured under another backend says nothing of it here, and the planner takes it as
     * unmeasured. False for an algorithm that moves the data by itself (CUDA IPC, NCCL), whose
     * times hold under every backend.
     */
    default boolean timedWithBackend() {
        return true;
    }

    /**
     * Rank order among algorithms that no cost table times (lower first), and so the choice where
     * no table applies; the backend's own collectives are 0.
     */
    int preference();

    /** Runs {@code call}; false only for {@link Agreement#WITHIN} algorithms that declined on every rank. */
    boolean run(CollectiveCall call);

    /**
     * Enqueues {@code call} on {@code stream} to run on the GPU alone, without the host waiting
     * (a {@link dev.ferry.StreamCommunicator}'s call; every buffer device memory), and returns true;
     * false when this algorithm cannot, having done nothing: the same answer on every rank.
     */
    default boolean enqueue(CollectiveCall call, dev.ferry.DeviceStream stream) {
        return false;
    }

    /** True when {@link #enqueue} can run {@code c} on a stream by itself (its answer may still be false, on every rank alike). */
    default boolean enqueues(Collective c) {
        return false;
    }

    /** Throws {@link dev.ferry.StreamOperationException} when a call it enqueued failed after returning ({@link dev.ferry.spi.Transport#throwStreamFailure}). */
    default void throwStreamFailure() {
    }

    /** Frees what the algorithm keeps between calls (with its communicator). */
    @Override
    default void close() {
    }
}
