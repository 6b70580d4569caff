// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import dev.ferry.Buffer;
import dev.ferry.BufferFreedException;
import dev.ferry.BufferOverlapException;
import dev.ferry.BufferTooSmallException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.DataTypeMismatchException;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.InvalidRankException;
import dev.ferry.InvalidTagException;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.TruncationException;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * The bad-input matrix: jqwik properties, run on the real ranks of an MPI job (under
 * {@link RankRunner}), that throw generated bad calls at every operation of a backend and check
 * that each gives its specific Java exception, with no crash, no MPI abort and no hang, and that
 * the communicator stays usable (every case ends with an allReduce on the same communicator, which
 * also keeps the ranks in lockstep and fails every rank together when one fails).
 *
 * <ul>
 *   <li>{@link #rejectedBeforeAnyNativeCall}: one fault injected into an otherwise valid call of
 *       any operation (counts, datatypes, ranks, roots, tags, buffer kinds and slices, null
 *       arguments, freed buffers, overlapping buffers, closed communicators, heap memory, device
 *       memory on a host-only backend; for the vector collectives and reduce-scatter also count and
 *       displacement arrays of the wrong length or null, negative displacements, and blocks past
 *       their buffer). Such calls never reach MPI, so every rank draws its own
 *       cases (they depend on the rank: a root-only buffer is only checked at the root).</li>
 *   <li>{@link #mismatchedSizesReachMpi}: a sender and a receiver that disagree on the size or the
 *       datatype of a message (truncation, partial elements, a larger receive), over every pair of
 *       point-to-point styles. These cases reach MPI, so they are drawn identically on every rank
 *       (same seed, independent of the rank) and every rank knows its part.</li>
 * </ul>
 *
 * <p>Seed, tries and the printed count of cases: {@link MatrixSettings}. A backend runs the matrix
 * with a one-line subclass ({@code public class OmpiBadInputMatrix extends BadInputMatrix {}})
 * listed in an {@link MpiJob} of its integration test; the jqwik engine (net.jqwik:jqwik) must be on
 * the test class path.
 */
public abstract class BadInputMatrix {
    /** Operations of {@link Communicator}. */
    public enum Operation {
        SEND, RECV, ISEND, IRECV, SEND_RECV, BARRIER, BROADCAST, SCATTER, GATHER, ALL_GATHER, REDUCE, ALL_REDUCE, ALL_TO_ALL, SPLIT, DUPLICATE,
        /** Probes: a source and a tag, wildcards allowed. */
        PROBE, IPROBE, MPROBE, IMPROBE,
        /** The receive of a {@link dev.ferry.MatchedMessage} (of a message this rank sent itself). */
        MATCHED_RECV,
        SCATTER_V, GATHER_V, ALL_GATHER_V, ALL_TO_ALL_V, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, SCAN, EXSCAN;

        boolean hasBuffers() {
            return this != BARRIER && this != SPLIT && this != DUPLICATE && !probe();
        }

        boolean probe() {
            return this == PROBE || this == IPROBE || this == MPROBE || this == IMPROBE;
        }

        /** Takes a source and a tag where wildcards are allowed. */
        boolean receives() {
            return this == RECV || this == IRECV || probe();
        }

        boolean rooted() {
            return this == BROADCAST || this == SCATTER || this == GATHER || this == REDUCE || this == SCATTER_V || this == GATHER_V;
        }

        /** Takes count arrays (one entry per rank). */
        boolean vector() {
            return this == SCATTER_V || this == GATHER_V || this == ALL_GATHER_V || this == ALL_TO_ALL_V || this == REDUCE_SCATTER;
        }

        /** Takes displacement arrays too. */
        boolean displaced() {
            return vector() && this != REDUCE_SCATTER;
        }

        boolean reduction() {
            return this == REDUCE || this == ALL_REDUCE || this == REDUCE_SCATTER_BLOCK || this == REDUCE_SCATTER || this == SCAN || this == EXSCAN;
        }

        /** Which of the four arrays (send counts, send displacements, receive counts, receive displacements) the operation takes. */
        int[] arrays() {
            return switch (this) {
                case SCATTER_V -> new int[] {0, 1};
                case GATHER_V, ALL_GATHER_V -> new int[] {2, 3};
                case ALL_TO_ALL_V -> new int[] {0, 1, 2, 3};
                case REDUCE_SCATTER -> new int[] {2};
                default -> new int[0];
            };
        }

        boolean pointToPoint() {
            return ordinal() <= SEND_RECV.ordinal();
        }

        /** A collective with a non-blocking form (ibarrier, ibroadcast, ...). */
        boolean collective() {
            return ordinal() >= BARRIER.ordinal() && ordinal() <= ALL_TO_ALL.ordinal();
        }

        int bufferCount() {
            return switch (this) {
                case SEND, RECV, ISEND, IRECV, BROADCAST, MATCHED_RECV -> 1;
                case BARRIER, SPLIT, DUPLICATE, PROBE, IPROBE, MPROBE, IMPROBE -> 0;
                default -> 2;
            };
        }

        /** Blocks of {@code count} elements that buffer {@code i} must hold. */
        int blocks(int i, int size) {
            return switch (this) {
                case SCATTER, SCATTER_V, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER -> i == 0 ? size : 1;
                case GATHER, ALL_GATHER, GATHER_V, ALL_GATHER_V -> i == 1 ? size : 1;
                case ALL_TO_ALL, ALL_TO_ALL_V -> size;
                default -> 1;
            };
        }

        /** Whether buffer {@code i} is significant only at the root. */
        boolean rootOnly(int i) {
            return ((this == SCATTER || this == SCATTER_V) && i == 0) || ((this == GATHER || this == REDUCE || this == GATHER_V) && i == 1);
        }
    }

    /** One fault and the exception it must give. */
    public enum Fault {
        CLOSED_COMMUNICATOR(CommunicatorClosedException.class),
        NEGATIVE_COUNT(InvalidCountException.class),
        OVERFLOWING_COUNT(InvalidCountException.class),
        BUFFER_TOO_SMALL(BufferTooSmallException.class),
        NULL_BUFFER(InvalidArgumentException.class),
        NULL_DATATYPE(InvalidArgumentException.class),
        NULL_REDUCE_OP(InvalidArgumentException.class),
        FREED_BUFFER(BufferFreedException.class),
        RANK_OUT_OF_RANGE(InvalidRankException.class),
        TAG_OUT_OF_RANGE(InvalidTagException.class),
        OVERLAPPING_BUFFERS(BufferOverlapException.class),
        DEVICE_BUFFER_ON_HOST_ONLY_BACKEND(UnsupportedBufferException.class),
        HEAP_MEMORY(UnsupportedBufferException.class),
        SLICE_OUT_OF_BOUNDS(IndexOutOfBoundsException.class),
        MESSAGE_ALREADY_RECEIVED(dev.ferry.MessageAlreadyReceivedException.class),
        WRONG_ARRAY_LENGTH(InvalidArgumentException.class),
        NULL_ARRAY(InvalidArgumentException.class),
        NEGATIVE_DISPLACEMENT(InvalidCountException.class),
        DISPLACEMENT_PAST_BUFFER(BufferTooSmallException.class);

        final Class<? extends RuntimeException> expected;

        Fault(Class<? extends RuntimeException> expected) {
            this.expected = expected;
        }

        boolean targetsBuffer() {
            return this == BUFFER_TOO_SMALL || this == NULL_BUFFER || this == FREED_BUFFER || this == DEVICE_BUFFER_ON_HOST_ONLY_BACKEND;
        }

        /** Aimed at a count or displacement array of a vector collective. */
        boolean targetsArray() {
            return this == WRONG_ARRAY_LENGTH || this == NULL_ARRAY || this == NEGATIVE_DISPLACEMENT || this == DISPLACEMENT_PAST_BUFFER;
        }
    }

    /** Memory a case's buffers come from. */
    public enum Kind {
        PAGEABLE, WRAPPED_DIRECT, PINNED, DEVICE
    }

    /** A buffer of a case: slice {@code [offset, offset + needed + slack)} of pool buffer {@code pool} of {@code kind}. */
    public record BufSpec(Kind kind, int offset, int slack) {
    }

    /** A valid call, before the fault. */
    record Base(Operation op, DataType type, DataType type2, long count, long count2, BufSpec b0, BufSpec b1,
                int peer, int peer2, int tag, int tag2, ReduceOp reduceOp) {
    }

    /** A generated bad call: the base, the fault, which argument it hits ({@code target}) and the bad value. */
    public record BadCall(Base base, Fault fault, int target, long bad, int root, boolean nonBlocking) {
        @Override
        public String toString() {
            Base b = base;
            return fault + " in " + (nonBlocking && b.op.collective() ? "non-blocking " : "") + b.op + " (target " + target + ", bad value " + bad + "): " + b.type + "/" + b.type2 + " x " + b.count + "/" + b.count2
                    + ", buffers " + b.b0 + " " + b.b1 + ", peers " + b.peer + "/" + b.peer2 + ", tags " + b.tag + "/" + b.tag2
                    + ", root " + root + ", op " + b.reduceOp;
        }
    }

    /** How the two sides of a message call. */
    public enum Style {
        BLOCKING, NONBLOCKING_WAIT, NONBLOCKING_TEST, NONBLOCKING_WAIT_DURATION, SEND_RECV,
        /** Receiver: probe (its byte count must be the message's), then recv from the probed source and tag. Sender: as NONBLOCKING_WAIT. */
        PROBED,
        /** Receiver: mprobe, then the matched message's recv. Sender: as NONBLOCKING_WAIT. */
        MATCHED,
        /** Receiver: improbe until a message, then the matched message's irecv and waitFor. Sender: as NONBLOCKING_WAIT. */
        MATCHED_NONBLOCKING
    }

    /** How the receive relates to the message. */
    public enum Relation {
        /** Receive count holds fewer bytes than sent: TruncationException at the receiver. */
        TRUNCATED,
        /** Room enough, but the bytes are not a whole number of the receive datatype: DataTypeMismatchException. */
        PARTIAL_ELEMENT,
        /** Exactly the message. */
        EXACT,
        /** More room than the message: Status tells the real size. */
        LARGER
    }

    /** A message whose two sides disagree; drawn identically on every rank. */
    public record Mismatch(int sender, int receiverOffset, Relation relation, DataType sendType, int sendCount, DataType recvType,
                           int extra, Style sendStyle, Style recvStyle, Kind sendKind, Kind recvKind, int sendOffset, int recvOffset,
                           int tag, boolean anySource, boolean anyTag) {
    }

    private static final int POOL_BYTES = 512 * 1024 + 4096;
    private static final int LOCAL_MAX_COUNT = 64;

    protected Communicator comm;
    protected int rank;
    protected int size;
    private Communicator closedComm;
    private final Map<Kind, Buffer[]> pool = new EnumMap<>(Kind.class);
    private final List<AutoCloseable> owned = new ArrayList<>();
    private HostBuffer freed;
    private HostBuffer freedSlice;
    private Buffer device; // device memory, only where CUDA is and the backend cannot carry it
    private final List<Kind> kinds = new ArrayList<>();
    private final Map<String, Integer> seen = new TreeMap<>();
    private final Map<String, Integer> byOp = new TreeMap<>();
    private int cases;
    private String property;
    private boolean failed;
    private HostBuffer agreeIn;
    private HostBuffer agreeOut;

    @BeforeProperty
    void openCommunicatorAndPool() {
        comm = TestWorld.world().duplicate();
        rank = comm.rank();
        size = comm.size();
        closedComm = comm.duplicate();
        closedComm.close();
        kinds.add(Kind.PAGEABLE);
        kinds.add(Kind.WRAPPED_DIRECT);
        if (Cuda.isAvailable()) {
            kinds.add(Kind.PINNED);
            if (comm.supportsDeviceBuffers()) {
                kinds.add(Kind.DEVICE);
            } else {
                device = Cuda.allocate(4096);
                owned.add((AutoCloseable) device);
            }
        }
        for (Kind k : kinds) {
            pool.put(k, new Buffer[] {allocate(k), allocate(k)});
        }
        agreeIn = HostBuffer.allocate(4);
        agreeOut = HostBuffer.allocate(4);
        owned.add(agreeIn);
        owned.add(agreeOut);
        freed = HostBuffer.allocate(256);
        freedSlice = freed.slice(16, 64);
        freed.close();
    }

    private Buffer allocate(Kind k) {
        Buffer b = switch (k) {
            case PAGEABLE -> HostBuffer.allocate(POOL_BYTES);
            case WRAPPED_DIRECT -> HostBuffer.wrap(ByteBuffer.allocateDirect(POOL_BYTES));
            case PINNED -> Cuda.allocatePinned(POOL_BYTES);
            case DEVICE -> Cuda.allocate(POOL_BYTES);
        };
        if (b instanceof AutoCloseable c) owned.add(c);
        return b;
    }

    @AfterProperty
    void closeCommunicatorAndPool() throws Exception {
        try {
            comm.barrier();
        } finally {
            comm.close();
            for (AutoCloseable c : owned) c.close();
            owned.clear();
        }
        if (rank == 0 && property != null) {
            System.out.println("[ferry-matrix] " + getClass().getSimpleName() + "." + property + " on " + comm.backend() + " with " + size
                    + " ranks: " + cases + " cases on rank 0; by kind: " + seen + (byOp.isEmpty() ? "" : "; by operation: " + byOp));
        }
        if ("rejectedBeforeAnyNativeCall".equals(property) && !failed) { // coverage, when every case ran
            Set<Fault> all = EnumSet.noneOf(Fault.class);
            for (Operation op : Operation.values()) all.addAll(faults(op));
            for (Operation op : Operation.values()) {
                if (!byOp.containsKey(op.name())) {
                    throw new AssertionError("operation " + op + " was never called in " + cases + " cases: raise the tries or fix the generator");
                }
            }
            for (Fault f : all) {
                if (!seen.containsKey(f.name())) {
                    throw new AssertionError("fault " + f + " was never generated in " + cases + " cases: raise the tries or fix the generator");
                }
            }
        }
    }

    private void count(String key) {
        seen.merge(key, 1, Integer::sum);
        cases++;
    }

    /** Every rank: was my part right? Fails every rank together, with this rank's reason where it failed. */
    private void agree(String failure, Object what) {
        if (failure != null) failed = true;
        agreeIn.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, failure == null ? 1 : 0);
        comm.allReduce(agreeIn, agreeOut, 1, DataType.INT, ReduceOp.MIN);
        boolean all = agreeOut.segment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0) == 1;
        if (failure != null) {
            throw new AssertionError("rank " + rank + ": " + failure + " [" + what + "]");
        }
        if (!all) {
            failed = true;
            throw new AssertionError("another rank failed this case (see its message) [" + what + "]");
        }
    }

    // ---- property 1: rejected before any native call ---------------------------------------

    @Property(tries = 2000)
    @AddLifecycleHook(MatrixSettings.class)
    void rejectedBeforeAnyNativeCall(@ForAll("badCalls") BadCall call) {
        property = "rejectedBeforeAnyNativeCall";
        count(call.fault().name());
        byOp.merge(call.base().op().name(), 1, Integer::sum);
        String failure = null;
        try {
            Object result = invoke(call);
            failure = "expected " + call.fault().expected.getSimpleName() + " but the call returned " + result;
            if (result instanceof Request r) {
                r.waitFor(Duration.ofSeconds(1)); // best effort, the case already failed
            }
        } catch (RuntimeException e) {
            if (e.getClass() != call.fault().expected) {
                failure = "expected " + call.fault().expected.getSimpleName() + " but got " + e;
            } else if (e.getMessage() == null || e.getMessage().isBlank()) {
                failure = e.getClass().getSimpleName() + " without a message";
            }
        }
        agree(failure, call);
    }

    @Provide
    Arbitrary<BadCall> badCalls() {
        // the fault first, uniformly, then an operation it applies to; edge cases only for numbers
        Set<Fault> all = EnumSet.noneOf(Fault.class);
        for (Operation op : Operation.values()) all.addAll(faults(op));
        return Arbitraries.of(all).withoutEdgeCases().flatMap(f -> {
            List<Operation> ops = Arrays.stream(Operation.values()).filter(op -> faults(op).contains(f)).toList();
            return Arbitraries.of(ops).withoutEdgeCases().flatMap(op -> base(op, f).flatMap(b -> bad(b, f)));
        });
    }

    private Set<Fault> faults(Operation op) {
        // a matched message belongs to an open communicator: its receive has its own faults
        Set<Fault> f = op == Operation.MATCHED_RECV ? EnumSet.of(Fault.MESSAGE_ALREADY_RECEIVED) : EnumSet.of(Fault.CLOSED_COMMUNICATOR);
        if (op.hasBuffers()) {
            f.addAll(EnumSet.of(Fault.NEGATIVE_COUNT, Fault.OVERFLOWING_COUNT, Fault.BUFFER_TOO_SMALL, Fault.NULL_BUFFER, Fault.NULL_DATATYPE,
                    Fault.FREED_BUFFER, Fault.HEAP_MEMORY, Fault.SLICE_OUT_OF_BOUNDS));
            if (device != null) f.add(Fault.DEVICE_BUFFER_ON_HOST_ONLY_BACKEND);
        }
        if (op.reduction()) f.add(Fault.NULL_REDUCE_OP);
        if (op.vector()) f.addAll(EnumSet.of(Fault.WRONG_ARRAY_LENGTH, Fault.NULL_ARRAY));
        if (op.displaced()) f.addAll(EnumSet.of(Fault.NEGATIVE_DISPLACEMENT, Fault.DISPLACEMENT_PAST_BUFFER));
        if (op.pointToPoint() || op.rooted() || op.probe()) f.add(Fault.RANK_OUT_OF_RANGE);
        if (op.pointToPoint() || op.probe()) f.add(Fault.TAG_OUT_OF_RANGE);
        if (op.bufferCount() == 2) f.add(Fault.OVERLAPPING_BUFFERS);
        return f;
    }

    private Arbitrary<BufSpec> bufSpec() {
        return Combinators.combine(Arbitraries.of(kinds).withoutEdgeCases(), Arbitraries.integers().between(0, 64), Arbitraries.integers().between(0, 16)).as(BufSpec::new);
    }

    private Arbitrary<Base> base(Operation op, Fault f) {
        int minCount = f == Fault.BUFFER_TOO_SMALL || f == Fault.OVERLAPPING_BUFFERS || f == Fault.DISPLACEMENT_PAST_BUFFER ? 1 : 0;
        Arbitrary<DataType> types = Arbitraries.of(Data.CLASSIC_TYPES).withoutEdgeCases();
        Arbitrary<Long> counts = Arbitraries.frequencyOf(Tuple.of(1, Arbitraries.just((long) minCount)), Tuple.of(1, Arbitraries.just((long) LOCAL_MAX_COUNT)),
                Tuple.of(6, Arbitraries.longs().between(minCount, LOCAL_MAX_COUNT)));
        boolean recv = op.receives();
        Arbitrary<Integer> peers = recv ? Arbitraries.oneOf(Arbitraries.integers().between(0, size - 1), Arbitraries.just(Communicator.ANY_SOURCE))
                : Arbitraries.integers().between(0, size - 1);
        Arbitrary<Integer> sources = Arbitraries.oneOf(Arbitraries.integers().between(0, size - 1), Arbitraries.just(Communicator.ANY_SOURCE));
        Arbitrary<Integer> validTags = Arbitraries.oneOf(Arbitraries.of(0, comm.maxTag()), Arbitraries.integers().between(0, comm.maxTag()));
        Arbitrary<Integer> tags = recv ? Arbitraries.oneOf(validTags, Arbitraries.just(Communicator.ANY_TAG)) : validTags;
        Arbitrary<Integer> recvTags = Arbitraries.oneOf(validTags, Arbitraries.just(Communicator.ANY_TAG));
        Arbitrary<Object[]> first = Combinators.combine(types, types, counts, counts, bufSpec(), bufSpec())
                .as((t, t2, c, c2, b0, b1) -> new Object[] {t, t2, c, c2, b0, b1});
        Arbitrary<Object[]> second = Combinators.combine(peers, sources, tags, recvTags, Arbitraries.of(Data.CLASSIC_OPS).withoutEdgeCases())
                .as((p, p2, tg, tg2, o) -> new Object[] {p, p2, tg, tg2, o});
        return Combinators.combine(first, second).as((a, b) -> new Base(op, (DataType) a[0], (DataType) a[1], (Long) a[2], (Long) a[3],
                (BufSpec) a[4], (BufSpec) a[5], (Integer) b[0], (Integer) b[1], (Integer) b[2], (Integer) b[3], (ReduceOp) b[4]));
    }

    /** The fault's target argument and bad value for {@code b}. */
    private Arbitrary<BadCall> bad(Base b, Fault f) {
        Operation op = b.op();
        Arbitrary<Integer> roots = Arbitraries.integers().between(0, size - 1);
        int buffers = op.bufferCount();
        Arbitrary<Integer> targets = Arbitraries.integers().between(0, Math.max(0, buffers - 1));
        Arbitrary<Long> bad = switch (f) {
            case NEGATIVE_COUNT -> Arbitraries.oneOf(Arbitraries.of(-1L, Long.MIN_VALUE), Arbitraries.longs().between(Long.MIN_VALUE, -1));
            case OVERFLOWING_COUNT -> Arbitraries.just(0L); // bound depends on the target's type: see overflowing()
            case BUFFER_TOO_SMALL -> Arbitraries.oneOf(Arbitraries.just(0L), Arbitraries.longs().between(1, Long.MAX_VALUE)); // bytes short - 1, modulo the need
            case RANK_OUT_OF_RANGE -> Arbitraries.oneOf(Arbitraries.of((long) size, -2L, (long) Integer.MIN_VALUE, (long) Integer.MAX_VALUE),
                    Arbitraries.longs().between(Integer.MIN_VALUE, -2), Arbitraries.longs().between(size, Integer.MAX_VALUE),
                    Arbitraries.just((long) Communicator.ANY_SOURCE));
            case TAG_OUT_OF_RANGE -> comm.maxTag() < Integer.MAX_VALUE
                    ? Arbitraries.oneOf(Arbitraries.of(comm.maxTag() + 1L, -2L, (long) Integer.MIN_VALUE, (long) Integer.MAX_VALUE),
                    Arbitraries.longs().between(Integer.MIN_VALUE, -2), Arbitraries.longs().between(comm.maxTag() + 1L, Integer.MAX_VALUE),
                    Arbitraries.just((long) Communicator.ANY_TAG))
                    : Arbitraries.oneOf(Arbitraries.longs().between(Integer.MIN_VALUE, -2), Arbitraries.just((long) Communicator.ANY_TAG));
            case HEAP_MEMORY, FREED_BUFFER -> Arbitraries.longs().between(0, 1); // variant
            case SLICE_OUT_OF_BOUNDS -> Arbitraries.longs().between(0, 2); // variant: negative offset, negative length, past the end
            case OVERLAPPING_BUFFERS -> Arbitraries.longs().between(0, Long.MAX_VALUE); // where in the first the second starts
            case WRONG_ARRAY_LENGTH, NULL_ARRAY, NEGATIVE_DISPLACEMENT, DISPLACEMENT_PAST_BUFFER ->
                    Arbitraries.longs().between(0, Long.MAX_VALUE); // which array, which entry, how bad: see arrayFault()
            default -> Arbitraries.just(0L);
        };
        return Combinators.combine(targets, bad, roots, Arbitraries.of(false, true)).as((target, v, root, nonBlocking) -> {
            int t = target;
            long value = v;
            // a fault aimed at an argument the call ignores would not be rejected: aim it at one that counts
            if ((f == Fault.RANK_OUT_OF_RANGE || f == Fault.TAG_OUT_OF_RANGE) && value == -1) {
                // ANY_SOURCE / ANY_TAG are bad only where no wildcard is allowed: a destination, a root, a send tag
                if (op.receives()) {
                    value = -2;
                } else if (op == Operation.SEND_RECV) {
                    t = 0;
                }
            }
            if (f == Fault.RANK_OUT_OF_RANGE || f == Fault.TAG_OUT_OF_RANGE) {
                t = op == Operation.SEND_RECV ? t : 0;
            }
            int r = root;
            if (op.rooted() && (f.targetsBuffer() && op.rootOnly(t) || f == Fault.OVERLAPPING_BUFFERS || f.targetsArray())) {
                r = rank; // root-only buffers and arrays, and the overlap check, count only at the root
            }
            if (op == Operation.EXSCAN && f == Fault.NULL_BUFFER && rank == 0) {
                t = 0; // rank 0 of an exscan may pass no receive buffer
            }
            return new BadCall(b, f, t, value, r, nonBlocking);
        });
    }

    private Buffer poolSlice(BufSpec s, int which, long bytes) {
        return pool.get(s.kind())[which].slice(s.offset(), bytes + s.slack());
    }

    /** Builds the call's buffers, applies the fault and calls the operation. Returns what the call returned. */
    private Object invoke(BadCall c) {
        Base b = c.base();
        Operation op = b.op();
        Fault f = c.fault();
        DataType type = b.type(), type2 = b.type2();
        long count = b.count(), count2 = op == Operation.SEND_RECV ? b.count2() : b.count();
        Buffer[] bufs = new Buffer[2];
        for (int i = 0; i < op.bufferCount(); i++) {
            DataType t = i == 1 && op == Operation.SEND_RECV ? type2 : type;
            long n = i == 1 && op == Operation.SEND_RECV ? count2 : count;
            long bytes = t.bytes(n) * op.blocks(i, size);
            bufs[i] = poolSlice(i == 0 ? b.b0() : b.b1(), i, bytes);
        }
        int peer = b.peer(), peer2 = b.peer2(), tag = b.tag(), tag2 = b.tag2(), root = c.root();
        ReduceOp reduceOp = b.reduceOp();
        Communicator target = comm;
        int t = c.target();
        switch (f) {
            case CLOSED_COMMUNICATOR -> target = closedComm;
            case NEGATIVE_COUNT -> {
                if (t == 1 && op == Operation.SEND_RECV) count2 = c.bad(); else count = c.bad();
            }
            case OVERFLOWING_COUNT -> {
                boolean second = t == 1 && op == Operation.SEND_RECV;
                DataType tt = second ? type2 : type;
                // the first buffer checked: allToAll's send buffer holds size blocks
                long blocks = op == Operation.ALL_TO_ALL ? size : 1;
                if (tt.size() * blocks == 1) {
                    tt = DataType.LONG; // a count of bytes cannot overflow a byte size: use 8-byte elements
                    if (second) type2 = tt; else type = tt;
                }
                long over = Long.MAX_VALUE / (tt.size() * blocks) + 1 + Math.floorMod(c.base().count() * 7919L, 1000);
                if (second) count2 = over; else count = over;
            }
            case BUFFER_TOO_SMALL -> {
                DataType tt = t == 1 && op == Operation.SEND_RECV ? type2 : type;
                long n = t == 1 && op == Operation.SEND_RECV ? count2 : count;
                long need = tt.bytes(n) * op.blocks(t, size);
                long shortBy = 1 + Math.floorMod(c.bad(), need); // 1..need bytes short (0 -> exactly one byte short)
                bufs[t] = pool.get(Kind.PAGEABLE)[t].slice(0, need - shortBy);
            }
            case NULL_BUFFER -> bufs[t] = null;
            case NULL_DATATYPE -> {
                if (t == 1 && op == Operation.SEND_RECV) type2 = null; else type = null;
            }
            case NULL_REDUCE_OP -> reduceOp = null;
            case FREED_BUFFER -> bufs[t] = c.bad() == 0 ? freed : freedSlice;
            case RANK_OUT_OF_RANGE -> {
                int v = (int) c.bad();
                if (op.rooted()) root = v;
                else if (t == 1) peer2 = v;
                else peer = v;
            }
            case TAG_OUT_OF_RANGE -> {
                int v = (int) c.bad();
                if (t == 1) tag2 = v; else tag = v;
            }
            case OVERLAPPING_BUFFERS -> {
                // the second buffer starts inside the first, in the same pool buffer
                long need0 = type.bytes(count) * op.blocks(0, size);
                long start = Math.floorMod(c.bad(), need0);
                long len = bufs[1].byteSize();
                bufs[1] = pool.get(b.b0().kind())[0].slice(b.b0().offset() + start, len);
            }
            case DEVICE_BUFFER_ON_HOST_ONLY_BACKEND -> bufs[t] = device;
            case HEAP_MEMORY -> {
                return c.bad() == 0 ? HostBuffer.wrap(MemorySegment.ofArray(new byte[64])) : HostBuffer.wrap(ByteBuffer.allocate(64));
            }
            case WRONG_ARRAY_LENGTH, NULL_ARRAY, NEGATIVE_DISPLACEMENT, DISPLACEMENT_PAST_BUFFER -> { } // below, once the arrays are made
            case SLICE_OUT_OF_BOUNDS -> {
                Buffer p = pool.get(b.b0().kind())[0];
                return switch ((int) c.bad()) {
                    case 0 -> p.slice(-1 - b.b0().offset(), 8);
                    case 1 -> p.slice(b.b0().offset(), -1 - b.b0().slack());
                    default -> p.slice(b.b0().offset(), p.byteSize() - b.b0().offset() + 1 + b.b0().slack());
                };
            }
        }
        if (c.nonBlocking() && op.collective()) {
            return callNonBlocking(target, op, bufs[0], bufs[1], count, type, root, reduceOp);
        }
        if (op == Operation.MATCHED_RECV) {
            return matchedRecv(bufs[0], count, type, f == Fault.MESSAGE_ALREADY_RECEIVED);
        }
        long[][] arrays = new long[4][]; // send counts and displacements, receive counts and displacements: blocks of count, one after the other
        for (int a : op.arrays()) {
            arrays[a] = new long[size];
            for (int i = 0; i < size; i++) arrays[a][i] = a % 2 == 0 ? count : i * count;
        }
        if (f.targetsArray()) {
            arrayFault(c, arrays, bufs, type, count);
        }
        return call(target, op, bufs[0], bufs[1], count, count2, type, type2, peer, peer2, tag, tag2, root, reduceOp, arrays);
    }

    /** Spoils one array of a vector collective: which one, which entry and how, from the case's bad value. */
    private void arrayFault(BadCall c, long[][] arrays, Buffer[] bufs, DataType type, long count) {
        Fault f = c.fault();
        long v = c.bad();
        int[] present = c.base().op().arrays();
        if (f == Fault.NEGATIVE_DISPLACEMENT || f == Fault.DISPLACEMENT_PAST_BUFFER) {
            present = Arrays.stream(present).filter(a -> a % 2 == 1).toArray();
        }
        int a = present[(int) Math.floorMod(v, (long) present.length)];
        int entry = (int) Math.floorMod(v / 4, (long) size);
        switch (f) {
            case NULL_ARRAY -> arrays[a] = null;
            case WRONG_ARRAY_LENGTH -> {
                int[] lengths = {0, size - 1, size + 1, 2 * size};
                arrays[a] = Arrays.copyOf(arrays[a], lengths[(int) Math.floorMod(v / 64, 4L)]);
            }
            case NEGATIVE_DISPLACEMENT -> arrays[a][entry] = -1 - Math.floorMod(v / 64, 1L << 40);
            default -> {
                // the block (count >= 1 elements) now ends past its buffer: buffer 0 holds the send blocks, buffer 1 the receive blocks
                long elements = bufs[a < 2 ? 0 : 1].byteSize() / type.size();
                arrays[a][entry] = elements - count + 1 + Math.floorMod(v / 64, 1000L);
            }
        }
    }

    /** The non-blocking form of a collective: its arguments are checked at the call, as the blocking form's. */
    private static Request callNonBlocking(Communicator c, Operation op, Buffer b0, Buffer b1, long count, DataType type, int root, ReduceOp reduceOp) {
        return switch (op) {
            case BARRIER -> c.ibarrier();
            case BROADCAST -> c.ibroadcast(b0, count, type, root);
            case SCATTER -> c.iscatter(b0, b1, count, type, root);
            case GATHER -> c.igather(b0, b1, count, type, root);
            case ALL_GATHER -> c.iallGather(b0, b1, count, type);
            case REDUCE -> c.ireduce(b0, b1, count, type, reduceOp, root);
            case ALL_REDUCE -> c.iallReduce(b0, b1, count, type, reduceOp);
            case ALL_TO_ALL -> c.iallToAll(b0, b1, count, type);
            default -> throw new IllegalArgumentException(op + " has no non-blocking form");
        };
    }

    private static final int SELF_TAG = 1;

    /**
     * The receive of a matched message of 8 bytes this rank sent itself, with the case's buffer,
     * count and type; {@code twice}: after a valid receive of it. The message is received and the
     * send completed whatever the bad call did, so that nothing is left in flight.
     */
    private Object matchedRecv(Buffer buffer, long count, DataType type, boolean twice) {
        HostBuffer out = HostBuffer.allocate(8);
        HostBuffer drain = HostBuffer.allocate(8);
        try {
            Request sent = comm.isend(out, 8, DataType.BYTE, rank, SELF_TAG);
            dev.ferry.MatchedMessage m = comm.mprobe(rank, SELF_TAG);
            try {
                if (twice) {
                    m.recv(drain, 8, DataType.BYTE);
                }
                return m.recv(buffer, count, type);
            } finally {
                if (!m.isReceived()) {
                    m.recv(drain, 8, DataType.BYTE);
                }
                sent.waitFor();
            }
        } finally {
            out.close();
            drain.close();
        }
    }

    private static Object call(Communicator c, Operation op, Buffer b0, Buffer b1, long count, long count2, DataType type, DataType type2,
                               int peer, int peer2, int tag, int tag2, int root, ReduceOp reduceOp, long[][] a) {
        switch (op) {
            case SEND -> c.send(b0, count, type, peer, tag);
            case RECV -> {
                return c.recv(b0, count, type, peer, tag);
            }
            case ISEND -> {
                return c.isend(b0, count, type, peer, tag);
            }
            case IRECV -> {
                return c.irecv(b0, count, type, peer, tag);
            }
            case SEND_RECV -> {
                return c.sendRecv(b0, count, type, peer, tag, b1, count2, type2, peer2, tag2);
            }
            case BARRIER -> c.barrier();
            case BROADCAST -> c.broadcast(b0, count, type, root);
            case SCATTER -> c.scatter(b0, b1, count, type, root);
            case GATHER -> c.gather(b0, b1, count, type, root);
            case ALL_GATHER -> c.allGather(b0, b1, count, type);
            case REDUCE -> c.reduce(b0, b1, count, type, reduceOp, root);
            case ALL_REDUCE -> c.allReduce(b0, b1, count, type, reduceOp);
            case ALL_TO_ALL -> c.allToAll(b0, b1, count, type);
            case SPLIT -> {
                return c.split(1, 0);
            }
            case DUPLICATE -> {
                return c.duplicate();
            }
            case PROBE -> {
                return c.probe(peer, tag);
            }
            case IPROBE -> {
                return c.iprobe(peer, tag);
            }
            case MPROBE -> {
                return c.mprobe(peer, tag);
            }
            case IMPROBE -> {
                return c.improbe(peer, tag);
            }
            case MATCHED_RECV -> throw new IllegalStateException("matched receives are called by matchedRecv");
            case SCATTER_V -> c.scatterV(b0, a[0], a[1], b1, count, type, root);
            case GATHER_V -> c.gatherV(b0, count, b1, a[2], a[3], type, root);
            case ALL_GATHER_V -> c.allGatherV(b0, count, b1, a[2], a[3], type);
            case ALL_TO_ALL_V -> c.allToAllV(b0, a[0], a[1], b1, a[2], a[3], type);
            case REDUCE_SCATTER_BLOCK -> c.reduceScatterBlock(b0, b1, count, type, reduceOp);
            case REDUCE_SCATTER -> c.reduceScatter(b0, b1, a[2], type, reduceOp);
            case SCAN -> c.scan(b0, b1, count, type, reduceOp);
            case EXSCAN -> c.exscan(b0, b1, count, type, reduceOp);
        }
        return "nothing (void)";
    }

    // ---- property 2: mismatched sizes reach MPI ----------------------------------------------

    @Property(tries = 1000)
    @AddLifecycleHook(MatrixSettings.class)
    void mismatchedSizesReachMpi(@ForAll("mismatches") Mismatch m) {
        property = "mismatchedSizesReachMpi";
        if (size < 2) {
            agree(null, "one rank: no peer");
            return;
        }
        int sender = m.sender() % size;
        int receiver = (sender + 1 + m.receiverOffset() % (size - 1)) % size;
        int sendBytes = m.sendType().size() * m.sendCount();
        long recvCount = switch (m.relation()) {
            case TRUNCATED -> (sendBytes - 1) / m.recvType().size() - Math.min(m.extra(), (sendBytes - 1) / m.recvType().size());
            case PARTIAL_ELEMENT -> (sendBytes + m.recvType().size() - 1) / m.recvType().size() + m.extra();
            case EXACT -> sendBytes / m.recvType().size();
            case LARGER -> sendBytes / m.recvType().size() + 1 + m.extra();
        };
        count(m.relation() + "/" + m.recvStyle());
        String failure = null;
        try {
            if (rank == sender) {
                failure = sendSide(m, receiver, sendBytes);
            } else if (rank == receiver) {
                failure = receiveSide(m, sender, sendBytes, recvCount);
            }
        } catch (RuntimeException | AssertionError e) {
            failure = "unexpected " + e;
        }
        agree(failure, m + " sender " + sender + " receiver " + receiver + " receive count " + recvCount);
    }

    @Provide
    Arbitrary<Mismatch> mismatches() {
        // nothing here may depend on the rank: every rank draws the same cases
        Arbitrary<Relation> relations = Arbitraries.of(Relation.values()).withoutEdgeCases();
        return relations.flatMap(rel -> {
            Arbitrary<DataType> sendTypes = (rel == Relation.PARTIAL_ELEMENT ? Arbitraries.of(DataType.BYTE, DataType.INT)
                    : Arbitraries.of(Data.CLASSIC_TYPES)).withoutEdgeCases();
            Arbitrary<DataType> recvTypes = (rel == Relation.PARTIAL_ELEMENT ? Arbitraries.of(DataType.INT, DataType.LONG, DataType.FLOAT, DataType.DOUBLE)
                    : Arbitraries.of(Data.CLASSIC_TYPES)).withoutEdgeCases();
            Arbitrary<Object[]> a = Combinators.combine(Arbitraries.integers().between(0, 1 << 12), Arbitraries.integers().between(0, 1 << 12),
                    sendTypes, Arbitraries.oneOf(Arbitraries.of(1, 40_000), Arbitraries.integers().between(1, 40_000)), recvTypes, Arbitraries.integers().between(0, 64))
                    .as((s, r, st, sc, rt, x) -> new Object[] {s, r, st, sc, rt, x});
            Arbitrary<Object[]> b = Combinators.combine(Arbitraries.of(Style.values()).withoutEdgeCases(), Arbitraries.of(Style.values()).withoutEdgeCases(),
                    Arbitraries.of(kinds).withoutEdgeCases(), Arbitraries.of(kinds).withoutEdgeCases(), Arbitraries.integers().between(0, 64), Arbitraries.integers().between(0, 64))
                    .as((ss, rs, sk, rk, so, ro) -> new Object[] {ss, rs, sk, rk, so, ro});
            Arbitrary<Object[]> c = Combinators.combine(Arbitraries.integers().between(0, comm.maxTag()), Arbitraries.of(false, true), Arbitraries.of(false, true))
                    .as((t, as, at) -> new Object[] {t, as, at});
            return Combinators.combine(a, b, c).as((x, y, z) -> {
                DataType st = (DataType) x[2], rt = (DataType) x[4];
                int sc = (Integer) x[3];
                if (rel == Relation.PARTIAL_ELEMENT && (st.size() * sc) % rt.size() == 0) {
                    // make the bytes sent not a whole number of receive elements
                    if (st == DataType.INT && rt.size() == 8) {
                        sc += 1;
                    } else {
                        sc = st.size() * sc + 1;
                        st = DataType.BYTE;
                    }
                }
                if (rel == Relation.EXACT || rel == Relation.LARGER) {
                    rt = st; // whole elements
                }
                Style ss = (Style) y[0], rs = (Style) y[1];
                if (ss == Style.SEND_RECV || rs == Style.SEND_RECV) {
                    ss = Style.SEND_RECV; // both sides of a sendRecv pair exchange
                    rs = Style.SEND_RECV;
                }
                return new Mismatch((Integer) x[0], (Integer) x[1], rel, st, sc, rt, (Integer) x[5], ss, rs, (Kind) y[2], (Kind) y[3],
                        (Integer) y[4], (Integer) y[5], (Integer) z[0], (Boolean) z[1], (Boolean) z[2]);
            });
        });
    }

    private static final int ACK_TAG = 0;

    private String sendSide(Mismatch m, int receiver, int sendBytes) {
        byte[] data = Data.bytes(m.tag(), rank, sendBytes);
        Buffer send = pool.get(m.sendKind())[0].slice(m.sendOffset(), sendBytes);
        Mem.write(send, data);
        switch (m.sendStyle()) {
            case SEND_RECV -> {
                Buffer ack = pool.get(m.sendKind())[1].slice(0, 8);
                Status s = comm.sendRecv(send, m.sendCount(), m.sendType(), receiver, m.tag(), ack, 8, DataType.BYTE, receiver, ACK_TAG);
                if (s.byteCount() != 8) return "ack of " + s.byteCount() + " bytes";
            }
            case BLOCKING -> comm.send(send, m.sendCount(), m.sendType(), receiver, m.tag());
            case NONBLOCKING_WAIT_DURATION -> comm.isend(send, m.sendCount(), m.sendType(), receiver, m.tag()).waitFor(Duration.ofSeconds(60));
            case NONBLOCKING_TEST -> {
                Request r = comm.isend(send, m.sendCount(), m.sendType(), receiver, m.tag());
                while (r.test().isEmpty()) Thread.onSpinWait();
            }
            default -> comm.isend(send, m.sendCount(), m.sendType(), receiver, m.tag()).waitFor();
        }
        return null;
    }

    private String receiveSide(Mismatch m, int sender, int sendBytes, long recvCount) {
        long recvBytes = m.recvType().bytes(recvCount);
        Buffer recv = pool.get(m.recvKind())[1].slice(m.recvOffset(), recvBytes + 16);
        Mem.poison(recv);
        int source = m.anySource() ? Communicator.ANY_SOURCE : sender;
        int tag = m.anyTag() ? Communicator.ANY_TAG : m.tag();
        Class<? extends RuntimeException> expected = switch (m.relation()) {
            case TRUNCATED -> TruncationException.class;
            case PARTIAL_ELEMENT -> DataTypeMismatchException.class;
            default -> null;
        };
        Status status;
        try {
            status = switch (m.recvStyle()) {
                case SEND_RECV -> {
                    Buffer ack = pool.get(m.recvKind())[0].slice(0, 8);
                    yield comm.sendRecv(ack, 8, DataType.BYTE, sender, ACK_TAG, recv, recvCount, m.recvType(), source, tag);
                }
                case BLOCKING -> comm.recv(recv, recvCount, m.recvType(), source, tag);
                case NONBLOCKING_WAIT -> comm.irecv(recv, recvCount, m.recvType(), source, tag).waitFor();
                case NONBLOCKING_WAIT_DURATION -> comm.irecv(recv, recvCount, m.recvType(), source, tag).waitFor(Duration.ofSeconds(60));
                case NONBLOCKING_TEST -> {
                    Request r = comm.irecv(recv, recvCount, m.recvType(), source, tag);
                    Optional<Status> s;
                    while ((s = r.test()).isEmpty()) Thread.onSpinWait();
                    yield s.get();
                }
                case PROBED -> {
                    Status p = comm.probe(source, tag);
                    if (p.byteCount() != sendBytes || p.source() != sender || p.tag() != m.tag()) {
                        throw new AssertionError("probe gave " + p + ", expected " + sendBytes + " bytes from " + sender + " with tag " + m.tag());
                    }
                    yield comm.recv(recv, recvCount, m.recvType(), p.source(), p.tag());
                }
                case MATCHED -> {
                    dev.ferry.MatchedMessage mm = comm.mprobe(source, tag);
                    if (mm.status().byteCount() != sendBytes) {
                        throw new AssertionError("mprobe gave " + mm.status() + ", expected " + sendBytes + " bytes");
                    }
                    yield mm.recv(recv, recvCount, m.recvType());
                }
                case MATCHED_NONBLOCKING -> {
                    Optional<dev.ferry.MatchedMessage> mm;
                    while ((mm = comm.improbe(source, tag)).isEmpty()) Thread.onSpinWait();
                    yield mm.get().irecv(recv, recvCount, m.recvType()).waitFor();
                }
            };
        } catch (RuntimeException e) {
            if (expected == null || e.getClass() != expected) {
                return "expected " + (expected == null ? "success" : expected.getSimpleName()) + " but got " + e;
            }
            return null;
        }
        if (expected != null) {
            return "expected " + expected.getSimpleName() + " but received " + status;
        }
        if (status.byteCount() != sendBytes || status.source() != sender || status.tag() != m.tag()) {
            return "status " + status + ", expected " + sendBytes + " bytes from " + sender + " with tag " + m.tag();
        }
        byte[] got = Mem.read(recv);
        byte[] want = Data.bytes(m.tag(), sender, sendBytes);
        if (!Arrays.equals(want, Arrays.copyOf(got, sendBytes))) {
            return "received bytes differ from those sent";
        }
        for (int i = sendBytes; i < got.length; i++) {
            if (got[i] != Mem.POISON) return "byte " + i + " past the message was overwritten";
        }
        return null;
    }
}
