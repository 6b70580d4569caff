// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.CaptureUnsupportedException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.DeviceStream;
import dev.ferry.ReduceOp;
import dev.ferry.StreamCommunicator;
import dev.ferry.StreamOperationException;
import dev.ferry.ThreadLevel;
import dev.ferry.ThreadingException;
import dev.ferry.UnsupportedBufferException;
import java.util.ArrayDeque;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The stream-ordered view of a {@link CheckedCommunicator} ({@link StreamCommunicator} says what
 * holds). Each call is checked and its buffers pinned on the caller's thread; then either the
 * transport enqueues it on the stream by itself ({@link Transport#enqueueOnStream}: NCCL), or the
 * stream is held at a mark ({@link DeviceSupport.StreamOrder}) and the view's thread runs the call
 * on the view's own communicator (a duplicate) once the stream reached the mark, then releases it.
 * A failure on the thread is kept and thrown by the next call; the stream is released whatever
 * happens, so it never waits forever.
 */
final class StreamOrderedCommunicator implements StreamCommunicator {
    private static final ThreadLocal<StreamOrderedCommunicator> VIEW_THREAD = new ThreadLocal<>();
    /** True once a view's thread started: until then no thread is one, and every call skips the look-up of {@link #VIEW_THREAD}. */
    private static volatile boolean anyViewThread;
    /** Deferred work beyond which a call runs it before it is enqueued (it waits for the stream then). */
    private static final int DEFERRED_LIMIT = 64;
    /** Pending marks at which a call looks which the stream has passed ({@link #retire}). */
    private static final int RETIRE_BATCH = DeviceSupport.StreamOrder.MAX_HELD / 2;
    private static final Runnable STOP = () -> { };

    private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> deferred = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final CheckedCommunicator owner;
    private final CheckedCommunicator own;
    private final DeviceStream stream;
    private final DeviceSupport.StreamOrder order;
    private final Thread thread;
    private final LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();
    /** Marks not yet passed, oldest first, with the pins of their calls. */
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private volatile Throwable failure;
    private boolean closed;
    /** Calls queued for the view's thread and not yet run by it. */
    private final java.util.concurrent.atomic.AtomicInteger queued = new java.util.concurrent.atomic.AtomicInteger();
    /** Pins of calls captured into a graph, released at the next synchronize or close. */
    private final java.util.List<BufferUse.Pins> captured = new java.util.ArrayList<>();

    /** A call's mark: released by the view's thread (held marks), and passed by the stream. */
    private static final class Pending {
        final long mark;
        final boolean held;
        final BufferUse.Pins pins;
        volatile boolean released;

        Pending(long mark, boolean held, BufferUse.Pins pins) {
            this.mark = mark;
            this.held = held;
            this.pins = pins;
            this.released = !held;
        }
    }

    private StreamOrderedCommunicator(CheckedCommunicator owner, CheckedCommunicator own, DeviceStream stream, DeviceSupport.StreamOrder order) {
        this.owner = owner;
        this.own = own;
        this.stream = stream;
        this.order = order;
        this.thread = Thread.ofPlatform().daemon().name("ferry-stream-" + own).unstarted(this::work);
        thread.start();
    }

    /** The view of {@code owner} on {@code stream}; collective (it duplicates {@code owner}). */
    static StreamCommunicator open(CheckedCommunicator owner, DeviceStream stream) {
        if (stream == null) {
            throw new dev.ferry.InvalidArgumentException("onStream: the stream is null");
        }
        if (owner.threadLevel() != ThreadLevel.MULTIPLE) {
            throw new ThreadingException("onStream: a stream-ordered view runs MPI on a thread of Ferry's, which needs MPI_THREAD_MULTIPLE; "
                    + owner + " has " + owner.threadLevel().mpiName() + " (request MULTIPLE: -Dferry.threads=multiple)");
        }
        DeviceSupport.StreamOrder order = DeviceSupport.get().streamOrder(stream);
        CheckedCommunicator own;
        try {
            own = (CheckedCommunicator) owner.duplicate();
        } catch (RuntimeException | Error e) {
            order.close();
            throw e;
        }
        return new StreamOrderedCommunicator(owner, own, stream, order);
    }

    /** True on a view's thread: its calls are already ordered by their stream ({@link BufferUse}). */
    static boolean onViewThread() {
        return anyViewThread && VIEW_THREAD.get() != null;
    }

    /** On a view's thread, keeps {@code work} for the caller's thread ({@link HeldStream}) and answers true; elsewhere false. */
    static boolean deferOnViewThread(Runnable work) {
        StreamOrderedCommunicator view = VIEW_THREAD.get();
        if (view == null) return false;
        view.deferred.add(work);
        return true;
    }

    /** Runs the work the view's thread deferred ({@link HeldStream}); on the caller's thread, with no call of the view's held. */
    private void runDeferred() {
        RuntimeException first = null;
        for (Runnable r; (r = deferred.poll()) != null; ) {
            try {
                r.run();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    @Override
    public Communicator communicator() {
        return owner;
    }

    @Override
    public DeviceStream stream() {
        return stream;
    }

    @Override
    public int rank() {
        return own.rank();
    }

    @Override
    public int size() {
        return own.size();
    }

    // ---- calls -----------------------------------------------------------------------------

    @Override
    public void send(Buffer buffer, long count, DataType type, int dest, int tag) {
        begin("send");
        own.checkStreamSend(buffer, count, type, dest, tag);
        onThread("send", (c, b) -> c.send(b[0], count, type, dest, tag), buffer);
    }

    @Override
    public void recv(Buffer buffer, long count, DataType type, int source, int tag) {
        begin("recv");
        own.checkStreamRecv(buffer, count, type, source, tag);
        onThread("recv", (c, b) -> c.recv(b[0], count, type, source, tag), buffer);
    }

    @Override
    public void barrier() {
        collective(new StreamCollective(StreamCollective.Kind.BARRIER, null, null, 0, null, null, -1));
    }

    @Override
    public void broadcast(Buffer buffer, long count, DataType type, int root) {
        collective(new StreamCollective(StreamCollective.Kind.BROADCAST, buffer, null, count, type, null, root));
    }

    @Override
    public void scatter(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        collective(new StreamCollective(StreamCollective.Kind.SCATTER, sendBuffer, recvBuffer, count, type, null, root));
    }

    @Override
    public void gather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, int root) {
        collective(new StreamCollective(StreamCollective.Kind.GATHER, sendBuffer, recvBuffer, count, type, null, root));
    }

    @Override
    public void allGather(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        collective(new StreamCollective(StreamCollective.Kind.ALL_GATHER, sendBuffer, recvBuffer, count, type, null, -1));
    }

    @Override
    public void allToAll(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type) {
        collective(new StreamCollective(StreamCollective.Kind.ALL_TO_ALL, sendBuffer, recvBuffer, count, type, null, -1));
    }

    @Override
    public void reduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op, int root) {
        collective(new StreamCollective(StreamCollective.Kind.REDUCE, sendBuffer, recvBuffer, count, type, op, root));
    }

    @Override
    public void allReduce(Buffer sendBuffer, Buffer recvBuffer, long count, DataType type, ReduceOp op) {
        collective(new StreamCollective(StreamCollective.Kind.ALL_REDUCE, sendBuffer, recvBuffer, count, type, op, -1));
    }

    @Override
    public void reduceScatterBlock(Buffer sendBuffer, Buffer recvBuffer, long recvCount, DataType type, ReduceOp op) {
        collective(new StreamCollective(StreamCollective.Kind.REDUCE_SCATTER_BLOCK, sendBuffer, recvBuffer, recvCount, type, op, -1));
    }

    private void collective(StreamCollective c) {
        begin(c.kind().label);
        own.checkStreamCollective(c);
        Buffer[] buffers = c.buffers();
        BufferUse.Pins pins = pin(c.kind().label, buffers);
        boolean enqueued;
        try {
            Transport t = own.transport();
            if (queued.get() > 0 && t.enqueuesOnStream(c)) {
                // the view's thread must have made its earlier calls first: they may use the same NCCL communicator,
                // which orders its operations as they are launched (a call launched on the stream before an earlier
                // one is made by the thread would wait for it on the GPU while it waits for the stream: a deadlock),
                // and the first call on the GPU alone may set NCCL up with collectives on this view's communicator
                awaitThreadIdle();
            }
            enqueued = t.enqueueOnStream(c, stream);
        } catch (RuntimeException | Error e) {
            pins.release();
            throw e;
        }
        if (enqueued) {
            if (order.capturing()) {
                // no event may be queried that a graph captures: the pins wait for the next synchronize or close
                captured.add(pins);
            } else {
                // on the GPU alone: the pins go when the stream passes the call
                pending.add(new Pending(order.mark(false), false, pins));
            }
            return;
        }
        try {
            order.prepareKernels(c.op() != null ? c.type() : null); // here, not on the view's thread while the stream waits for it
        } catch (RuntimeException | Error e) {
            pins.release();
            throw e;
        }
        Buffer[] arguments = {c.send(), c.recv()}; // the in-place marker included
        schedule(c.kind().label, (comm, b) -> new StreamCollective(c.kind(), b[0], b[1], c.count(), c.type(), c.op(), c.root()).runOn(comm), arguments,
                pins);
    }

    /** A call the view's thread runs, given the communicator and the buffers to use (the call's own, or host copies of them). */
    private interface ThreadCall {
        void run(Communicator comm, Buffer[] buffers);
    }

    /** Runs {@code call} on the view's thread when the stream reaches this point. */
    private void onThread(String op, ThreadCall call, Buffer... buffers) {
        schedule(op, call, buffers, pin(op, buffers));
    }

    /**
     * Runs {@code call} with {@code buffers} on {@code own}; where the transport's library waits for
     * the context's streams inside its calls on device memory ({@link Transport#waitsForStreamsInDeviceCalls}),
     * which includes the stream that waits for this call, with host copies of the device buffers,
     * copied back after the call (the in-place marker and null stay as they are).
     */
    private void runOnThread(ThreadCall call, Buffer[] buffers) {
        boolean stage = false;
        for (Buffer b : buffers) stage |= b != null && b != Communicator.IN_PLACE && b.kind().needsCuda();
        if (!stage || !own.transport().waitsForStreamsInDeviceCalls()) {
            call.run(own, buffers);
            return;
        }
        DeviceSupport device = DeviceSupport.get();
        dev.ferry.HostBuffer[] copies = new dev.ferry.HostBuffer[buffers.length];
        Buffer[] staged = buffers.clone();
        try {
            for (int i = 0; i < buffers.length; i++) {
                Buffer b = buffers[i];
                if (b == null || b == Communicator.IN_PLACE || !b.kind().needsCuda()) continue;
                copies[i] = dev.ferry.HostBuffer.allocate(b.byteSize());
                device.copyToHost(copies[i], b, b.byteSize());
                staged[i] = copies[i];
            }
            call.run(own, staged);
            for (int i = 0; i < buffers.length; i++) {
                if (copies[i] != null) device.copyFromHost(buffers[i], copies[i], buffers[i].byteSize());
            }
        } finally {
            for (dev.ferry.HostBuffer h : copies) if (h != null) h.close();
        }
    }

    private void schedule(String op, ThreadCall call, Buffer[] buffers, BufferUse.Pins pins) {
        if (order.capturing()) {
            pins.release();
            throw new CaptureUnsupportedException(op + " on " + this + ": the stream is being captured into a CUDA graph, and this call runs on "
                    + own.backend() + " from a thread of Ferry's when the stream reaches it, which a graph cannot hold (only collectives the planner "
                    + "runs on NCCL can be captured)");
        }
        Pending p;
        try {
            p = new Pending(order.mark(true), true, pins);
        } catch (RuntimeException | Error e) {
            pins.release();
            throw e;
        }
        pending.add(p);
        queued.incrementAndGet();
        queue.add(() -> {
            try {
                if (failure == null) {
                    order.awaitReached(p.mark);
                    runOnThread(call, buffers);
                }
            } catch (Throwable t) {
                if (failure == null) failure = t;
            } finally {
                order.release(p.mark);
                p.released = true;
                queued.decrementAndGet();
            }
        });
    }

    /** Checks the view before a call, frees what the stream has passed, and keeps the marks within {@link DeviceSupport.StreamOrder#MAX_HELD}. */
    private void begin(String op) {
        if (closed) {
            throw new CommunicatorClosedException(op + ": the stream-ordered view " + this + " is closed");
        }
        throwFailure(op);
        retire(DeviceSupport.StreamOrder.MAX_HELD - 1);
        if (!deferred.isEmpty() && deferred.size() > DEFERRED_LIMIT) {
            drain(); // rare: many mappings were retired on the view's thread; they are closed with nothing held
        }
    }

    /**
     * Releases the pins of the marks the stream has passed; waits for the oldest while more than
     * {@code keep} are pending. An event query costs about a microsecond, as much as a small
     * collective's own launch: with {@code keep > 0} the marks are looked at only once
     * {@link #RETIRE_BATCH} are pending, and the newest passed one is found by bisection (the stream
     * passes marks in order).
     */
    private void retire(int keep) {
        int size = pending.size();
        if (size == 0 || (keep > 0 && size < RETIRE_BATCH)) return;
        Pending[] ps = pending.toArray(new Pending[0]);
        int lo = 0, hi = ps.length - 1, passed = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (ps[mid].released && order.reached(ps[mid].mark)) {
                passed = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        for (int k = 0; k <= passed; k++) {
            Pending p = pending.removeFirst();
            awaitReleased(p); // passed by the stream: a held mark's thread has written its release and is about to say so
            p.pins.release();
        }
        while (pending.size() > keep) {
            Pending p = pending.peekFirst();
            awaitReleased(p);
            order.awaitReached(p.mark);
            pending.removeFirst();
            p.pins.release();
        }
    }

    private static void awaitReleased(Pending p) {
        for (int spins = 0; !p.released; spins++) {
            if (spins < 1000) Thread.onSpinWait(); else java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
    }

    private BufferUse.Pins pin(String op, Buffer[] buffers) {
        for (Buffer b : buffers) {
            if (b != null && !b.kind().needsCuda()) {
                throw new UnsupportedBufferException(op + " on " + this + ": stream-ordered calls take device memory; " + b + " is " + b.kind()
                        + " (use the communicator's own call for host memory)");
            }
        }
        return new BufferUse.Pins(buffers);
    }

    private void throwFailure(String op) {
        Throwable f = failure;
        if (f == null) {
            try {
                own.transport().throwStreamFailure(); // an operation on the GPU alone that failed there
            } catch (StreamOperationException e) {
                failure = f = e.getCause() != null ? e.getCause() : e;
            }
        }
        if (f != null) {
            throw new StreamOperationException(op + " on " + this + ": an operation enqueued earlier on this view failed after its call returned: " + f, f);
        }
    }

    // ---- the view's thread ------------------------------------------------------------------

    private void work() {
        anyViewThread = true;
        VIEW_THREAD.set(this);
        while (true) {
            Runnable r;
            try {
                r = queue.take();
            } catch (InterruptedException e) {
                continue; // stopped only by STOP, after the queued calls released their marks
            }
            if (r == STOP) return;
            r.run();
        }
    }

    @Override
    public void synchronize() {
        if (closed) {
            throw new CommunicatorClosedException("synchronize: the stream-ordered view " + this + " is closed");
        }
        drain();
        throwFailure("synchronize");
    }

    /** Waits for every call so far and for the stream, and frees every pin. */
    private void drain() {
        retire(0);
        order.synchronize();
        for (BufferUse.Pins p : captured) p.release();
        captured.clear();
        runDeferred();
    }

    /** Waits until the view's thread has run every call queued so far (not for the stream beyond them). */
    private void awaitThreadIdle() {
        java.util.concurrent.CountDownLatch idle = new java.util.concurrent.CountDownLatch(1);
        queue.add(idle::countDown);
        boolean interrupted = false;
        while (true) {
            try {
                idle.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            try {
                drain();
            } finally {
                queue.add(STOP);
                boolean interrupted = false;
                while (thread.isAlive()) {
                    try {
                        thread.join();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) Thread.currentThread().interrupt();
            }
        } finally {
            try {
                own.close();
            } finally {
                order.close();
            }
        }
    }

    @Override
    public String toString() {
        return "StreamCommunicator[" + own + ", stream 0x" + Long.toHexString(stream.streamHandle()) + "]";
    }
}
