// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUresult;

/** A CUDA event: a marker in a stream, for ordering and (when timed) for measuring. */
public final class CudaEvent implements AutoCloseable {
    private final CudaDevice device;
    private final CUevent event;
    private boolean closed;

    CudaEvent(CudaDevice device, boolean timing, boolean interprocess) {
        this.device = device;
        this.event = new CUevent();
        device.makeCurrent();
        int flags = (timing ? CUevent_flags.CU_EVENT_DEFAULT : CUevent_flags.CU_EVENT_DISABLE_TIMING)
                | (interprocess ? CUevent_flags.CU_EVENT_INTERPROCESS : 0);
        check(cuEventCreate(event, flags), "cuEventCreate");
    }

    /** Wraps an event opened from an IPC handle. */
    CudaEvent(CudaDevice device, CUevent opened) {
        this.device = device;
        this.event = opened;
    }

    CUevent handle() {
        return event;
    }

    public CudaDevice device() {
        return device;
    }

    /** Records the event at the current end of {@code stream} (null: the legacy default stream). */
    public void record(CudaStream stream) {
        device.makeCurrent();
        check(cuEventRecord(event, stream == null ? null : stream.handle()), "cuEventRecord");
    }

    /** Waits for the work before the recorded point. */
    public void synchronize() {
        device.makeCurrent();
        check(cuEventSynchronize(event), "cuEventSynchronize");
    }

    /**
     * True when the work before the recorded point is done. Queried as it is: a waiting loop's
     * thread has the device current already, and a query that needs a context gets it then.
     */
    public boolean isDone() {
        int r = cuEventQuery(event);
        if (r == CUresult.CUDA_ERROR_INVALID_CONTEXT) {
            device.makeCurrent();
            r = cuEventQuery(event);
        }
        if (r == CUresult.CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(r, "cuEventQuery");
        return true;
    }

    /** Milliseconds from {@code start} to this event; both recorded with timing. */
    public float millisSince(CudaEvent start) {
        float[] ms = new float[1];
        check(cuEventElapsedTime(ms, start.event, event), "cuEventElapsedTime");
        return ms[0];
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            device.makeCurrent();
            check(cuEventDestroy(event), "cuEventDestroy");
        }
    }
}
