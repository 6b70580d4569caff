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

/** A non-blocking CUDA stream of one device: work on it runs in order, apart from the legacy default stream. */
public final class CudaStream implements AutoCloseable {
    private final CudaDevice device;
    private final CUstream stream = new CUstream();
    private boolean closed;
    private KernelGraph graph;

    CudaStream(CudaDevice device) {
        this.device = device;
        device.makeCurrent();
        check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
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
            device.makeCurrent();
            check(cuStreamDestroy(stream), "cuStreamDestroy");
        }
    }
}
