// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.CudaException;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.ReduceOp;
import dev.ferry.spi.HostReduction;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.JCudaDriver;

/**
 * Reductions of device memory on the GPU, element by element, with exactly the results of
 * {@link HostReduction} (the same bytes; only the bit pattern of a NaN that an arithmetic step
 * makes is unspecified, as it is on the host): integers wrap, FLOAT and DOUBLE steps are single IEEE
 * operations rounded to nearest even, FLOAT16 and BFLOAT16 steps compute in binary32 and round to
 * nearest even, MINLOC and MAXLOC keep the smaller index of equal values.
 *
 * <p>The kernels come from {@code ferry_reduce.cu} in this module's sources, compiled to PTX by its
 * {@code build-ptx.sh} (one module per data type, checked in); the driver JIT-compiles a type's
 * module for the GPU the first time that type is reduced in a context, and it stays loaded for the
 * life of the context. Launches are asynchronous on the given stream; every driver call is checked
 * and a failure is a {@link CudaException}.
 *
 * <p>Addresses are device addresses that kernels of the stream's device's primary context may use:
 * memory allocated there ({@link Cuda#allocate}, or the runtime API's), or a peer's memory mapped
 * there by CUDA IPC; not memory of a context of the application's own ({@link Cuda#inPrimaryContext}
 * tells). Each must be aligned to {@link #alignment} of the type (device allocations are; a slice at
 * a whole number of elements of an aligned buffer is).
 */
public final class DeviceReduction {
    /** Sources one kernel launch folds; {@link #reduce} with more chains launches. */
    public static final int MAX_SOURCES = 8;

    private static final int THREADS = 256;

    private DeviceReduction() {
    }

    /**
     * {@code acc[i] = acc[i] op in[i]} for {@code count} elements, on {@code stream}: the device form
     * of {@link HostReduction#apply}. {@code acc} and {@code in} must not overlap unless equal.
     *
     * @throws dev.ferry.InvalidReduceOpException when MPI does not define {@code op} for {@code type}
     * @throws InvalidArgumentException           for a misaligned address or negative count
     */
    public static void apply(DataType type, ReduceOp op, long acc, long in, long count, CudaStream stream) {
        reduce(type, op, acc, new long[] {acc, in}, count, stream);
    }

    /**
     * {@code acc = acc op in} over {@code count} elements of two device buffers of the stream's
     * device (bounds checked), on {@code stream}.
     */
    public static void apply(DataType type, ReduceOp op, DeviceBuffer acc, DeviceBuffer in, long count, CudaStream stream) {
        op.check("device reduction", type);
        long bytes = type.bytes(count);
        acc.checkMemory();
        in.checkMemory();
        if (count < 0 || bytes > acc.byteSize() || bytes > in.byteSize()) {
            throw new InvalidCountException("device reduction of " + count + " " + type + " elements: buffers of " + acc.byteSize()
                    + " and " + in.byteSize() + " bytes");
        }
        apply(type, op, acc.address(), in.address(), count, stream);
    }

    /**
     * {@code out[i] = (...((sources[0][i] op sources[1][i]) op sources[2][i]) ... op sources[k-1][i])}
     * for {@code count} elements, the sources folded left to right in the order given, on
     * {@code stream}. One source is a copy. {@code out} may be {@code sources[0]} (in place) but must
     * not overlap any other source.
     *
     * @throws dev.ferry.InvalidReduceOpException when MPI does not define {@code op} for {@code type}
     * @throws InvalidArgumentException           for no source, a misaligned address or a negative count
     */
    public static void reduce(DataType type, ReduceOp op, long out, long[] sources, long count, CudaStream stream) {
        op.check("device reduction", type);
        if (count < 0) {
            throw new InvalidCountException("device reduction of " + count + " elements");
        }
        if (sources.length == 0) {
            throw new InvalidArgumentException("device reduction: no source");
        }
        int align = alignment(type);
        checkAligned(type, align, out, "the result");
        for (int i = 0; i < sources.length; i++) {
            checkAligned(type, align, sources[i], "source " + i);
        }
        if (count == 0) {
            return;
        }
        Cuda.ensureAvailability();
        boolean vector = (out & 15) == 0;
        for (long s : sources) vector &= (s & 15) == 0;
        long function = Loaded.function(stream.device(), type, op, Kernel.REDUCE);
        int sms = Loaded.multiprocessors(stream.device());
        long work = vector ? Math.max(1, count / Math.max(1, 16 / type.size())) : count;
        int blocks = (int) Math.max(1, Math.min((work + THREADS - 1) / THREADS, 8L * sms));
        // first launch: up to MAX_SOURCES sources; then the result so far is source 0 of the next
        int at = Math.min(sources.length, MAX_SOURCES);
        Loaded.launch(function, blocks, stream, out, sources, 0, at, count, vector, type, op);
        while (at < sources.length) {
            int n = Math.min(sources.length - at, MAX_SOURCES - 1);
            long[] next = new long[n + 1];
            next[0] = out;
            System.arraycopy(sources, at, next, 1, n);
            Loaded.launch(function, blocks, stream, out, next, 0, n + 1, count, vector, type, op);
            at += n;
        }
    }

    /**
     * Copies {@code bytes} from each of {@code sources} to {@code out + s * bytes} (source s's block),
     * on {@code stream}, in one kernel launch per {@link #MAX_SOURCES} sources: every block read where
     * it is (a peer's memory mapped over CUDA IPC, or this GPU's) by the GPU's cores, instead of one
     * copy-engine transfer per block. No block may overlap another or its destination.
     *
     * @throws InvalidArgumentException for no source or a negative size
     */
    public static void copyBlocks(long out, long[] sources, long bytes, CudaStream stream) {
        if (sources.length == 0) {
            throw new InvalidArgumentException("block copy: no source");
        }
        if (bytes < 0) {
            throw new InvalidCountException("block copy of " + bytes + " bytes");
        }
        if (bytes == 0) {
            return;
        }
        Cuda.ensureAvailability();
        boolean vector = ((out | bytes) & 15) == 0;
        for (long s : sources) vector &= (s & 15) == 0;
        long function = Loaded.function(stream.device(), DataType.BYTE, ReduceOp.SUM, Kernel.COPY_BLOCKS);
        int sms = Loaded.multiprocessors(stream.device());
        for (int at = 0; at < sources.length; at += MAX_SOURCES) {
            int to = Math.min(sources.length, at + MAX_SOURCES), count = to - at;
            long lanes = (vector ? bytes / 16 : bytes) * count; // one unit per lane
            int blocks = (int) Math.max(1, Math.min((lanes + THREADS - 1) / THREADS, 8L * sms));
            Loaded.launch(function, blocks, stream, out + at * bytes, sources, at, to, bytes, vector,
                    () -> "ferry_copy_blocks, " + count + " blocks of " + bytes + " bytes");
        }
    }

    /** Bytes at the start of a short allReduce's scratch before its two slots (at 8: the stream kernel's round count). */
    public static final long SHORT_HEADER = 128;
    /** Threads of the one block of an {@link #allReduceShort} launch, at most (a warp at least; one per element up to this). */
    private static final int SHORT_THREADS = 1024;

    /**
     * One rank's part of a short allReduce among up to {@link #MAX_SOURCES} ranks of a node, in one
     * kernel on {@code stream}, without the host between the ranks: the rank stores its {@code count}
     * elements of {@code in} into slot {@code round & 1} of every peer's scratch, each 4 bytes with
     * the round's low 32 bits in one 8-byte store (no fence, no load from another GPU), waits in
     * its own scratch until every peer's words carry the round, and folds every rank's input in
     * rank order into {@code out} (which may be {@code in}). The GPU counts the rounds, from 1, in
     * the rank's own scratch header at 8 (the last round its kernels ran), so every rank must launch
     * as many rounds as the others, and a launch's arguments stay the same from round to round. A
     * rank whose last round is done may free its scratch: no peer reads it, and every peer's last
     * words have landed.
     *
     * <p>A scratch is device memory of {@link #shortScratchBytes} (the layout is in
     * {@code ferry_reduce.cu}), zeroed before the first round; {@code scratches[r]} is rank r's as
     * mapped in this process. {@code status} is host memory the GPU can write (pinned): the kernel
     * sets it to 0 when it folded (after the result), or to 1 when it waited {@code patienceNanos}
     * for a rank without seeing its words (it has stored its own); then launch again with
     * {@code resume} (wait and fold only).
     *
     * @throws dev.ferry.InvalidReduceOpException when MPI does not define {@code op} for {@code type}
     * @throws InvalidArgumentException           for more ranks than {@link #MAX_SOURCES}, a count that
     *                                            does not fit a slot, or a misaligned address
     */
    public static void allReduceShort(DataType type, ReduceOp op, long out, long in, long[] scratches, int me, long count, long slotBytes,
                                      boolean resume, long status, long patienceNanos, CudaStream stream) {
        checkShort("short allReduce", type, op, out, in, scratches, me, count, slotBytes, status, "the status word");
        Cuda.ensureAvailability();
        long function = Loaded.function(stream.device(), type, op, Kernel.ALLREDUCE_SHORT);
        int threads = (int) Math.min(SHORT_THREADS, Math.max(32, (count + 31) / 32 * 32));
        Loaded.launchShort(function, threads, stream, out, in, scratches, me, count, slotBytes, resume, status, patienceNanos,
                () -> entry(Kernel.ALLREDUCE_SHORT, type, op) + ", " + count + " elements");
    }

    /**
     * {@link #allReduceShort} in stream order: every launch, and every replay of a CUDA graph that
     * captured one, runs the next round (counted on the GPU as there); launched
     * with cuLaunchKernel itself (capturable). A rank that waits {@code patienceNanos} for a peer
     * without seeing it arrive sets the int at {@code failed} (host memory the GPU can write) to 1,
     * which the kernels never clear, and ends its round with a wrong result.
     *
     * @throws dev.ferry.InvalidReduceOpException when MPI does not define {@code op} for {@code type}
     * @throws InvalidArgumentException           as {@link #allReduceShort}
     */
    public static void allReduceStream(DataType type, ReduceOp op, long out, long in, long[] scratches, int me, long count, long slotBytes,
                                       long failed, long patienceNanos, CudaStream stream) {
        checkShort("stream allReduce", type, op, out, in, scratches, me, count, slotBytes, failed, "the failure word");
        long function = Loaded.function(stream.device(), type, op, Kernel.ALLREDUCE_STREAM);
        int threads = (int) Math.min(SHORT_THREADS, Math.max(32, (count + 31) / 32 * 32));
        Loaded.launchStream(function, threads, stream, out, in, scratches, me, count, slotBytes, failed, patienceNanos, type, op);
    }

    /**
     * One rank's part of a short allGather among the ranks of a node, in one kernel on
     * {@code stream}: a round as {@link #allReduceShort}'s, on the same scratches and round count
     * (the two may alternate), which ends with every rank's {@code bytes} (at most
     * {@code slotBytes}) copied to {@code out} in rank order ({@code out} holds {@code scratches.length}
     * times {@code bytes}); {@code status} and {@code resume} as there.
     *
     * @throws InvalidArgumentException as {@link #allReduceShort}
     */
    public static void allGatherShort(long out, long in, long[] scratches, int me, long bytes, long slotBytes, boolean resume, long status,
                                      long patienceNanos, CudaStream stream) {
        checkShort("short allGather", DataType.BYTE, ReduceOp.SUM, out, in, scratches, me, bytes, slotBytes, status, "the status word");
        Cuda.ensureAvailability();
        long function = Loaded.function(stream.device(), DataType.BYTE, ReduceOp.SUM, Kernel.ALLGATHER_SHORT);
        int threads = (int) Math.min(SHORT_THREADS, Math.max(32, (bytes * scratches.length / 4 + 31) / 32 * 32));
        Loaded.launchShort(function, threads, stream, out, in, scratches, me, bytes, slotBytes, resume, status, patienceNanos,
                () -> "ferry_allgather_short, " + bytes + " bytes per rank");
    }

    /**
     * The bytes a short allReduce's scratch needs for slots of {@code slotBytes}: the
     * header, two rounds of every rank's words (8 bytes per 4 of data), and every rank's input unpacked.
     */
    public static long shortScratchBytes(long slotBytes) {
        return SHORT_HEADER + 2L * MAX_SOURCES * 2 * slotBytes + MAX_SOURCES * slotBytes;
    }

    /** The arguments of {@link #allReduceShort} and {@link #allReduceStream}; {@code word} is their int in host memory. */
    private static void checkShort(String what, DataType type, ReduceOp op, long out, long in, long[] scratches, int me, long count, long slotBytes,
                                   long word, String wordName) {
        op.check("device reduction", type);
        if (scratches.length < 1 || scratches.length > MAX_SOURCES || me < 0 || me >= scratches.length) {
            throw new InvalidArgumentException(what + ": rank " + me + " of " + scratches.length + " (1 to " + MAX_SOURCES + " ranks)");
        }
        if (count <= 0 || type.bytes(count) > slotBytes || slotBytes % 16 != 0) {
            throw new InvalidArgumentException(what + ": " + count + " " + type + " elements in slots of " + slotBytes
                    + " bytes (a positive count that fits; slots a multiple of 16 bytes)");
        }
        int align = alignment(type);
        checkAligned(type, align, out, "the result");
        checkAligned(type, align, in, "the input");
        for (int r = 0; r < scratches.length; r++) {
            checkAligned(type, 16, scratches[r], "rank " + r + "'s scratch");
        }
        if (word == 0 || word % 4 != 0) {
            throw new InvalidArgumentException(what + ": " + wordName + " at 0x" + Long.toHexString(word) + " is null or misaligned");
        }
    }

    /** The alignment in bytes the kernels need for {@code type}: its size, and for a pair type that of its value's C struct. */
    public static int alignment(DataType type) {
        return switch (type.kind()) {
            case PAIR -> Math.max(type.valueType().size(), 4);
            default -> type.size();
        };
    }

    private static void checkAligned(DataType type, int align, long address, String what) {
        if (address == 0) {
            throw new InvalidArgumentException("device reduction: " + what + " is a null address");
        }
        if (address % align != 0) {
            throw new InvalidArgumentException("device reduction: " + what + " at 0x" + Long.toHexString(address) + " is not aligned to "
                    + align + " bytes, as " + type + " elements need on the GPU");
        }
    }

    /** The kernels of a type's module: each has one entry per operator. */
    /**
     * Loads {@code type}'s module of reduction kernels into {@code device}'s primary context now (a
     * no-op once loaded), keeping the caller's current context: for callers that must not load it
     * later, where loading would wait for a stream that waits for them.
     */
    static void preload(CudaDevice device, DataType type) {
        for (ReduceOp op : ReduceOp.values()) {
            if (!op.appliesTo(type)) continue;
            if (Loaded.found(device, type, op, Kernel.REDUCE)) return; // the usual case: no context switch
            try (dev.ferry.spi.DeviceSupport.Scope ignored = dev.ferry.spi.DeviceSupport.get().preserveContext()) {
                Loaded.function(device, type, op, Kernel.REDUCE); // loads the whole module of the type
            }
            return;
        }
    }

    enum Kernel {
        /** {@link #reduce}: {@code ferry_reduce_<type>_<op>}. */
        REDUCE("ferry_reduce_"),
        /** {@link #allReduceShort}: {@code ferry_allreduce_short_<type>_<op>}. */
        ALLREDUCE_SHORT("ferry_allreduce_short_"),
        /** {@link #allReduceStream}: {@code ferry_allreduce_stream_<type>_<op>}. */
        ALLREDUCE_STREAM("ferry_allreduce_stream_"),
        /** {@link #allGatherShort}: {@code ferry_allgather_short}, of any type: in the byte module, under (BYTE, SUM). */
        ALLGATHER_SHORT("ferry_allgather_short"),
        /** {@link #copyBlocks}: {@code ferry_copy_blocks}, of bytes: in the byte module, under (BYTE, SUM). */
        COPY_BLOCKS("ferry_copy_blocks");

        final String prefix;

        Kernel(String prefix) {
            this.prefix = prefix;
        }

        /** False for a kernel of bytes: one entry, in the byte module. */
        boolean typed() {
            return this != ALLGATHER_SHORT && this != COPY_BLOCKS;
        }
    }

    /** The reduction kernel's entry name: {@code ferry_reduce_<type>_<op>}, lower case. */
    static String entry(DataType type, ReduceOp op) {
        return entry(Kernel.REDUCE, type, op);
    }

    /** A kernel's entry name for (type, op), lower case. */
    static String entry(Kernel kernel, DataType type, ReduceOp op) {
        return kernel.typed() ? kernel.prefix + type.name().toLowerCase(Locale.ROOT) + "_" + op.name().toLowerCase(Locale.ROOT) : kernel.prefix;
    }

    /** The module resource of a type: {@code ferry_reduce_<type>.ptx} next to this class. */
    static String resource(DataType type) {
        return "ferry_reduce_" + type.name().toLowerCase(Locale.ROOT) + ".ptx";
    }

    /** Loaded only on the first launch, so that the checks above run on machines without a driver. */
    @SuppressWarnings("restricted")
    private static final class Loaded {
        private static final MethodHandle MODULE_LOAD;
        private static final MethodHandle MODULE_FUNCTION;

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
            MODULE_LOAD = linker.downcallHandle(cuda.findOrThrow("cuModuleLoadData"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            MODULE_FUNCTION = linker.downcallHandle(cuda.findOrThrow("cuModuleGetFunction"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        }

        /** Per (primary context of a device, type): the module's functions by kernel and operator. */
        private static final Map<String, Map<Kernel, Map<ReduceOp, Long>>> FUNCTIONS = new HashMap<>();
        private static final Map<Integer, Integer> SMS = new HashMap<>();

        /**
         * Parameter block of one launch, reused per thread (cuLaunchKernel copies the values): out,
         * the 64-byte Sources struct, count, n, vector, and the array of pointers to them.
         */
        private static final class Args {
            final MemorySegment out, sources, count, n, vector, params;

            Args(Arena a) {
                out = a.allocate(JAVA_LONG);
                sources = a.allocate(8L * MAX_SOURCES, 8);
                count = a.allocate(JAVA_INT);
                n = a.allocate(JAVA_LONG);
                vector = a.allocate(JAVA_INT);
                params = a.allocate(ADDRESS, 5);
                params.setAtIndex(ADDRESS, 0, out);
                params.setAtIndex(ADDRESS, 1, sources);
                params.setAtIndex(ADDRESS, 2, count);
                params.setAtIndex(ADDRESS, 3, n);
                params.setAtIndex(ADDRESS, 4, vector);
            }
        }

        private static final ThreadLocal<Args> ARGS = ThreadLocal.withInitial(() -> new Args(Arena.ofAuto()));

        /** Through the stream's {@link KernelGraph}, as every kernel of this class: under MPS a graph starts sooner. */
        static void launch(long function, int blocks, CudaStream stream, long out, long[] src, int from, int to, long count, boolean vector,
                           DataType type, ReduceOp op) {
            launch(function, blocks, stream, out, src, from, to, count, vector, () -> entry(type, op) + ", " + count + " elements");
        }

        static void launch(long function, int blocks, CudaStream stream, long out, long[] src, int from, int to, long count, boolean vector,
                           Supplier<String> what) {
            Args a = ARGS.get();
            a.out.set(JAVA_LONG, 0, out);
            a.sources.fill((byte) 0);
            for (int i = from; i < to; i++) a.sources.setAtIndex(JAVA_LONG, i - from, src[i]);
            a.count.set(JAVA_INT, 0, to - from);
            a.n.set(JAVA_LONG, 0, count);
            a.vector.set(JAVA_INT, 0, vector ? 1 : 0);
            stream.kernelGraph().launch(function, blocks, THREADS, a.params, what);
        }

        /**
         * Parameter block of a short round's launch (allReduce, allGather), reused per thread: the values, side by side in
         * one segment (so that a launch can tell they did not change), and the arrays of pointers to
         * them of the two kernels ({@code ferry_allreduce_short_*}: ten; {@code ferry_allreduce_stream_*}:
         * nine, without the resume flag, the failure word where the status word is).
         */
        private static final class ShortArgs {
            final MemorySegment values, out, in, scratches, me, ranks, n, slotBytes, resume, word, patience, params, streamParams;
            private long next;

            ShortArgs(Arena a) {
                values = a.allocate(8L * (MAX_SOURCES + 10), 8);
                out = field(8);
                in = field(8);
                scratches = field(8L * MAX_SOURCES);
                me = field(4);
                ranks = field(4);
                n = field(8);
                slotBytes = field(8);
                resume = field(4);
                word = field(8);
                patience = field(8);
                params = pointers(a, out, in, scratches, me, ranks, n, slotBytes, resume, word, patience);
                streamParams = pointers(a, out, in, scratches, me, ranks, n, slotBytes, word, patience);
            }

            /** The next value's slice of {@link #values}, aligned to its size. */
            private MemorySegment field(long bytes) {
                long align = Math.min(8, bytes);
                next = (next + align - 1) / align * align;
                MemorySegment f = values.asSlice(next, bytes);
                next += bytes;
                return f;
            }

            private static MemorySegment pointers(Arena a, MemorySegment... values) {
                MemorySegment p = a.allocate(ADDRESS, values.length);
                for (int i = 0; i < values.length; i++) p.setAtIndex(ADDRESS, i, values[i]);
                return p;
            }

            /** The values both kernels take. */
            ShortArgs set(long out, long in, long[] scratches, int me, long count, long slotBytes, long word, long patience) {
                this.out.set(JAVA_LONG, 0, out);
                this.in.set(JAVA_LONG, 0, in);
                this.scratches.fill((byte) 0);
                for (int i = 0; i < scratches.length; i++) this.scratches.setAtIndex(JAVA_LONG, i, scratches[i]);
                this.me.set(JAVA_INT, 0, me);
                this.ranks.set(JAVA_INT, 0, scratches.length);
                this.n.set(JAVA_LONG, 0, count);
                this.slotBytes.set(JAVA_LONG, 0, slotBytes);
                this.word.set(JAVA_LONG, 0, word);
                this.patience.set(JAVA_LONG, 0, patience);
                return this;
            }
        }

        private static final ThreadLocal<ShortArgs> SHORT_ARGS = ThreadLocal.withInitial(() -> new ShortArgs(Arena.ofAuto()));

        static void launchShort(long function, int threads, CudaStream stream, long out, long in, long[] scratches, int me, long count, long slotBytes,
                                boolean resume, long status, long patience, Supplier<String> what) {
            ShortArgs a = SHORT_ARGS.get().set(out, in, scratches, me, count, slotBytes, status, patience);
            a.resume.set(JAVA_INT, 0, resume ? 1 : 0);
            // the same buffers as the graph's last launch: nothing to set on it (the GPU counts the rounds)
            stream.kernelGraph().launch(function, 1, threads, a.params, a.values, what);
        }

        static void launchStream(long function, int threads, CudaStream stream, long out, long in, long[] scratches, int me, long count,
                                 long slotBytes, long failed, long patience, DataType type, ReduceOp op) {
            ShortArgs a = SHORT_ARGS.get().set(out, in, scratches, me, count, slotBytes, failed, patience);
            stream.kernelGraph().launchDirect(function, 1, threads, a.streamParams, () -> entry(Kernel.ALLREDUCE_STREAM, type, op) + ", " + count + " elements");
        }

        static synchronized int multiprocessors(CudaDevice device) {
            return SMS.computeIfAbsent(device.ordinal(), o -> {
                int[] v = new int[1];
                CudaCalls.check(JCudaDriver.cuDeviceGetAttribute(v, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device.handle()),
                        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
                return Math.max(1, v[0]);
            });
        }

        /**
         * The functions found so far by device ordinal (each device's primary context is retained once,
         * so the ordinal names it): [kernel][type][op] flattened, 0 where not looked up yet; a row is
         * made on the device's first launch. An array, not a map: a short collective's margin is microseconds.
         */
        private static final long[][] FOUND = new long[Cuda.deviceCount()][];
        private static final int TYPES = DataType.values().length, OPS = ReduceOp.values().length;

        /** The kernel for (type, op) in {@code device}'s primary context, its type's module loaded on first use. */
        static long function(CudaDevice device, DataType type, ReduceOp op, Kernel kernel) {
            device.makeCurrent();
            long[] found = FOUND[device.ordinal()];
            if (found == null) {
                found = FOUND[device.ordinal()] = new long[Kernel.values().length * TYPES * OPS]; // a benign race, as below
            }
            int at = at(kernel, type, op);
            long f = found[at];
            if (f == 0) {
                f = lookUp(device, type, op, kernel);
                found[at] = f; // a benign race: every thread finds the same function
            }
            return f;
        }

        /** Whether the kernel for (type, op) on {@code device} was looked up already (its module is loaded). */
        static boolean found(CudaDevice device, DataType type, ReduceOp op, Kernel kernel) {
            long[] found = FOUND[device.ordinal()];
            return found != null && found[at(kernel, type, op)] != 0;
        }

        /** The index of (kernel, type, op) in a row of {@link #FOUND}. */
        private static int at(Kernel kernel, DataType type, ReduceOp op) {
            return (kernel.ordinal() * TYPES + type.ordinal()) * OPS + op.ordinal();
        }

        private static long lookUp(CudaDevice device, DataType type, ReduceOp op, Kernel kernel) {
            String key = device.contextHandle() + "/" + type;
            synchronized (FUNCTIONS) {
                Map<Kernel, Map<ReduceOp, Long>> fs = FUNCTIONS.get(key);
                if (fs == null) {
                    fs = load(type);
                    FUNCTIONS.put(key, fs);
                }
                Long f = fs.get(kernel).get(op);
                if (f == null) {
                    throw new CudaException("the reduction kernel " + entry(kernel, type, op) + " is missing from " + resource(type)
                            + " (rebuild it with cuda/src/main/cuda/build-ptx.sh)", 500);
                }
                return f;
            }
        }

        /** Loads a type's module into the current context (cuModuleLoadData JIT-compiles it for the device). */
        private static Map<Kernel, Map<ReduceOp, Long>> load(DataType type) {
            byte[] ptx = ptx(type);
            Map<Kernel, Map<ReduceOp, Long>> fs = new java.util.EnumMap<>(Kernel.class);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment image = a.allocate(ptx.length + 1L);
                MemorySegment.copy(MemorySegment.ofArray(ptx), 0, image, 0, ptx.length);
                MemorySegment module = a.allocate(JAVA_LONG);
                CudaCalls.check((int) MODULE_LOAD.invokeExact(module, image), "cuModuleLoadData(" + resource(type) + ")");
                long m = module.get(JAVA_LONG, 0);
                for (Kernel k : Kernel.values()) {
                    Map<ReduceOp, Long> byOp = new java.util.EnumMap<>(ReduceOp.class);
                    for (ReduceOp op : ReduceOp.values()) {
                        if (!op.appliesTo(type) || (!k.typed() && (type != DataType.BYTE || op != ReduceOp.SUM))) continue;
                        MemorySegment name = a.allocateFrom(entry(k, type, op));
                        MemorySegment f = a.allocate(JAVA_LONG);
                        CudaCalls.check((int) MODULE_FUNCTION.invokeExact(f, m, name), "cuModuleGetFunction(" + entry(k, type, op) + ")");
                        byOp.put(op, f.get(JAVA_LONG, 0));
                    }
                    fs.put(k, byOp);
                }
            } catch (CudaException e) {
                throw e;
            } catch (Throwable t) {
                throw new CudaException("loading " + resource(type) + " failed: " + t, t);
            }
            return fs;
        }
    }

    /** The PTX text of a type's module. */
    static byte[] ptx(DataType type) {
        try (InputStream in = DeviceReduction.class.getResourceAsStream(resource(type))) {
            if (in == null) {
                throw new IllegalStateException(resource(type) + " is missing from ferry-cuda (cuda/src/main/cuda/build-ptx.sh makes it)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("reading " + resource(type) + ": " + e, e);
        }
    }
}
