// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import dev.ferry.Buffer;
import dev.ferry.BufferLifetime;
import java.util.ArrayList;
import java.util.List;

/**
 * The buffers of one call while it uses them: each pinned ({@link BufferLifetime}), so that a
 * close cannot free memory under the call, and, when any is device memory, the call ordered after
 * the caller's device work ({@link DeviceSupport#enter}). A non-blocking call hands its pins to
 * its request ({@link #handOff()}), which releases them when it completes; the buffer objects stay
 * reachable until then (wrapped ByteBuffers and segments are not collected under MPI).
 */
final class BufferUse implements AutoCloseable {
    private final Pins pins;
    private final DeviceSupport.Scope scope;
    /** With a deferred order: the calling thread's pending work before this call's ({@link PendingDeviceWork}). */
    private final DeviceSupport.DeferredOrder outer;
    private final boolean deferred;
    private boolean handedOff;

    private BufferUse(Pins pins, DeviceSupport.Scope scope, boolean deferred, DeviceSupport.DeferredOrder outer) {
        this.pins = pins;
        this.scope = scope;
        this.deferred = deferred;
        this.outer = outer;
    }

    static BufferUse of(Buffer... buffers) {
        return of(false, buffers);
    }

    /**
     * The buffers of one call, pinned; with {@code deferrable} (a blocking collective whose
     * transport {@link Transport#waitsForPendingDeviceWork waits itself}), the wait for the
     * caller's device work is left pending on this thread for the transport
     * ({@link PendingDeviceWork}) instead of done here.
     */
    static BufferUse of(boolean deferrable, Buffer... buffers) {
        if (dev.ferry.flight.FlightRecorder.ON) {
            dev.ferry.flight.CurrentCall.memory(buffers);
        }
        Pins pins = new Pins(buffers);
        DeviceSupport.Scope scope = DeviceSupport.Scope.NONE;
        if (pins.device) {
            try {
                List<Buffer> device = new ArrayList<>(buffers.length);
                for (Buffer b : buffers) {
                    if (b != null && b.kind().needsCuda()) device.add(b);
                }
                // a stream-ordered operation runs when its stream reached it: nothing more to wait for here
                if (StreamOrderedCommunicator.onViewThread()) {
                    scope = DeviceSupport.get().preserveContext();
                } else if (deferrable) {
                    DeviceSupport.DeferredOrder order = DeviceSupport.get().enterDeferred(device);
                    return new BufferUse(pins, order, true, PendingDeviceWork.swap(order));
                } else {
                    scope = DeviceSupport.get().enter(device);
                }
            } catch (RuntimeException | Error e) {
                pins.release();
                throw e;
            }
        }
        return new BufferUse(pins, scope, false, null);
    }

    /** True when a buffer of the call is device memory. */
    boolean device() {
        return pins.device;
    }

    /** The pins, now owned by a request. */
    Pins handOff() {
        handedOff = true;
        return pins;
    }

    @Override
    public void close() {
        try {
            if (deferred) PendingDeviceWork.swap(outer);
            scope.close();
        } finally {
            if (!handedOff) {
                pins.release();
            }
        }
    }

    /** Pins on the buffers of one call; released once. */
    static final class Pins {
        private final Buffer[] buffers; // kept reachable until release
        private int pinned;
        private final boolean device;
        private final boolean holds;

        Pins(Buffer[] buffers) {
            this.buffers = buffers;
            // on a view's thread the view pinned these buffers when it took the call, until the stream passes it:
            // a buffer the program closed since (allowed: its memory goes when the call is done) is still this call's
            this.holds = !StreamOrderedCommunicator.onViewThread();
            boolean dev = false;
            try {
                for (Buffer b : buffers) {
                    if (b == null) {
                        pinned++;
                        continue;
                    }
                    if (holds) b.lifetime().pin(b);
                    pinned++;
                    dev |= b.kind().needsCuda();
                }
            } catch (RuntimeException e) {
                release();
                throw e;
            }
            this.device = dev;
        }

        /** True when a buffer is device memory. */
        boolean device() {
            return device;
        }

        synchronized void release() {
            for (int i = 0; i < pinned && holds; i++) {
                if (buffers[i] != null) {
                    buffers[i].lifetime().unpin();
                }
            }
            pinned = 0;
        }
    }
}
