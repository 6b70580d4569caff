// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

/**
 * The caller's earlier device work that a blocking collective has not waited for yet: the front
 * leaves that wait (the device ordering of {@link DeviceSupport#enter}) to a transport that
 * {@link Transport#waitsForPendingDeviceWork() says it waits itself}, on the calling thread.
 * Whatever touches the call's buffers first either waits on the host ({@link #complete}) or makes
 * the GPU work that touches them wait on the GPU ({@link #before}): a kernel or NCCL call
 * enqueued after it on that stream runs after the caller's work without the host waiting, which
 * saves a blocking call the 2 µs of a {@code cuCtxSynchronize} (bench/results, launch_floor).
 * Nothing is pending on any other thread, call or kind of call.
 */
public final class PendingDeviceWork {
    private static final ThreadLocal<DeviceSupport.DeferredOrder> PENDING = new ThreadLocal<>();

    private PendingDeviceWork() {
    }

    /** Waits on the host for the calling thread's pending device work, if any; then none is pending. */
    public static void complete() {
        DeviceSupport.DeferredOrder o = PENDING.get();
        if (o != null) {
            PENDING.set(null);
            o.complete();
        }
    }

    /**
     * Makes the work enqueued on {@code stream} from now on wait on the GPU for the calling
     * thread's pending device work (none: nothing to do). The work stays pending for anything else
     * that touches the buffers from the host or another stream ({@link #complete} then waits).
     */
    public static void before(dev.ferry.DeviceStream stream) {
        DeviceSupport.DeferredOrder o = PENDING.get();
        if (o != null) {
            o.before(stream);
        }
    }

    /** Makes {@code order} (null: none) the calling thread's pending work and returns the one it replaces. */
    static DeviceSupport.DeferredOrder swap(DeviceSupport.DeferredOrder order) {
        DeviceSupport.DeferredOrder previous = PENDING.get();
        PENDING.set(order);
        return previous;
    }
}
