// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry;

/**
 * A stream-ordered view of a {@link Communicator} ({@link Communicator#onStream}): its calls take
 * device memory, enqueue the operation on the view's {@link DeviceStream} and return at once, with
 * no host synchronization on the caller's thread, as NCCL's calls do.
 *
 * <h2>Order</h2>
 * <ul>
 * <li>An operation starts after the work queued on the stream before its call (kernels, copies,
 *     earlier operations of this view) and work queued on the stream after the call sees its
 *     result. Work on other streams is not ordered with it: order it with events.</li>
 * <li>The buffers of a call may be written by work queued on the stream before the call and read
 *     by work queued after it; the host may touch them after {@link #synchronize()} (or a
 *     synchronize of the stream) that follows the call. Closing a buffer while an operation that
 *     uses it is queued is allowed: its memory is freed when the operation ends.</li>
 * <li>The view's operations run in the order of its calls, and match the other ranks' calls on
 *     their views of the same communicator in that order, as MPI matches calls on one
 *     communicator. A view communicates in a context of its own (a duplicate of the communicator,
 *     made by {@link Communicator#onStream}): its sends are received by the peer's view, not by
 *     the communicator's blocking calls.</li>
 * </ul>
 *
 * <h2>How it runs</h2>
 * Where the planner runs a collective on the GPU alone, it is launched on the stream itself, and a
 * CUDA graph may capture it: an allReduce of up to 16 KiB per rank among the ranks of one node
 * (one GPU each, or sharing one under CUDA MPS), one kernel per rank that meets its peers' on the
 * GPU ({@code ipc-short}); and NCCL's collectives, one GPU per rank. Such a path is set up at its
 * first call on a view, which must not be captured (make one call before the capture; a first call
 * under capture takes another path). Every other operation (MPI, the staged pipeline, the node's
 * other IPC collectives, point-to-point) is run by a thread of the view's when the stream reaches
 * it: an event marks the point, and the stream waits on a value that the thread writes when the
 * operation is done. Such an operation cannot be captured: {@link CaptureUnsupportedException}.
 * While the stream waits, the thread's own GPU work runs on other streams, which must not share a
 * hardware queue with it: Ferry sets {@code CUDA_DEVICE_MAX_CONNECTIONS} (8)
 * before the CUDA driver starts, unless the process set it (README, Settings); with 1, such an
 * operation can wait forever. An MPI library that waits for the context's streams inside its calls
 * on device memory (a CUDA-aware MPICH, backend {@code mvapich}) gets host copies of the
 * operation's device buffers on that thread instead.
 * A kernel that waits on the GPU for a peer gives up after {@code ferry.timeout} (when set); the
 * view's next call or {@link #synchronize()} throws {@link StreamOperationException}.
 *
 * <h2>Errors</h2>
 * Mistakes that the call can see (host memory, a closed buffer or view, a bad count, rank, tag or
 * root) throw at the call, as the blocking calls do. A failure after the call returned surfaces as
 * {@link StreamOperationException} on the next call or {@link #synchronize()} of this view, with
 * the stream released past the failed operation: never a hang of the stream.
 *
 * <p>One thread at a time may call a view (as MPI's {@code FUNNELED} level); views on different
 * streams are independent communicators.
 */
public interface StreamCommunicator extends AutoCloseable {
    /** The communicator this view was made from. */
    Communicator communicator();

    /** The stream the operations are enqueued on. */
    DeviceStream stream();

    /** This rank, as in {@link #communicator()}. */
    int rank();

    /** The number of ranks, as in {@link #communicator()}. */
    int size();

    /** Sends {@code count} elements to {@code dest} when the stream reaches the call. */
    void send(Buffer buffer, long count, DataType type, int dest, int tag);

    /**
     * Receives at most {@code count} elements from {@code source} when the stream reaches the call.
     * A longer message is a {@link TruncationException} (as the cause of a
     * {@link StreamOperationException}, on the next call or {@link #synchronize()}).
     */
    void recv(Buffer buffer, long count, DataType type, int source, int tag);

    /** A barrier among the views' streams: work after it on each stream starts once every rank's stream reached it. */
    void barrier();

    /** As {@link Communicator#broadcast}, in stream order. */
    void broadcast(Buffer buffer, long count, DataType type, int root);

    /** As {@link Communicator#scatter}, in stream order. */
    void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** As {@link Communicator#gather}, in stream order. */
    void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** As {@link Communicator#allGather}, in stream order. */
    void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** As {@link Communicator#allToAll}, in stream order. */
    void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** As {@link Communicator#reduce}, in stream order. */
    void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root);

    /** As {@link Communicator#allReduce}, in stream order. */
    void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** As {@link Communicator#reduceScatterBlock}, in stream order. */
    void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op);

    /**
     * Waits until every operation called so far is done and the stream has reached the last of
     * them; then throws {@link StreamOperationException} if one of them failed.
     */
    void synchronize();

    /**
     * Waits for the operations called so far (as {@link #synchronize()}, without throwing their
     * failure) and frees the view's communicator and thread. Collective, like
     * {@link Communicator#close()}; closing twice is harmless.
     */
    @Override
    void close();
}
