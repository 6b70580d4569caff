// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.MatchedMessage;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import java.util.Optional;

/**
 * The primitives a backend implements: the operations of {@link Communicator} on arguments the
 * front ({@link CheckedCommunicator}) has already checked, with no tracking, no buffer pins and no
 * device ordering of their own (the front does all of that once, around the outermost call).
 *
 * <p>A backend's provider returns its transport wrapped in the front
 * ({@code new CheckedCommunicator(transport)}), and the selection puts the collectives planner
 * ({@link CollectivePlanning}) between the two: a transport moves data, the planner decides how a
 * collective runs. Decorators ({@code staged}, {@code nccl}) hold the
 * inner backend's transport and call its primitives directly, so a chunk or a delegated call is
 * neither checked nor tracked a second time. Transports made by {@link #split} and
 * {@link #duplicate} belong to the caller, which closes them.
 *
 * <p>What the front guarantees to every primitive: buffers are alive, large enough, of a kind the
 * transport takes ({@link #supportsDeviceBuffers()}), receive buffers writable, send and receive
 * buffers disjoint; peers, roots and tags in range (wildcards only where MPI allows them); counts
 * not negative; the operator defined for the type; the threading level respected; {@code IN_PLACE}
 * never reaches a transport (the front stages it through scratch memory). Where a parameter is
 * significant only at some ranks it is null elsewhere, as each method says.
 */
public interface Transport extends AutoCloseable {
    /** The backend's name, as {@link Communicator#backend()}. */
    String backend();

    int rank();

    int size();

    /** The largest tag this transport carries. */
    int maxTag();

    /** Whether device memory may be passed to this transport's operations. */
    boolean supportsDeviceBuffers();

    /** Why device buffers are refused, for the exception message; asked only when {@link #supportsDeviceBuffers()} is false. */
    default String deviceBuffersUnsupportedReason() {
        return "backend " + backend() + " cannot carry device buffers; use -Dferry.backend=staged";
    }

    /**
     * Whether this transport's own reductions take {@code type} with {@code op} (MPI has no
     * FLOAT16, say): the collectives planner runs the others another way, and never asks a
     * transport for a reduction it does not do.
     */
    default boolean reduces(DataType type, ReduceOp op) {
        return true;
    }

    /**
     * Enqueues {@code call} (checked, every buffer device memory) on {@code stream} to run on the GPU
     * alone, when this transport's way of running it can (NCCL's collectives), and returns true;
     * false when it cannot, having done nothing (the stream-ordered view then runs it from its
     * thread). Called on every rank alike: the answer must be the same everywhere.
     */
    default boolean enqueueOnStream(StreamCollective call, dev.ferry.DeviceStream stream) {
        return false;
    }

    /** True when {@link #enqueueOnStream} may enqueue {@code call} (it may still answer false, on every rank alike). */
    default boolean enqueuesOnStream(StreamCollective call) {
        return false;
    }

    /**
     * True when every collective of this transport with buffers goes to code that waits for the
     * caller's earlier device work itself ({@link PendingDeviceWork}) before it touches a buffer:
     * the collectives planner. The front then leaves that wait to it on blocking collectives.
     * Not forwarded by {@link ForwardingTransport}: a wrapper says it of itself.
     */
    default boolean waitsForPendingDeviceWork() {
        return false;
    }

    /**
     * True when the library under this transport may wait for every stream of a device's context
     * inside its own calls on device memory (a CUDA-aware MPICH closes each message's IPC mapping
     * with {@code cuIpcCloseMemHandle}, which waits for them). A stream-ordered view's thread,
     * whose caller's stream waits for the call it runs, then hands such a library host copies of
     * the call's device buffers instead ({@link HeldStream}).
     */
    default boolean waitsForStreamsInDeviceCalls() {
        return false;
    }

    /**
     * Throws {@link dev.ferry.StreamOperationException} when work that {@link #enqueueOnStream}
     * put on a stream failed after its call returned (a kernel that gave up waiting for a peer); the
     * stream-ordered view asks at each call and at {@code synchronize()}. Cheap: no device call.
     */
    default void throwStreamFailure() {
    }

    /**
     * Advances what the program left pending on this transport (MPI's progress rule), for a rank
     * that waits for its peers inside a collective that Ferry runs itself: a probe makes an MPI
     * library progress its requests.
     */
    default void progress() {
        iprobe(Communicator.ANY_SOURCE, Communicator.ANY_TAG);
    }

    /**
     * True when this transport stages host buffers as it stages device memory (the {@code staged}
     * backend's mode for tests on machines without a GPU): the planner then lets algorithms that
     * fold device buffers run on host buffers, folded on the host, so that their protocol is tested.
     */
    default boolean stagesHostBuffers() {
        return false;
    }

    /**
     * The collective algorithm this backend asks for where it can serve a call (backend
     * {@code nccl}: {@code nccl}), or null: the planner's choice by cost.
     */
    default String preferredAlgorithm() {
        return null;
    }

    // ---- point to point ----------------------------------------------------------------------

    void send(Buffer buffer, long count, DataType type, int dest, int tag);

    Status recv(Buffer buffer, long count, DataType type, int source, int tag);

    Request isend(Buffer buffer, long count, DataType type, int dest, int tag);

    Request irecv(Buffer buffer, long count, DataType type, int source, int tag);

    /**
     * {@link #recv} without blocking the calling thread: the same receive (matched, truncated and
     * checked as {@code recv} does it), completed through the returned request, which is tested
     * and waited for like {@link #irecv}'s. The front makes the blocking receives of virtual
     * threads with it. This default is {@link #irecv}, for transports whose {@code irecv} receives
     * as their {@code recv} does.
     */
    default Request startRecv(Buffer buffer, long count, DataType type, int source, int tag) {
        return irecv(buffer, count, type, source, tag);
    }

    Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                    Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag);

    /** Status of the next message matching {@code source} and {@code tag} (wildcards allowed), its byte count the whole message's; blocks. */
    Status probe(int source, int tag);

    /** {@link #probe} without blocking. */
    Optional<Status> iprobe(int source, int tag);

    /**
     * Matches the next message and takes it out of matching; blocks. The front calls the
     * message's {@code recv} or {@code irecv} at most once, with checked arguments, and
     * {@code irecv} only with a buffer that holds the whole message; {@code recv} with a smaller
     * buffer receives the message whole and throws {@link dev.ferry.TruncationException}.
     */
    MatchedMessage mprobe(int source, int tag);

    /** {@link #mprobe} without blocking. */
    Optional<MatchedMessage> improbe(int source, int tag);

    // ---- collectives -------------------------------------------------------------------------

    void barrier();

    void broadcast(Buffer buffer, long count, DataType type, int root);

    /** {@code sendBuffer} is null except at root. */
    void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** {@code recvBuffer} is null except at root. */
    void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** {@code recvBuffer} is null except at root. */
    void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root);

    void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** {@code sendBuffer} and {@code sendBlocks} are null except at root. */
    void scatterV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, long recvCount, DataType type, int root);

    /** {@code recvBuffer} and {@code recvBlocks} are null except at root. */
    void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type, int root);

    void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, Blocks recvBlocks, DataType type);

    void allToAllV(Buffer sendBuffer, Blocks sendBlocks, Buffer recvBuffer, Blocks recvBlocks, DataType type);

    void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op);

    /** {@code blocks}: the receive counts, laid out one after the other in the send buffer ({@link Blocks#contiguous}). */
    void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, Blocks blocks, DataType type, ReduceOp op);

    void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** {@code recvBuffer} is null at rank 0 (whose receive buffer is never written). */
    void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    // ---- communicators -----------------------------------------------------------------------

    /** {@code color} is -1 for "in no communicator"; returns null then. Collective. */
    Transport split(int color, int key);

    /** Collective. */
    Transport duplicate();

    /**
     * Starts a duplicate without waiting for the other ranks: a local call, as MPI_Comm_idup, made
     * by every rank at the same place in this transport's sequence of collectives (it counts as one
     * of them). {@link PendingDuplicate#finish()}, on any one thread, waits for the other ranks and
     * returns the duplicate. The front makes the lane of a communicator's non-blocking collectives
     * with it ({@code CollectiveLane}), so that starting one is a local call, as in MPI.
     *
     * <p>A transport made of others (a decorator) starts the duplicate of what it wraps here and
     * builds itself over it in {@code finish()}, where its own collectives run on the new
     * communicator alone. This default duplicates at once ({@link #duplicate()}, a collective call):
     * right, but starting a non-blocking collective on such a transport is then collective too.
     */
    default PendingDuplicate startDuplicate() {
        return PendingDuplicate.done(duplicate());
    }

    /** Frees the native communicator; called once. */
    @Override
    void close();
}
