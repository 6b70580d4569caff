// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuIpcCloseMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcGetEventHandle;
import static jcuda.driver.JCudaDriver.cuIpcGetMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenEventHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenMemHandle;

import dev.ferry.DeviceBuffer;
import java.lang.reflect.Field;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUipcEventHandle;
import jcuda.driver.CUipcMemHandle;
import jcuda.driver.CUipcMem_flags;

/**
 * CUDA IPC: export a device allocation as a 64-byte handle another process of the node can open
 * and map, without copies. Handles cover whole allocations; {@link Export} carries the offset of
 * the buffer inside its allocation.
 */
public final class CudaIpc {
    /** Size of a CUDA IPC handle in bytes. */
    public static final int HANDLE_BYTES = 64;

    private static final Field MEM_RESERVED;
    private static final Field EVENT_RESERVED;

    static {
        try {
            MEM_RESERVED = CUipcMemHandle.class.getDeclaredField("reserved");
            MEM_RESERVED.setAccessible(true);
            EVENT_RESERVED = CUipcEventHandle.class.getDeclaredField("reserved");
            EVENT_RESERVED.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private CudaIpc() {
    }

    /**
     * What a peer needs to map a buffer: the handle of its allocation, the allocation's base and
     * size (to key caches), and the buffer's offset in it.
     *
     * @param handle       64-byte cuIpcMemHandle of the allocation
     * @param base         allocation base address in the exporting process (a cache key, not usable by the peer)
     * @param size         allocation size
     * @param offset       offset of the exported buffer from the base
     * @param device       exporting device ordinal
     */
    public record Export(byte[] handle, long base, long size, long offset, int device) {
    }

    /** Exports the allocation that contains {@code buffer} (cuMemGetAddressRange, then cuIpcGetMemHandle). */
    public static Export export(DeviceBuffer buffer) {
        buffer.checkMemory();
        Cuda.device(buffer.device()).makeCurrent();
        long[] range = Cuda.addressRange(buffer.address());
        CUipcMemHandle h = new CUipcMemHandle();
        check(cuIpcGetMemHandle(h, JCudaPointers.device(range[0])), "cuIpcGetMemHandle");
        return new Export(bytes(MEM_RESERVED, h), range[0], range[1], buffer.address() - range[0], buffer.device());
    }

    /**
     * Maps a peer's allocation into this process on {@code device} (peer access enabled lazily);
     * returns the mapped base address. Must not be called in the process that exported it.
     */
    public static long open(byte[] handle, int device) {
        Cuda.device(device).makeCurrent();
        CUipcMemHandle h = new CUipcMemHandle();
        set(MEM_RESERVED, h, handle);
        CUdeviceptr p = new CUdeviceptr();
        check(cuIpcOpenMemHandle(p, h, CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
        return JCudaPointers.address(p);
    }

    /** Unmaps an address returned by {@link #open}. */
    public static void close(long mappedBase, int device) {
        Cuda.device(device).makeCurrent();
        check(cuIpcCloseMemHandle(JCudaPointers.device(mappedBase)), "cuIpcCloseMemHandle");
    }

    /** The 64-byte IPC handle of an interprocess event. */
    public static byte[] exportEvent(CudaEvent event) {
        event.device().makeCurrent();
        CUipcEventHandle h = new CUipcEventHandle();
        check(cuIpcGetEventHandle(h, event.handle()), "cuIpcGetEventHandle");
        return bytes(EVENT_RESERVED, h);
    }

    /** Opens a peer's interprocess event on {@code device}. */
    public static CudaEvent openEvent(byte[] handle, int device) {
        CudaDevice d = Cuda.device(device);
        d.makeCurrent();
        CUipcEventHandle h = new CUipcEventHandle();
        set(EVENT_RESERVED, h, handle);
        CUevent e = new CUevent();
        check(cuIpcOpenEventHandle(e, h), "cuIpcOpenEventHandle");
        return new CudaEvent(d, e);
    }

    /** A new event that other processes can open (no timing, as CUDA requires). */
    public static CudaEvent newInterprocessEvent(int device) {
        return new CudaEvent(Cuda.device(device), false, true);
    }

    private static byte[] bytes(Field f, Object handle) {
        try {
            return ((byte[]) f.get(handle)).clone();
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void set(Field f, Object handle, byte[] value) {
        if (value.length != HANDLE_BYTES) {
            throw new IllegalArgumentException("an IPC handle has " + HANDLE_BYTES + " bytes, not " + value.length);
        }
        try {
            System.arraycopy(value, 0, (byte[]) f.get(handle), 0, HANDLE_BYTES);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }
}
