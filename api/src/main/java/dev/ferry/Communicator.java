// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A group of ranks that exchange messages: MPI's communicator, for host and device buffers.
 *
 * <p>Counts are element counts of the given {@link DataType} and are {@code long}; a backend
 * splits messages its binding cannot carry in one call. Every argument is checked before any
 * native call: a bad argument raises an {@link InvalidArgumentException} subclass and leaves the
 * communicator usable. Errors returned by MPI raise {@link MpiException}.
 *
 * <p>Collectives must be called by every rank of the communicator, in the same order, with
 * matching counts, datatypes, operators and roots, as in MPI. Rooted collectives ignore the
 * buffer arguments documented as "significant only at root" on other ranks (pass {@code null}).
 *
 * <p>Vector collectives ({@link #scatterV}, {@link #gatherV}, {@link #allGatherV},
 * {@link #allToAllV}) describe a buffer as one <em>block</em> per rank: block {@code i} is
 * {@code counts[i]} elements of the call's {@link DataType} starting {@code displacements[i]}
 * elements from the start of the buffer (counts and displacements are in elements, never bytes).
 * The arrays have exactly {@link #size()} entries ({@link InvalidArgumentException} otherwise, and
 * for a null array where it is significant); counts and displacements are {@code >= 0}
 * ({@link InvalidCountException}); every non-empty block lies within its buffer
 * ({@link BufferTooSmallException}). Blocks of a receive buffer must not overlap
 * ({@link BufferOverlapException}); blocks of a send buffer may. Bytes of a receive buffer between
 * and after its blocks are never written. Send and receive buffers must not overlap. A count that
 * must equal a count on another rank (what one rank sends, another receives) is checked wherever
 * one rank knows both (a rank's own block): {@link InvalidCountException}. Between ranks the
 * counts must match, as in MPI: Ferry cannot see the other rank's count, and a receive count
 * smaller than what arrives gives whatever the MPI library reports ({@link TruncationException}
 * or {@link MpiException} where it detects it).
 *
 * <p>Counts beyond what a binding takes in one call (an {@code int} count, or more bytes than
 * {@code ferry.maxPieceBytes}) are carried on every backend: vector collectives then run as one
 * point-to-point message per pair of ranks, reduce-scatter as one reduce per block, and scan and
 * exscan piece by piece.
 *
 * <p>Device buffers are carried only by backends that support them ({@link #supportsDeviceBuffers()});
 * others throw {@link UnsupportedBufferException}.
 *
 * <p>Device ordering, the same on every backend and launcher: device work the caller submitted
 * before a call (a kernel or copy on any stream: the legacy or per-thread default stream, a
 * blocking or non-blocking stream; in the device's primary context, in the context that owns the
 * buffer's memory, or in a context the caller made current) has completed before Ferry or MPI
 * reads or writes the call's device buffers: no synchronization is needed before a send, isend or
 * collective. Ferry does this by synchronizing those contexts at the start of the call (a few
 * microseconds when nothing is queued; see the README for the measured cost). When a receive (or
 * a collective) has completed, its data is in device memory and visible to any work the caller
 * submits next, on any stream. The caller's current context is the same after a call as before it.
 *
 * <p>Buffer lifetime: a buffer passed to a non-blocking call is pinned until its {@link Request}
 * completes. Closing it meanwhile is allowed and safe: the buffer is closed at once (new calls
 * refuse it with {@link BufferFreedException}) and its memory is freed when the request completes;
 * a wrapped ByteBuffer or segment stays reachable until then. Read-only memory (a read-only
 * segment or ByteBuffer) is never a receive buffer: {@link BufferReadOnlyException}.
 *
 * <p>Progress: as in MPI, a pending operation completes while its rank is blocked in any other
 * call: a rank may {@link #isend} and then block in a {@link #barrier()}, a collective or a
 * {@link #recv} until its peer received the message. On {@code staged}, whose transfers Ferry
 * drives itself, a progress thread advances them between and during other calls; it needs
 * MPI_THREAD_MULTIPLE (what Ferry asks for by default): with a lower {@link #threadLevel()}, a
 * staged transfer advances only inside Ferry calls on the same process, and such a program must
 * complete its requests before it blocks in a collective.
 *
 * <p>Threads ({@link #threadLevel()}): with {@link ThreadLevel#MULTIPLE} (what Ferry asks for, and
 * what Open MPI and MPICH provide) any thread may call any communicator at any time, e.g. several
 * threads exchanging point-to-point messages with distinct tags on one communicator. Collectives
 * (and {@link #split}, {@link #duplicate}) on one communicator must not run from two threads at
 * once, as in MPI: Ferry refuses an overlapping collective with {@link ThreadingException}; give
 * each thread its own {@link #duplicate()}. With {@link ThreadLevel#SERIALIZED} a call made while
 * another thread is inside a call of this process throws {@link ThreadingException}; with
 * {@link ThreadLevel#FUNNELED} calls from a thread other than the one that opened Ferry throw it.
 * Ferry's own state is thread-safe; closing a communicator or freeing a buffer while another
 * thread uses it is the caller's error, as in MPI.
 *
 * <p>Watchdog: with {@code -Dferry.timeout=SECONDS}, a blocking call (send, recv, sendRecv, every
 * collective, split, duplicate, {@link #probe}, {@link #mprobe}, {@link MatchedMessage#recv},
 * {@link Request#waitFor()}, {@link Request#waitAny}, {@link Request#cancel()}, MPI_Finalize) that takes longer is
 * reported on stderr (operation, communicator, peer or root, tag) and the job is aborted; see
 * {@code docs/reliability.md}. {@link Request#waitFor(java.time.Duration)} is the recoverable form.
 */
public interface Communicator extends AutoCloseable {
    /** Receive from any rank. */
    int ANY_SOURCE = -1;
    /** Receive with any tag. */
    int ANY_TAG = -1;

    /**
     * MPI_IN_PLACE: passed as the send buffer of {@link #allReduce}, {@link #allGather},
     * {@link #allToAll}, {@link #reduceScatterBlock}, {@link #reduceScatter}, of {@link #reduce} and
     * {@link #gather} at the root, or as the receive buffer of {@link #scatter} at the root (and of
     * their non-blocking forms), it says that the data is taken from, and the result left in, the
     * receive buffer (the send buffer for scatter):
     * <ul>
     *   <li>allReduce, reduce (root): the input is the receive buffer's {@code count} elements,
     *       replaced by the result;</li>
     *   <li>allGather, gather (root): this rank's contribution is already in its block of the
     *       receive buffer ({@code [rank * count, (rank + 1) * count)}), which is left as it is;</li>
     *   <li>scatter (root): the root's block stays in the send buffer and is not copied anywhere;</li>
     *   <li>allToAll: the blocks to send are in the receive buffer, replaced by the blocks received;</li>
     *   <li>reduceScatterBlock, reduceScatter: the input (the blocks of every rank) is in the receive
     *       buffer, which must hold all of it; this rank's result is written to its beginning.</li>
     * </ul>
     * Ferry copies the in-place data once into memory of the same kind (host, or the same device)
     * before the transport runs. Anywhere else, and at a non-root rank of a rooted collective,
     * IN_PLACE is an {@link InvalidArgumentException}.
     */
    Buffer IN_PLACE = HostBuffer.inPlaceMarker();

    /** This process's rank, {@code 0 <= rank < size}. */
    int rank();

    /** Number of ranks. */
    int size();

    /** Name of the backend carrying this communicator ({@code ompi}, {@code mvapich}, {@code staged}). */
    String backend();

    /** Whether device buffers can be passed to this communicator. */
    boolean supportsDeviceBuffers();

    /** Largest tag allowed (MPI_TAG_UB, at least 32767). */
    int maxTag();

    /** What the MPI library under this communicator allows threads to do (see the class comment). */
    default ThreadLevel threadLevel() {
        return ThreadLevel.MULTIPLE;
    }

    // ---- point to point ------------------------------------------------------------------

    /** Sends {@code count} elements to {@code dest}; returns once the buffer may be reused. */
    void send(Buffer buffer, long count, DataType type, int dest, int tag);

    /**
     * Receives up to {@code count} elements from {@code source} ({@link #ANY_SOURCE} allowed)
     * with {@code tag} ({@link #ANY_TAG} allowed). A longer message raises {@link TruncationException}.
     */
    Status recv(Buffer buffer, long count, DataType type, int source, int tag);

    /** Starts a send; the buffer must not change until the request completes. */
    Request isend(Buffer buffer, long count, DataType type, int dest, int tag);

    /**
     * Starts a receive; the buffer must not be read until the request completes. A longer message
     * fails the request with {@link TruncationException} (at {@link Request#waitFor()} or
     * {@link Request#test()}); the buffer then holds the message's first bytes.
     *
     * <p>A receive into device memory is matched by Ferry before the MPI library receives into it
     * (a probe, then a receive of exactly the message), so that the library never truncates a
     * device receive (Open MPI's CUDA path crashes the process after one) and the sender of a
     * truncated message is never left waiting; MPI's matching order still holds. Such a receive
     * progresses in the request's waits and tests and, under {@code MPI_THREAD_MULTIPLE}, on a
     * thread of Ferry's while this rank is inside other calls; below that thread level, complete
     * it before blocking in another call. {@code ferry.matchReceives=all} matches every receive so.
     */
    Request irecv(Buffer buffer, long count, DataType type, int source, int tag);

    /** Sends to {@code dest} and receives from {@code source} at once, without deadlock. */
    Status sendRecv(Buffer sendBuffer, long sendCount, DataType sendType, int dest, int sendTag,
                    Buffer recvBuffer, long recvCount, DataType recvType, int source, int recvTag);

    // ---- collectives ---------------------------------------------------------------------

    /** Blocks until every rank has called it. */
    void barrier();

    /** Copies {@code count} elements of root's buffer into every rank's buffer. */
    void broadcast(Buffer buffer, long count, DataType type, int root);

    /**
     * Root's {@code sendBuffer} holds {@code size() * count} elements (significant only at root);
     * rank {@code i} receives elements {@code [i*count, (i+1)*count)} into {@code recvBuffer}.
     */
    void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /**
     * Every rank sends {@code count} elements; root's {@code recvBuffer} (significant only at root)
     * receives {@code size() * count} elements in rank order.
     */
    void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** Like {@link #gather} with the result on every rank. */
    void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** Combines {@code count} elements from every rank with {@code op}; root receives the result. */
    void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root);

    /** Like {@link #reduce} with the result on every rank. */
    void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /**
     * Every rank sends block {@code j} (of {@code count} elements) of {@code sendBuffer} to rank {@code j},
     * and receives rank {@code i}'s block into block {@code i} of {@code recvBuffer}.
     */
    void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    // ---- non-blocking collectives ----------------------------------------------------------
    //
    // Each starts the collective of the same name and returns at once; its Request completes when
    // the collective has completed on this rank (waitFor, test, Request.waitAll). The arguments are
    // checked as in the blocking form before anything starts, and the buffers follow the rules of
    // isend/irecv: not written (sent data) or read (received data) until the request completes;
    // closing them meanwhile is safe. Device work submitted before the call completes before the
    // collective reads the buffers. All collectives of a communicator, blocking and non-blocking,
    // must be started by every rank in the same order; several may be in flight at once. A started
    // collective progresses without further calls (it runs on a thread of Ferry's, on a duplicate
    // of this communicator made by the first non-blocking collective, which is therefore a
    // collective call like duplicate()); it needs ThreadLevel.MULTIPLE, else ThreadingException.
    // close() waits for the communicator's started collectives. The Status of their requests
    // carries no information (ANY_SOURCE, ANY_TAG, 0 bytes). A failure (an MpiException, the
    // watchdog) is thrown by waitFor or test, as the blocking form would throw it.

    /** Non-blocking {@link #barrier()}: the request completes once every rank has started it. */
    Request ibarrier();

    /** Non-blocking {@link #broadcast}; see the rules above. */
    Request ibroadcast(Buffer buffer, long count, DataType type, int root);

    /** Non-blocking {@link #scatter}; see the rules above. */
    Request iscatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** Non-blocking {@link #gather}; see the rules above. */
    Request igather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root);

    /** Non-blocking {@link #allGather}; see the rules above. */
    Request iallGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);

    /** Non-blocking {@link #reduce}; see the rules above. */
    Request ireduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root);

    /** Non-blocking {@link #allReduce}; see the rules above. */
    Request iallReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** Non-blocking {@link #allToAll}; see the rules above. */
    Request iallToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type);
    // ---- vector collectives, reduce-scatter, prefix reductions (blocks: see the class comment) ----

    /**
     * The vector form of {@link #scatter}: root sends block {@code i} of {@code sendBuffer}
     * ({@code sendCounts[i]} elements at element {@code displacements[i]}) to rank {@code i}, which
     * receives it into the first {@code recvCount} elements of {@code recvBuffer}.
     *
     * <p>{@code sendBuffer}, {@code sendCounts} and {@code displacements} are significant only at
     * root; other ranks may pass {@code null}. Every rank's {@code recvCount} must equal root's
     * {@code sendCounts[rank]}; root's own is checked ({@link InvalidCountException}). Send blocks
     * may overlap (the same elements sent to several ranks). Collective.
     *
     * @param sendBuffer    root's data; null elsewhere
     * @param sendCounts    elements for each rank ({@code size()} entries, {@code >= 0}); null except at root
     * @param displacements where each rank's block starts in {@code sendBuffer}, in elements; null except at root
     * @param recvBuffer    this rank's block, {@code recvCount} elements
     * @param recvCount     elements this rank receives ({@code >= 0}, may differ between ranks)
     * @param type          element type
     * @param root          the sending rank
     */
    void scatterV(Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount, DataType type, int root);

    /**
     * The vector form of {@link #gather}: every rank sends {@code sendCount} elements; root
     * receives rank {@code i}'s into block {@code i} of {@code recvBuffer} ({@code recvCounts[i]}
     * elements at element {@code displacements[i]}). Bytes of {@code recvBuffer} outside the blocks
     * are left untouched.
     *
     * <p>{@code recvBuffer}, {@code recvCounts} and {@code displacements} are significant only at
     * root; other ranks may pass {@code null}. Root's {@code recvCounts[i]} must equal rank
     * {@code i}'s {@code sendCount} (root's own is checked: {@link InvalidCountException}); the
     * receive blocks must not overlap ({@link BufferOverlapException}). Collective.
     *
     * @param sendBuffer    this rank's {@code sendCount} elements
     * @param sendCount     elements this rank sends ({@code >= 0}, may differ between ranks)
     * @param recvBuffer    root's result; null elsewhere
     * @param recvCounts    elements from each rank ({@code size()} entries); null except at root
     * @param displacements where each rank's block goes in {@code recvBuffer}, in elements; null except at root
     * @param type          element type
     * @param root          the receiving rank
     */
    void gatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type, int root);

    /**
     * Like {@link #gatherV} with the result on every rank: {@code recvBuffer}, {@code recvCounts}
     * and {@code displacements} are significant on every rank and must be the same on every rank;
     * {@code recvCounts[rank()]} must equal {@code sendCount} ({@link InvalidCountException}).
     * Collective.
     */
    void allGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type);

    /**
     * The vector form of {@link #allToAll}: every rank sends block {@code j} of
     * {@code sendBuffer} ({@code sendCounts[j]} elements at element {@code sendDisplacements[j]})
     * to rank {@code j}, and receives rank {@code i}'s block for it into block {@code i} of
     * {@code recvBuffer} ({@code recvCounts[i]} elements at element {@code recvDisplacements[i]}).
     * Rank {@code i}'s {@code sendCounts[j]} must equal rank {@code j}'s {@code recvCounts[i]};
     * a rank's own block is checked ({@code sendCounts[rank()] == recvCounts[rank()]}, else
     * {@link InvalidCountException}). Every argument is significant on every rank. Collective.
     */
    void allToAllV(Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                   long[] recvDisplacements, DataType type);

    /**
     * Reduce-scatter with equal blocks (MPI_Reduce_scatter_block): the element-wise reduction
     * with {@code op} of every rank's {@code size() * recvCount} elements is computed, and rank
     * {@code i} receives elements {@code [i*recvCount, (i+1)*recvCount)} of it into
     * {@code recvBuffer}. Types and operators as for {@link #allReduce}
     * ({@link InvalidReduceOpException}). Collective, with the same {@code recvCount} on every rank.
     */
    void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op);

    /**
     * Reduce-scatter (MPI_Reduce_scatter): the element-wise reduction with {@code op} of every
     * rank's {@code sum(recvCounts)} elements is computed, and rank {@code i} receives the
     * {@code recvCounts[i]} elements that start at element {@code recvCounts[0] + ... +
     * recvCounts[i-1]} into {@code recvBuffer}. {@code recvCounts} has {@code size()} entries,
     * {@code >= 0}, and must be the same on every rank. Collective.
     */
    void reduceScatter(Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op);

    /**
     * Inclusive prefix reduction (MPI_Scan): rank {@code i} receives the element-wise reduction
     * with {@code op} of the {@code count} elements of ranks {@code 0..i}, in rank order (rank 0
     * receives its own). Types and operators as for {@link #allReduce}. Collective.
     */
    void scan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /**
     * Exclusive prefix reduction (MPI_Exscan): rank {@code i > 0} receives the element-wise
     * reduction with {@code op} of the {@code count} elements of ranks {@code 0..i-1}, in rank
     * order. Rank 0 receives nothing: its {@code recvBuffer} may be {@code null}; when given, it is
     * checked as on the other ranks and is never written (Ferry hands MPI memory of its own at
     * rank 0, whatever the library does with it). Collective.
     */
    void exscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** Non-blocking {@link #scatterV} (the arrays are copied at the call); see the rules of the non-blocking collectives. */
    Request iscatterV(Buffer sendBuffer, long[] sendCounts, long[] displacements, Buffer recvBuffer, long recvCount, DataType type, int root);

    /** Non-blocking {@link #gatherV} (the arrays are copied at the call); see the rules of the non-blocking collectives. */
    Request igatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type, int root);

    /** Non-blocking {@link #allGatherV} (the arrays are copied at the call); see the rules of the non-blocking collectives. */
    Request iallGatherV(Buffer sendBuffer, long sendCount, Buffer recvBuffer, long[] recvCounts, long[] displacements, DataType type);

    /** Non-blocking {@link #allToAllV} (the arrays are copied at the call); see the rules of the non-blocking collectives. */
    Request iallToAllV(Buffer sendBuffer, long[] sendCounts, long[] sendDisplacements, Buffer recvBuffer, long[] recvCounts,
                       long[] recvDisplacements, DataType type);

    /** Non-blocking {@link #reduceScatterBlock}; see the rules of the non-blocking collectives. */
    Request ireduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op);

    /** Non-blocking {@link #reduceScatter} (the array is copied at the call); see the rules of the non-blocking collectives. */
    Request ireduceScatter(Buffer sendBuffer, Buffer recvBuffer, long[] recvCounts, DataType type, ReduceOp op);

    /** Non-blocking {@link #scan}; see the rules of the non-blocking collectives. */
    Request iscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    /** Non-blocking {@link #exscan}; see the rules of the non-blocking collectives. */
    Request iexscan(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op);

    // ---- communicators -------------------------------------------------------------------

    /**
     * Splits into disjoint communicators, one per {@code color}, ranks ordered by {@code key}
     * (then by old rank). Collective. A negative color means "not in any": returns {@code null}.
     */
    Communicator split(int color, int key);

    /** A new communicator with the same ranks and a separate message space. Collective. */
    Communicator duplicate();

    /**
     * A stream-ordered view of this communicator: its calls on device buffers are enqueued on
     * {@code stream} and return at once ({@link StreamCommunicator} says what holds). Collective,
     * like {@link #duplicate()} (the view communicates in a context of its own); close the view
     * before this communicator.
     *
     * @throws UnsupportedBufferException without a GPU runtime, or when the stream's device is not
     *         this rank's
     * @throws ThreadingException under {@code SINGLE}: the view's thread calls MPI
     */
    default StreamCommunicator onStream(DeviceStream stream) {
        throw new UnsupportedOperationException(getClass().getName() + " has no stream-ordered view");
    }

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Frees the communicator. Closing the last communicator opened by {@link Ferry#open()}
     * does not finalize MPI; that happens at exit or with {@link Ferry#shutdown()}.
     * Idempotent.
     */
    @Override
    void close();

    // ---- probing: the size of a message before its receive ---------------------------------

    /**
     * Blocks until a message from {@code source} ({@link #ANY_SOURCE} allowed) with {@code tag}
     * ({@link #ANY_TAG} allowed) can be received, and returns its status without receiving it
     * (MPI_Probe): its source, tag and byte count, the whole message as its sender sent it whatever
     * the backend does with it underneath (pieces, staging chunks); {@link Status#count(DataType)}
     * gives its element count, so that the receive buffer can be allocated exactly. A receive
     * posted next with the status's source and tag gets that message, unless another thread
     * receives it first: where several threads receive, use {@link #mprobe}. Pending operations
     * progress while it blocks, as in any blocking call.
     */
    Status probe(int source, int tag);

    /**
     * {@link #probe} without blocking (MPI_Iprobe): the status of a message that can be received
     * now, or empty. Each call lets pending operations progress, so it may be polled.
     */
    java.util.Optional<Status> iprobe(int source, int tag);

    /**
     * Blocks until a message from {@code source} ({@link #ANY_SOURCE} allowed) with {@code tag}
     * ({@link #ANY_TAG} allowed) arrives and takes it out of matching (MPI_Mprobe): no other
     * receive can get it; the returned {@link MatchedMessage} holds its status and receives it,
     * once. Pending operations progress while it blocks.
     */
    MatchedMessage mprobe(int source, int tag);

    /** {@link #mprobe} without blocking (MPI_Improbe): a matched message, or empty when none has arrived. */
    java.util.Optional<MatchedMessage> improbe(int source, int tag);
}
