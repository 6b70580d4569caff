// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuCtxEnablePeerAccess;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceCanAccessPeer;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocManaged;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemGetAddressRange;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemcpy;
import static jcuda.driver.JCudaDriver.cuMemcpyAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyPeerAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuPointerGetAttribute;

import dev.ferry.Buffer;
import dev.ferry.CudaException;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.MemoryKind;
import dev.ferry.spi.Launch;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemAttach_flags;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUpointer_attribute;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * The CUDA driver, through JCuda: availability, devices, device and pinned memory, copies.
 *
 * <p>Availability is decided once, by really loading the driver and initializing it
 * ({@code cuInit}, at least one device). Without a GPU or driver, {@link #isAvailable()} is
 * false, {@link #unavailabilityCause()} says why ("no CUDA driver: libcuda.so.1 not found"),
 * and every allocation throws {@link CudaException} with that reason; host paths keep working.
 *
 * <p>Device selection: a process uses one GPU, {@link #defaultDevice()}: {@code -Dferry.device=N}
 * if set, else the node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 * MV2_COMM_WORLD_LOCAL_RANK) modulo the number of devices.
 */
public final class Cuda {
    private static final Throwable UNAVAILABILITY_CAUSE;
    private static final CudaDevice[] DEVICES;
    private static final int DRIVER_VERSION;

    static {
        Throwable cause = null;
        CudaDevice[] devices = new CudaDevice[0];
        int version = 0;
        try {
            findDriver();
            dev.ferry.spi.ProcessEnvironment.prepareForCuda(); // before cuInit: the driver reads it when it starts
            // JCuda's loader finds whole copies of its libraries in this user's private folder (JCudaNatives)
            JCudaNatives.whileLoading(() -> JCudaDriver.setExceptionsEnabled(false));
            int r = cuInit(0);
            if (r == CUresult.CUDA_ERROR_NO_DEVICE) {
                throw new CudaException("CUDA driver present but no CUDA device is visible (cuInit: CUDA_ERROR_NO_DEVICE); check CUDA_VISIBLE_DEVICES and nvidia-smi", r);
            }
            check(r, "cuInit");
            int[] n = new int[1];
            check(cuDeviceGetCount(n), "cuDeviceGetCount");
            if (n[0] == 0) {
                throw new CudaException("CUDA driver present but it reports 0 devices", CUresult.CUDA_ERROR_NO_DEVICE);
            }
            int[] v = new int[1];
            check(cuDriverGetVersion(v), "cuDriverGetVersion");
            version = v[0];
            devices = new CudaDevice[n[0]];
            for (int i = 0; i < n[0]; i++) {
                devices[i] = new CudaDevice(i);
            }
        } catch (UnsatisfiedLinkError e) {
            cause = new CudaException("no CUDA driver: the JCuda driver binding could not be loaded (" + e.getMessage()
                    + "); a GPU machine needs the NVIDIA driver's libcuda.so.1", e);
            devices = new CudaDevice[0];
        } catch (Throwable e) {
            cause = e instanceof CudaException ? e : new CudaException("CUDA initialization failed: " + e, e);
            devices = new CudaDevice[0];
        }
        UNAVAILABILITY_CAUSE = cause;
        DEVICES = devices;
        DRIVER_VERSION = version;
    }

    private static volatile CudaDevice defaultDevice;

    /**
     * Looks for the driver library before JCuda extracts and loads its binding, so that a machine
     * without a driver gets one plain reason and JCuda is not loaded at all.
     */
    private static void findDriver() {
        try {
            java.lang.foreign.SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        } catch (IllegalArgumentException e) {
            throw new CudaException("no CUDA driver: libcuda.so.1 was not found (no NVIDIA driver on this machine); "
                    + "host buffers work, device and pinned buffers do not", e);
        }
    }

    private Cuda() {
    }

    /** True when the driver loaded and at least one device is visible. */
    public static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    /** Why CUDA is unavailable, or null. */
    public static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    /** Throws a {@link CudaException} with the stored cause when CUDA is unavailable. */
    public static void ensureAvailability() {
        if (UNAVAILABILITY_CAUSE != null) {
            throw new CudaException("CUDA is unavailable: " + UNAVAILABILITY_CAUSE.getMessage(), UNAVAILABILITY_CAUSE);
        }
    }

    /** Driver version as CUDA encodes it (13000 for 13.0); 0 when unavailable. */
    public static int driverVersion() {
        return DRIVER_VERSION;
    }

    /** "13.0", or "none". */
    public static String driverVersionString() {
        return DRIVER_VERSION == 0 ? "none" : (DRIVER_VERSION / 1000) + "." + (DRIVER_VERSION % 1000) / 10;
    }

    public static int deviceCount() {
        return DEVICES.length;
    }

    /** True when {@code context} is the primary context of a device, retained by this process (it lives as long as the process). */
    static boolean isPrimaryContext(long context) {
        for (CudaDevice d : DEVICES) {
            if (context != 0 && d.retainedContextHandle() == context) return true;
        }
        return false;
    }

    public static CudaDevice device(int ordinal) {
        ensureAvailability();
        if (ordinal < 0 || ordinal >= DEVICES.length) {
            throw new InvalidArgumentException("device " + ordinal + " does not exist; this process sees " + DEVICES.length + " CUDA device(s)");
        }
        return DEVICES[ordinal];
    }

    /**
     * The process's GPU: {@code ferry.device} if set, else node-local rank modulo device count.
     * Its context is made current on the calling thread.
     */
    public static CudaDevice defaultDevice() {
        CudaDevice d = defaultDevice;
        if (d == null) {
            ensureAvailability();
            synchronized (Cuda.class) {
                if (defaultDevice == null) {
                    defaultDevice = device(selectOrdinal(Launch.detect(), DEVICES.length));
                }
                d = defaultDevice;
            }
        }
        d.makeCurrent();
        return d;
    }

    /**
     * The ordinal, in this process, of the GPU at {@code pciLocation} ({@link CudaDevice#pciLocation()},
     * as another process of the node reported it); -1 when this process does not see that GPU.
     */
    public static int ordinalAt(int pciLocation) {
        ensureAvailability();
        for (CudaDevice d : DEVICES) {
            if (pciLocation != 0 && d.pciLocation() == pciLocation) return d.ordinal();
        }
        return -1;
    }

    /** Sets the process's GPU explicitly (before first use, typically). */
    public static void setDefaultDevice(int ordinal) {
        defaultDevice = device(ordinal);
        defaultDevice.makeCurrent();
    }

    /**
     * {@code ferry.device} if set, else the node-local rank modulo {@code count}: the launcher's, else
     * the one MPI's shared-memory split found ({@link dev.ferry.spi.NodeLocal}), else 0.
     */
    static int selectOrdinal(Launch launch, int count) {
        Integer forced = Settings.process().get(FerrySettings.DEVICE);
        if (forced != null) {
            return forced;
        }
        int local = Math.max(dev.ferry.spi.NodeLocal.rank(launch), 0);
        return count == 0 ? 0 : local % count;
    }

    // ---- allocation ----------------------------------------------------------------------

    /** Allocates device memory on the default device; freed by {@link DeviceBuffer#close()}. */
    public static DeviceBuffer allocate(long bytes) {
        return allocate(defaultDevice().ordinal(), bytes);
    }

    /** Allocates device memory on {@code device}; freed by {@link DeviceBuffer#close()}. */
    public static DeviceBuffer allocate(int device, long bytes) {
        if (bytes < 0) {
            throw new InvalidCountException("cannot allocate " + bytes + " bytes");
        }
        CudaDevice d = device(device);
        d.makeCurrent();
        CUdeviceptr p = new CUdeviceptr();
        check(cuMemAlloc(p, Math.max(bytes, 1)), "cuMemAlloc(" + bytes + " bytes on device " + device + ")");
        long address = JCudaPointers.address(p);
        return DeviceBuffer.adopt(device, address, bytes, MemoryKind.DEVICE, () -> free(d, () -> check(cuMemFree(p), "cuMemFree")));
    }

    /** Allocates managed (unified) memory attached globally, associated with the default device. */
    public static DeviceBuffer allocateManaged(long bytes) {
        if (bytes < 0) {
            throw new InvalidCountException("cannot allocate " + bytes + " bytes");
        }
        CudaDevice d = defaultDevice();
        CUdeviceptr p = new CUdeviceptr();
        check(cuMemAllocManaged(p, Math.max(bytes, 1), CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged(" + bytes + " bytes)");
        return DeviceBuffer.adopt(d.ordinal(), JCudaPointers.address(p), bytes, MemoryKind.MANAGED, () -> free(d, () -> check(cuMemFree(p), "cuMemFree")));
    }

    /**
     * Runs {@code free} with {@code d}'s context current, the caller's kept. On a stream-ordered
     * view's thread it waits until the view holds no stream ({@link dev.ferry.spi.HeldStream}):
     * cuMemFree and cuMemFreeHost wait for the device's streams, and one of them waits for that
     * thread.
     */
    @SuppressWarnings("try") // the scope is held for its close (restoring the caller's context), not used
    private static void free(CudaDevice d, Runnable free) {
        dev.ferry.spi.HeldStream.runWhenReleased(() -> {
            try (dev.ferry.spi.DeviceSupport.Scope ignored = CudaDeviceSupport.restoring(DriverContexts.current())) {
                d.makeCurrent();
                free.run();
            }
        });
    }

    /**
     * Allocates pinned (page-locked, portable) host memory; freed by {@link HostBuffer#close()}.
     * DMA engines copy it at full PCIe speed, and CUDA-aware MPIs register it cheaply.
     */
    public static HostBuffer allocatePinned(long bytes) {
        if (bytes < 0) {
            throw new InvalidCountException("cannot allocate " + bytes + " bytes");
        }
        CudaDevice d = defaultDevice();
        Pointer p = new Pointer();
        check(cuMemHostAlloc(p, Math.max(bytes, 1), JCudaDriver.CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc(" + bytes + " bytes)");
        long address = JCudaPointers.address(p);
        Arena arena = Arena.ofShared();
        MemorySegment seg = MemorySegment.ofAddress(address).reinterpret(bytes, arena, s -> free(d, () -> check(cuMemFreeHost(p), "cuMemFreeHost")));
        return HostBuffer.adopt(seg, MemoryKind.HOST_PINNED, arena);
    }

    // ---- copies --------------------------------------------------------------------------

    /**
     * Copies {@code bytes} between any two buffers (unified addressing finds the direction); returns
     * when done, so that work on any stream sees the copy.
     */
    public static void copy(Buffer dst, Buffer src, long bytes) {
        checkCopy(dst, src, bytes);
        CudaDevice d = deviceOf(dst, src);
        d.makeCurrent();
        copyAndWait(d, dst.address(), src.address(), bytes);
    }

    /** Raw-address form of {@link #copy}: unified addressing finds the direction; returns when done. */
    public static void copy(long dst, long src, long bytes) {
        copyAndWait(defaultDevice(), dst, src, bytes);
    }

    /**
     * cuMemcpy, then a synchronize of the legacy default stream it ran on: a device-to-device cuMemcpy
     * returns before the copy is done, and non-blocking streams (Ferry's) do not wait for that stream,
     * so a copy into scratch could otherwise still be running when a transport reads the scratch.
     * On a stream-ordered view's thread the copy runs on a non-blocking stream of Ferry's
     * instead: the legacy stream waits for every blocking stream, and the caller's stream, which may
     * be one, waits for the call that copies.
     */
    private static void copyAndWait(CudaDevice device, long dst, long src, long bytes) {
        if (dev.ferry.spi.HeldStream.holding()) {
            CudaStream s = viewCopies(device);
            check(cuMemcpyAsync(JCudaPointers.device(dst), JCudaPointers.device(src), bytes, s.handle()), "cuMemcpyAsync(" + bytes + " bytes)");
            s.synchronize();
            return;
        }
        check(cuMemcpy(JCudaPointers.device(dst), JCudaPointers.device(src), bytes), "cuMemcpy(" + bytes + " bytes)");
        check(jcuda.driver.JCudaDriver.cuStreamSynchronize(new jcuda.driver.CUstream()), "cuStreamSynchronize(legacy default stream) after cuMemcpy");
    }

    /** The views' threads' streams for {@link #copyAndWait}, one per device, made at its first such copy (never destroyed: they live as long as the contexts). */
    private static final CudaStream[] VIEW_COPIES = new CudaStream[DEVICES.length];

    private static synchronized CudaStream viewCopies(CudaDevice device) {
        CudaStream s = VIEW_COPIES[device.ordinal()];
        if (s == null) s = VIEW_COPIES[device.ordinal()] = new CudaStream(device);
        return s;
    }

    /** Enqueues a copy on {@code stream}; asynchronous only when host memory involved is pinned. */
    public static void copyAsync(Buffer dst, Buffer src, long bytes, CudaStream stream) {
        checkCopy(dst, src, bytes);
        stream.device().makeCurrent();
        check(cuMemcpyAsync(JCudaPointers.device(dst.address()), JCudaPointers.device(src.address()), bytes, stream.handle()),
                "cuMemcpyAsync(" + bytes + " bytes)");
    }

    /** Raw-address form of {@link #copyAsync}, for transports that copy pieces of buffers. */
    public static void copyAsync(long dst, long src, long bytes, CudaStream stream) {
        stream.device().makeCurrent();
        check(cuMemcpyAsync(JCudaPointers.device(dst), JCudaPointers.device(src), bytes, stream.handle()), "cuMemcpyAsync(" + bytes + " bytes)");
    }

    /** Sets every byte of {@code dst} to {@code value}; returns when done. */
    public static void fill(Buffer dst, byte value) {
        dst.checkMemory();
        if (dst.kind().isHostAccessible() && dst instanceof HostBuffer h) {
            h.segment().fill(value);
            return;
        }
        deviceOf(dst, dst).makeCurrent();
        check(cuMemsetD8(JCudaPointers.device(dst.address()), value, dst.byteSize()), "cuMemsetD8");
    }

    /** Enqueues a byte fill of device memory on {@code stream}. */
    public static void fillAsync(DeviceBuffer dst, byte value, CudaStream stream) {
        dst.checkMemory();
        stream.device().makeCurrent();
        check(cuMemsetD8Async(JCudaPointers.device(dst.address()), value, dst.byteSize(), stream.handle()), "cuMemsetD8Async");
    }

    /** Waits for all work of the default device's context. */
    public static void synchronize() {
        defaultDevice();
        check(cuCtxSynchronize(), "cuCtxSynchronize");
    }

    /**
     * Waits for all work of {@code device}'s primary context (cuCtxSynchronize there): what
     * transports call before reading a device buffer, so that kernels and copies the application
     * queued on any stream of that context have finished.
     */
    public static void synchronize(int device) {
        device(device).makeCurrent();
        check(cuCtxSynchronize(), "cuCtxSynchronize(device " + device + ")");
    }

    private static void checkCopy(Buffer dst, Buffer src, long bytes) {
        dst.checkMemory();
        src.checkMemory();
        if (bytes < 0 || bytes > dst.byteSize() || bytes > src.byteSize()) {
            throw new InvalidCountException("copy of " + bytes + " bytes from " + src + " to " + dst + " is out of bounds");
        }
    }

    private static CudaDevice deviceOf(Buffer a, Buffer b) {
        if (a.device() >= 0) return device(a.device());
        if (b.device() >= 0) return device(b.device());
        return defaultDevice();
    }

    // ---- streams, events, peers, pointers --------------------------------------------------

    /** A new non-blocking stream on the default device. */
    public static CudaStream newStream() {
        return new CudaStream(defaultDevice());
    }

    /** A new non-blocking stream on {@code device}. */
    public static CudaStream newStream(int device) {
        return new CudaStream(device(device));
    }

    /**
     * A new non-blocking stream on the default device with the greatest priority the device offers:
     * the GPU starts the blocks of its kernels before waiting blocks of streams of lower priority.
     * Give it to {@code Communicator.onStream} when collectives should run beside long kernels of
     * other streams rather than after them (as frameworks do with their communication streams).
     */
    public static CudaStream newHighPriorityStream() {
        return CudaStream.highestPriority(defaultDevice());
    }

    /**
     * A stream of the program's own (made with JCuda or another library) on {@code device}, for
     * {@code Communicator.onStream}; closing the result leaves the stream to its owner.
     */
    public static CudaStream wrapStream(jcuda.driver.CUstream stream, int device) {
        if (stream == null) {
            throw new dev.ferry.InvalidArgumentException("wrapStream: the stream is null");
        }
        return new CudaStream(device(device), stream);
    }

    /** A new event on the default device; {@code timing} to measure with it. */
    public static CudaEvent newEvent(boolean timing) {
        return new CudaEvent(defaultDevice(), timing, false);
    }

    /** A new event on {@code device}; {@code timing} to measure with it (without, it is cheaper to record and query). */
    public static CudaEvent newEvent(int device, boolean timing) {
        return new CudaEvent(device(device), timing, false);
    }

    /**
     * Lets {@code from}'s context map memory of {@code to} (cuCtxEnablePeerAccess); true when peer
     * access is on afterwards (already enabled counts), false when the pair cannot access each other.
     */
    public static boolean enablePeerAccess(int from, int to) {
        if (from == to) {
            return true;
        }
        if (!canAccessPeer(from, to)) {
            return false;
        }
        CudaDevice peer = device(to);
        device(from).makeCurrent();
        int r = cuCtxEnablePeerAccess(peer.context(), 0);
        if (r != CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            check(r, "cuCtxEnablePeerAccess(" + from + " -> " + to + ")");
        }
        return true;
    }

    /**
     * Enqueues a copy between two devices' memory on {@code stream} (cuMemcpyPeerAsync): over
     * NVLink or PCIe peer-to-peer when peer access is enabled, through the host otherwise.
     */
    public static void copyPeerAsync(long dst, int dstDevice, long src, int srcDevice, long bytes, CudaStream stream) {
        CudaDevice d = device(dstDevice), s = device(srcDevice);
        stream.device().makeCurrent();
        check(cuMemcpyPeerAsync(JCudaPointers.device(dst), d.context(), JCudaPointers.device(src), s.context(), bytes, stream.handle()),
                "cuMemcpyPeerAsync(" + bytes + " bytes, device " + srcDevice + " -> " + dstDevice + ")");
    }

    /** {@code CU_DEVICE_ATTRIBUTE_MPS_ENABLED} (CUDA 12.5 and later), which JCuda 12.0 does not name. */
    private static final int ATTRIBUTE_MPS_ENABLED = 133;

    /**
     * True when contexts on {@code device} are shared through CUDA MPS, so that kernels of several
     * processes on it run at once; false without MPS (their contexts take turns on the GPU) and
     * where the driver is too old to say.
     */
    public static boolean mpsEnabled(int device) {
        int[] v = new int[1];
        int r = jcuda.driver.JCudaDriver.cuDeviceGetAttribute(v, ATTRIBUTE_MPS_ENABLED, device(device).handle());
        return r == jcuda.driver.CUresult.CUDA_SUCCESS && v[0] != 0;
    }

    /** True when {@code from} can map memory of {@code to} (NVLink or PCIe peer-to-peer). */
    public static boolean canAccessPeer(int from, int to) {
        if (from == to) {
            return true;
        }
        int[] can = new int[1];
        check(cuDeviceCanAccessPeer(can, device(from).handle(), device(to).handle()), "cuDeviceCanAccessPeer(" + from + ", " + to + ")");
        return can[0] != 0;
    }

    /**
     * What the driver knows of an address: HOST_PINNED, DEVICE or MANAGED, or HOST_PAGEABLE for
     * memory it does not know.
     */
    public static MemoryKind kindOf(long address) {
        ensureAvailability();
        int[] type = new int[1];
        int r = cuPointerGetAttribute(Pointer.to(type), CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, JCudaPointers.device(address));
        if (r == CUresult.CUDA_ERROR_INVALID_VALUE || r == CUresult.CUDA_ERROR_NOT_INITIALIZED || (r == CUresult.CUDA_SUCCESS && type[0] == 0)) {
            return MemoryKind.HOST_PAGEABLE;
        }
        check(r, "cuPointerGetAttribute(MEMORY_TYPE)");
        int[] managed = new int[1];
        check(cuPointerGetAttribute(Pointer.to(managed), CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED, JCudaPointers.device(address)),
                "cuPointerGetAttribute(IS_MANAGED)");
        if (managed[0] != 0) {
            return MemoryKind.MANAGED;
        }
        return type[0] == CUmemorytype.CU_MEMORYTYPE_DEVICE ? MemoryKind.DEVICE : MemoryKind.HOST_PINNED;
    }

    /** Device ordinal of a device or managed pointer. */
    public static int deviceOf(long address) {
        int[] ordinal = new int[1];
        check(cuPointerGetAttribute(Pointer.to(ordinal), CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, JCudaPointers.device(address)),
                "cuPointerGetAttribute(DEVICE_ORDINAL)");
        return ordinal[0];
    }

    /**
     * True when the device memory of {@code buffer} belongs to its device's primary context (the
     * context Ferry's own streams, kernels and IPC mappings live in), so that Ferry's kernels may
     * read and write it; false for memory a context of the application's own allocated
     * (cuCtxCreate), which only copies reach.
     */
    public static boolean inPrimaryContext(Buffer buffer) {
        buffer.checkMemory();
        if (!buffer.kind().needsCuda() || buffer.device() < 0) {
            return false;
        }
        long owner = buffer instanceof DeviceBuffer d ? CudaDeviceSupport.owner(d) : DriverContexts.contextOf(buffer.address());
        return owner == device(buffer.device()).contextHandle();
    }

    /** Base address and size of the allocation containing {@code address} (cuMemGetAddressRange). */
    public static long[] addressRange(long address) {
        CUdeviceptr base = new CUdeviceptr();
        long[] size = new long[1];
        check(cuMemGetAddressRange(base, size, JCudaPointers.device(address)), "cuMemGetAddressRange");
        return new long[] {JCudaPointers.address(base), size[0]};
    }

    // ---- JCuda interop -----------------------------------------------------------------------

    /** Borrows a JCuda device pointer as a buffer of {@code bytes}; the caller keeps the memory alive. */
    public static DeviceBuffer wrap(CUdeviceptr pointer, long bytes) {
        long address = JCudaPointers.address(pointer);
        MemoryKind kind = kindOf(address);
        if (!kind.needsCuda()) {
            throw new InvalidArgumentException("0x" + Long.toHexString(address) + " is " + kind + " memory, not a device pointer");
        }
        return DeviceBuffer.wrap(deviceOf(address), address, bytes);
    }

    /** A JCuda pointer to the first byte of {@code buffer}, for kernels and JCuda calls. */
    public static CUdeviceptr pointer(Buffer buffer) {
        buffer.checkMemory();
        return JCudaPointers.device(buffer.address());
    }

    /** One line for reports: "CUDA 13.0, 2 devices: GPU 0 (...), GPU 1 (...)" or the reason. */
    public static String describe() {
        if (!isAvailable()) {
            return UNAVAILABILITY_CAUSE.getMessage();
        }
        StringBuilder sb = new StringBuilder("CUDA driver " + driverVersionString() + ", " + DEVICES.length + " device(s)");
        for (CudaDevice d : DEVICES) {
            sb.append("; ").append(d);
        }
        return sb.toString();
    }
}
