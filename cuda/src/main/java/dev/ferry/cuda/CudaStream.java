// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamQuery;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * A CUDA stream of one device: work on it runs in order. Streams made here do not synchronize with
 * the legacy default stream; {@link Cuda#wrapStream} wraps a stream of the program's own. It is a
 * {@link dev.ferry.DeviceStream}, so {@code Communicator.onStream} takes it.
 */
public final class CudaStream implements AutoCloseable, dev.ferry.DeviceStream {
    private final CudaDevice device;
    private final CUstream stream;
    /** False for a wrapped stream: its owner destroys it. */
    private final boolean owned;
    private boolean closed;
    private KernelGraph graph;

    CudaStream(CudaDevice device) {
        this.device = device;
        this.stream = new CUstream();
        this.owned = true;
        device.makeCurrent();
        check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    }

    /** A new non-blocking stream on {@code device} with the greatest priority its context offers. */
    static CudaStream highestPriority(CudaDevice device) {
        device.makeCurrent();
        int[] least = new int[1], greatest = new int[1];
        check(jcuda.driver.JCudaDriver.cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange");
        CUstream s = new CUstream();
        check(jcuda.driver.JCudaDriver.cuStreamCreateWithPriority(s, CUstream_flags.CU_STREAM_NON_BLOCKING, greatest[0]), "cuStreamCreateWithPriority");
        return new CudaStream(device, s, true);
    }

    private CudaStream(CudaDevice device, CUstream made, boolean owned) {
        this.device = device;
        this.stream = made;
        this.owned = owned;
    }

    /** A stream of the program's own on {@code device} (not destroyed by {@link #close()}). */
    CudaStream(CudaDevice device, CUstream wrapped) {
        this(device, wrapped, false);
    }

    @Override
    public long streamHandle() {
        return JCudaPointers.handle(stream);
    }

    @Override
    public int deviceOrdinal() {
        return device.ordinal();
    }

    public CudaDevice device() {
        return device;
    }

    /** The JCuda handle, for interop (kernel launches on this stream). */
    public CUstream handle() {
        return stream;
    }

    /** The one-kernel graph of this stream, made on first use: the reduction kernels launch through it ({@link KernelGraph}). */
    synchronized KernelGraph kernelGraph() {
        if (closed) {
            throw new IllegalStateException("the stream is closed");
        }
        if (graph == null) {
            graph = new KernelGraph(this);
        }
        return graph;
    }

    /** Waits until all work on the stream is done. */
    public void synchronize() {
        device.makeCurrent();
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    }

    /** True when all work on the stream is done. */
    public boolean isIdle() {
        device.makeCurrent();
        int r = cuStreamQuery(stream);
        if (r == CUresult.CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(r, "cuStreamQuery");
        return true;
    }

    /** True while the stream is being captured into a CUDA graph. */
    public boolean isCapturing() {
        device.makeCurrent();
        int[] status = new int[1];
        check(jcuda.driver.JCudaDriver.cuStreamIsCapturing(stream, status), "cuStreamIsCapturing");
        return status[0] != 0;
    }

    /** Makes later work on this stream wait for {@code event}. */
    public void waitFor(CudaEvent event) {
        device.makeCurrent();
        check(cuStreamWaitEvent(stream, event.handle(), 0), "cuStreamWaitEvent");
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            if (graph != null) {
                graph.close();
            }
            if (owned) {
                device.makeCurrent();
                check(cuStreamDestroy(stream), "cuStreamDestroy");
            }
        }
    }
}
