// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Staging copies on the GPU's copy engines: per device, one non-blocking stream for device-to-host
 * copies, one for host-to-device copies (so that both directions of PCIe are busy at once) and one
 * for device-to-device copies of the IPC path; each copy is followed by an event, which is the
 * fence. Events are pooled. Every driver call goes through {@link Cuda}'s checked wrappers.
 */
final class CudaCopyEngine implements CopyEngine {
    private final boolean contextSync;
    private final Calls calls;
    private final Map<Integer, PerDevice> devices = new HashMap<>();
    private boolean closed;

    /** {@code contextSync}: cuCtxSynchronize in {@link #awaitPriorWork}, as the Communicator contract asks. */
    CudaCopyEngine(boolean contextSync) {
        this(contextSync, new Calls());
    }

    /** As above, counting (and when asked, timing) every driver call in {@code calls}. */
    CudaCopyEngine(boolean contextSync, Calls calls) {
        this.contextSync = contextSync;
        this.calls = calls;
    }

    private static final class PerDevice {
        final int ordinal;
        CudaStream out, in, peer;
        final ArrayDeque<CudaEvent> events = new ArrayDeque<>();
        int eventsCreated;

        PerDevice(int ordinal) {
            this.ordinal = ordinal;
        }
    }

    private synchronized PerDevice device(int ordinal) {
        if (closed) {
            throw new IllegalStateException("the CUDA copy engine was closed (Ferry.shutdown?)");
        }
        return devices.computeIfAbsent(ordinal, PerDevice::new);
    }

    private synchronized CudaStream stream(PerDevice d, int which) {
        switch (which) {
            case 0 -> {
                if (d.out == null) {
                    d.out = Cuda.newStream(d.ordinal);
                    calls.count(Calls.Kind.STREAM_CREATE);
                }
                return d.out;
            }
            case 1 -> {
                if (d.in == null) {
                    d.in = Cuda.newStream(d.ordinal);
                    calls.count(Calls.Kind.STREAM_CREATE);
                }
                return d.in;
            }
            default -> {
                if (d.peer == null) {
                    d.peer = Cuda.newStream(d.ordinal);
                    calls.count(Calls.Kind.STREAM_CREATE);
                }
                return d.peer;
            }
        }
    }

    private Fence recordOn(PerDevice d, CudaStream s) {
        CudaEvent e;
        synchronized (this) {
            e = d.events.pollFirst();
            if (e == null) {
                e = Cuda.newEvent(d.ordinal, false);
                d.eventsCreated++;
                calls.count(Calls.Kind.EVENT_CREATE);
            }
        }
        try {
            long t = calls.start();
            e.record(s);
            calls.end(Calls.Kind.EVENT_RECORD, t);
        } catch (RuntimeException ex) {
            giveBack(d, e);
            throw ex;
        }
        return new EventFence(d, e);
    }

    private synchronized void giveBack(PerDevice d, CudaEvent e) {
        if (closed) {
            e.close();
        } else {
            d.events.addLast(e);
        }
    }

    private final class EventFence implements Fence {
        private final PerDevice device;
        private CudaEvent event;

        EventFence(PerDevice device, CudaEvent event) {
            this.device = device;
            this.event = event;
        }

        @Override
        public synchronized boolean isDone() {
            if (event == null) {
                return true;
            }
            long t = calls.start();
            boolean done = event.isDone();
            calls.end(Calls.Kind.EVENT_QUERY, t);
            if (!done) {
                return false;
            }
            giveBack(device, event);
            event = null;
            return true;
        }

        @Override
        public synchronized void await() {
            if (event != null) {
                long t = calls.start();
                event.synchronize();
                calls.end(Calls.Kind.EVENT_SYNC, t);
                giveBack(device, event);
                event = null;
            }
        }
    }

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public void awaitPriorWork(Buffer buffer) {
        if (contextSync && buffer.kind().needsCuda()) {
            long t = calls.start();
            Cuda.synchronize(buffer.device());
            calls.end(Calls.Kind.CTX_SYNC, t);
        }
    }

    @Override
    public Fence toStaging(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes) {
        if (bytes == 0) {
            return Fence.DONE;
        }
        PerDevice d = device(src.device());
        CudaStream s = stream(d, 0);
        long t = calls.start();
        Cuda.copyAsync(staging.address() + stagingOffset, src.address() + srcOffset, bytes, s);
        calls.end(Calls.Kind.D2H_ASYNC, t);
        return recordOn(d, s);
    }

    @Override
    public Fence fromStaging(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes) {
        if (bytes == 0) {
            return Fence.DONE;
        }
        PerDevice d = device(dst.device());
        CudaStream s = stream(d, 1);
        long t = calls.start();
        Cuda.copyAsync(dst.address() + dstOffset, staging.address() + stagingOffset, bytes, s);
        calls.end(Calls.Kind.H2D_ASYNC, t);
        return recordOn(d, s);
    }

    /**
     * Copies from a peer's memory mapped into this process (an IPC mapping: another GPU, or the
     * same GPU) into {@code dst}, on the device-to-device stream of {@code dst}'s device. Unified
     * addressing lets the driver pick the route: NVLink or PCIe peer-to-peer, or a plain device copy.
     */
    Fence fromPeer(DeviceBuffer dst, long dstOffset, long srcAddress, long bytes) {
        if (bytes == 0) {
            return Fence.DONE;
        }
        PerDevice d = device(dst.device());
        CudaStream s = stream(d, 2);
        long t = calls.start();
        Cuda.copyAsync(dst.address() + dstOffset, srcAddress, bytes, s);
        calls.end(Calls.Kind.D2D_ASYNC, t);
        return recordOn(d, s);
    }

    @Override
    public void toStagingNow(HostBuffer staging, long stagingOffset, Buffer src, long srcOffset, long bytes) {
        if (bytes == 0) {
            return;
        }
        long t = calls.start();
        Cuda.copy(staging.slice(stagingOffset, bytes), src.slice(srcOffset, bytes), bytes); // cuMemcpy: returns when the bytes are on the host
        calls.end(Calls.Kind.D2H_SYNC, t);
    }

    @Override
    public void fromStagingNow(Buffer dst, long dstOffset, HostBuffer staging, long stagingOffset, long bytes) {
        if (bytes == 0) {
            return;
        }
        long t = calls.start();
        Cuda.copy(dst.slice(dstOffset, bytes), staging.slice(stagingOffset, bytes), bytes); // from pinned memory: synchronous for the host
        calls.end(Calls.Kind.H2D_SYNC, t);
    }

    /** Streams and events alive, for leak checks. */
    synchronized int[] counts() {
        int streams = 0, events = 0;
        for (PerDevice d : devices.values()) {
            streams += (d.out != null ? 1 : 0) + (d.in != null ? 1 : 0) + (d.peer != null ? 1 : 0);
            events += d.events.size();
        }
        return new int[] {streams, events};
    }

    @Override
    public void close() {
        List<PerDevice> all;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            all = new ArrayList<>(devices.values());
            devices.clear();
        }
        RuntimeException first = null;
        for (PerDevice d : all) {
            for (CudaStream s : new CudaStream[] {d.out, d.in, d.peer}) {
                if (s == null) continue;
                try {
                    s.synchronize();
                    s.close();
                } catch (RuntimeException e) {
                    if (first == null) first = e; else first.addSuppressed(e);
                }
            }
            for (CudaEvent e : d.events) {
                try {
                    e.close();
                } catch (RuntimeException ex) {
                    if (first == null) first = ex; else first.addSuppressed(ex);
                }
            }
            d.events.clear();
        }
        if (first != null) {
            throw first;
        }
    }
}
