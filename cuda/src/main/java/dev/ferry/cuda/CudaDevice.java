// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceGetPCIBusId;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;

/**
 * One GPU and its primary context (retained on first use, shared with every other user of the
 * runtime API in the process). Obtain with {@link Cuda#device(int)}.
 */
public final class CudaDevice {
    private final int ordinal;
    private final CUdevice handle = new CUdevice();
    private final String name;
    private final long totalMemory;
    private final String pciBusId;
    /** {@link #pciLocation()}, parsed once: collectives compare it on every call. */
    private final int pciLocation;
    private volatile CUcontext context;
    private volatile long contextHandle;

    CudaDevice(int ordinal) {
        this.ordinal = ordinal;
        check(cuDeviceGet(handle, ordinal), "cuDeviceGet(" + ordinal + ")");
        byte[] nm = new byte[256];
        check(cuDeviceGetName(nm, nm.length, handle), "cuDeviceGetName");
        int len = 0;
        while (len < nm.length && nm[len] != 0) len++;
        this.name = new String(nm, 0, len, java.nio.charset.StandardCharsets.US_ASCII);
        long[] mem = new long[1];
        check(cuDeviceTotalMem(mem, handle), "cuDeviceTotalMem");
        this.totalMemory = mem[0];
        String[] bus = new String[1];
        check(cuDeviceGetPCIBusId(bus, 32, handle), "cuDeviceGetPCIBusId");
        this.pciBusId = bus[0] == null ? "?" : bus[0].trim();
        this.pciLocation = pciLocation(pciBusId);
    }

    public int ordinal() {
        return ordinal;
    }

    public String name() {
        return name;
    }

    public long totalMemory() {
        return totalMemory;
    }

    public String pciBusId() {
        return pciBusId;
    }

    /**
     * Where the GPU sits on the PCI bus, packed in one int (domain 16 bits, bus 8, device 5,
     * function 3): the same GPU has the same value in every process of the node, whatever their
     * {@code CUDA_VISIBLE_DEVICES} (ordinals do not have to agree); 0 when the driver gave no bus id.
     */
    public int pciLocation() {
        return pciLocation;
    }

    /** {@link #pciLocation()} of a bus id {@code DOMAIN:BUS:DEVICE.FUNCTION} in hexadecimal; 0 when it is not one. */
    static int pciLocation(String busId) {
        String[] p = busId.split("[:.]");
        if (p.length != 4) return 0;
        try {
            int domain = Integer.parseInt(p[0], 16), bus = Integer.parseInt(p[1], 16), device = Integer.parseInt(p[2], 16), function = Integer.parseInt(p[3], 16);
            return domain << 16 | (bus & 0xff) << 8 | (device & 0x1f) << 3 | (function & 0x7);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    CUdevice handle() {
        return handle;
    }

    /** The primary context, retained once. */
    CUcontext context() {
        CUcontext c = context;
        if (c == null) {
            synchronized (this) {
                if (context == null) {
                    CUcontext ctx = new CUcontext();
                    check(cuDevicePrimaryCtxRetain(ctx, handle), "cuDevicePrimaryCtxRetain(device " + ordinal + ")");
                    contextHandle = JCudaPointers.handle(ctx);
                    context = ctx;
                }
                c = context;
            }
        }
        return c;
    }

    /** The primary context's raw handle once retained, else 0 (retains nothing). */
    long retainedContextHandle() {
        return contextHandle;
    }

    /** The primary context's raw handle. */
    long contextHandle() {
        context();
        return contextHandle;
    }

    /**
     * Makes this device's primary context current on the calling thread (cheap when it already
     * is). The driver is asked what is current, not a cache: the application may have made a
     * context of its own current since Ferry's last call.
     */
    public void makeCurrent() {
        long primary = contextHandle();
        if (DriverContexts.current() != primary) {
            check(cuCtxSetCurrent(context), "cuCtxSetCurrent(device " + ordinal + ")");
        }
    }

    @Override
    public String toString() {
        return "GPU " + ordinal + " (" + name + ", " + (totalMemory >> 20) + " MiB, PCI " + pciBusId + ")";
    }
}
