// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;

import dev.ferry.Buffer;
import java.util.List;
import java.util.ServiceLoader;

/**
 * What the API needs of a GPU runtime, found with {@link ServiceLoader} ({@code ferry-cuda}
 * provides one): the device ordering contract of {@link dev.ferry.Communicator} and the facts
 * that {@code ferry doctor} prints. Without a provider on the class path (host-only users of
 * {@code ferry-api}), {@link #get()} answers with a runtime that has no devices.
 */
public interface DeviceSupport {
    /** True when a GPU driver loaded and at least one device is visible. */
    boolean isAvailable();

    /** One line: driver and devices, or why there are none. */
    String describe();

    /** Lines for {@code ferry doctor} beyond {@link #describe()} (peer access between devices, e.g.). */
    default List<String> details() {
        return List.of();
    }

    /**
     * Called by the communicator before it hands device memory to a transport, on the calling
     * thread: every piece of work the caller submitted before the call (on any stream of the
     * context current on this thread, of the context that owns the buffer's memory, and of the
     * device's primary context) has completed when this returns. The returned scope restores the
     * caller's current context when closed, so that a transport may make its own current.
     */
    Scope enter(List<Buffer> deviceBuffers);

    /**
     * {@link #enter} for a blocking collective whose transport waits itself
     * ({@link Transport#waitsForPendingDeviceWork}): nothing is waited for yet. The order returned
     * waits for the same work as {@link #enter}, on the host or on the GPU, when asked
     * ({@link PendingDeviceWork}); its close restores the caller's current context. By default it
     * waits at once, as {@link #enter} does.
     */
    default DeferredOrder enterDeferred(List<Buffer> deviceBuffers) {
        Scope scope = enter(deviceBuffers);
        return new DeferredOrder() {
            @Override
            public void complete() {
            }

            @Override
            public void before(dev.ferry.DeviceStream stream) {
            }

            @Override
            public void close() {
                scope.close();
            }
        };
    }

    /**
     * Copies {@code bytes} from {@code src} to {@code dst}, either or both device memory, and
     * returns when they are there (for transports that must bring device data to the host).
     */
    default void copy(Buffer dst, Buffer src, long bytes) {
        throw new dev.ferry.UnsupportedBufferException("no device runtime to copy device memory with: " + describe());
    }

    /** True when {@link #reduce} can fold {@code type} with {@code op} on the device. */
    default boolean reducesOnDevice(DataType type, ReduceOp op) {
        return false;
    }

    /**
     * {@code out = sources[0] op sources[1] op ...} (in that order) over {@code count} elements of
     * device memory of {@code device}; returns when the result is there.
     */
    default void reduce(int device, DataType type, ReduceOp op, long out, long[] sources, long count) {
        throw new dev.ferry.UnsupportedBufferException("no device runtime to reduce device memory with: " + describe());
    }

    /** New device memory of {@code bytes} on the device of {@code like} (scratch for the transports; the caller closes it). */
    default Buffer allocateLike(Buffer like, long bytes) {
        throw new dev.ferry.UnsupportedBufferException("no device runtime to allocate device memory with: " + describe());
    }

    /** Copies {@code bytes} of the host buffer {@code src} to device memory at {@code address} (unified addressing). */
    default void copyToDevice(long address, dev.ferry.HostBuffer src, long bytes) {
        throw new dev.ferry.UnsupportedBufferException("no device runtime to copy device memory with: " + describe());
    }

    /** Copies {@code bytes} of {@code src} (host or device memory) into the host buffer {@code dst}. */
    default void copyToHost(dev.ferry.HostBuffer dst, Buffer src, long bytes) {
        if (src instanceof dev.ferry.HostBuffer h) {
            java.lang.foreign.MemorySegment.copy(h.segment(), 0, dst.segment(), 0, bytes);
        } else {
            copy(dst, src, bytes);
        }
    }

    /** Copies {@code bytes} of the host buffer {@code src} into {@code dst} (host or device memory). */
    default void copyFromHost(Buffer dst, dev.ferry.HostBuffer src, long bytes) {
        if (dst instanceof dev.ferry.HostBuffer h) {
            java.lang.foreign.MemorySegment.copy(src.segment(), 0, h.segment(), 0, bytes);
        } else {
            copy(dst, src, bytes);
        }
    }

    /**
     * For calls that complete work already started (a wait or test): nothing is synchronized, but
     * the caller's current context is restored when the scope closes.
     */
    default Scope preserveContext() {
        return Scope.NONE;
    }

    /**
     * The order keeper of {@code stream} for a {@link dev.ferry.StreamCommunicator}: operations that
     * Ferry's thread runs are fitted into the stream's order with it.
     *
     * @throws dev.ferry.UnsupportedBufferException without a device runtime, or for a stream it does not know
     */
    default StreamOrder streamOrder(dev.ferry.DeviceStream stream) {
        throw new dev.ferry.UnsupportedBufferException("stream-ordered calls need a GPU runtime: " + describe());
    }

    /**
     * Fits a stream's work together with operations that a thread of Ferry's runs: a mark records
     * the stream's current end; a held mark also makes the work queued after it wait until
     * {@link #release} of the mark. Ferry's thread waits until the stream reached a held mark
     * ({@link #awaitReached}), runs the operation, then releases the mark. Marks are made by one
     * thread and released in the order they were made; at most {@link #MAX_HELD} may be unpassed.
     */
    interface StreamOrder extends AutoCloseable {
        /** The most marks that may be made and not yet passed by the stream. */
        int MAX_HELD = 64;

        /** Records the stream's current end; with {@code hold}, work queued after this call waits for {@link #release} of the mark. */
        long mark(boolean hold);

        /** True when the stream has passed {@code mark} (work queued before it is done; a held mark was released). */
        boolean reached(long mark);

        /** Waits until the stream has reached {@code mark} (the work queued before it is done). */
        void awaitReached(long mark);

        /** Lets the stream go on past the held {@code mark}. */
        void release(long mark);

        /** True while the stream is being captured into a CUDA graph. */
        boolean capturing();

        /**
         * Loads, on the calling thread, the device code that a collective may launch on this
         * stream's GPU: the kernels that copy blocks, and for a reduction those of its {@code type}
         * (null: the collective does not reduce). Called before a call is held at a mark: loading a
         * module can wait for the context's streams, the held one too, which would wait for the
         * view's thread for ever (a broadcast's first copy by kernel did, ranks sharing an H200
         * under MPS).
         */
        default void prepareKernels(dev.ferry.DataType type) {
        }

        /** Waits until the stream's work queued so far is done. */
        void synchronize();

        /** Frees what the keeper holds; every mark must have been released. */
        @Override
        void close();
    }

    /** The caller's earlier device work, not yet waited for ({@link #enterDeferred}). */
    interface DeferredOrder extends Scope {
        /** Waits on the host until the work has completed (again: returns at once). */
        void complete();

        /**
         * Makes work enqueued on {@code stream} from now on wait on the GPU for the work, or, where
         * the GPU cannot be made to wait for some of it, waits for that on the host first.
         */
        void before(dev.ferry.DeviceStream stream);
    }

    /** Restores what {@link #enter} found (the caller's current context); closing twice is harmless. */
    interface Scope extends AutoCloseable {
        /** A scope that does nothing. */
        Scope NONE = () -> { };

        @Override
        void close();
    }

    /** The process's device runtime: the first provider on the class path, else one without devices. */
    static DeviceSupport get() {
        return Holder.INSTANCE;
    }

    /** Loads the provider once. */
    final class Holder {
        static final DeviceSupport INSTANCE = load();

        private Holder() {
        }

        private static DeviceSupport load() {
            try {
                for (DeviceSupport d : ServiceLoader.load(DeviceSupport.class, DeviceSupport.class.getClassLoader())) {
                    return d;
                }
            } catch (java.util.ServiceConfigurationError | LinkageError e) {
                return none("the device runtime on the class path could not be loaded: " + e);
            }
            return none("no device runtime on the class path (add ferry-cuda for device buffers)");
        }

        static DeviceSupport none(String why) {
            return new DeviceSupport() {
                @Override
                public boolean isAvailable() {
                    return false;
                }

                @Override
                public String describe() {
                    return why;
                }

                @Override
                public Scope enter(List<Buffer> deviceBuffers) {
                    return Scope.NONE;
                }
            };
        }
    }
}
