// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.cuda;

import static dev.ferry.cuda.CudaCalls.check;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuStreamWaitValue64;
import static jcuda.driver.JCudaDriver.cuStreamWriteValue64;

import dev.ferry.DeviceBuffer;
import dev.ferry.DeviceStream;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.spi.DeviceSupport;
import java.util.concurrent.locks.LockSupport;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;

/**
 * {@link DeviceSupport.StreamOrder} on a CUDA stream: a mark is an event recorded on the stream (a
 * ring of {@link #MAX_HELD} events); a held mark is followed on the stream by
 * {@code cuStreamWaitValue64} on a word of device memory, which the releasing thread writes with
 * {@code cuStreamWriteValue64} on a stream of its own. Marks count up from 1, and the word holds the
 * last released one, so a stream waits for "at least its mark".
 */
final class CudaStreamOrder implements DeviceSupport.StreamOrder {
    private final CudaStream stream;
    private final CudaStream releases;
    private final DeviceBuffer word;
    private final CudaEvent[] events = new CudaEvent[MAX_HELD];
    private long marks;

    private CudaStreamOrder(CudaStream stream) {
        this.stream = stream;
        CudaDevice device = stream.device();
        device.makeCurrent();
        int[] can = new int[1];
        CUdevice d = new CUdevice();
        check(jcuda.driver.JCudaDriver.cuDeviceGet(d, device.ordinal()), "cuDeviceGet");
        check(cuDeviceGetAttribute(can, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, d), "cuDeviceGetAttribute");
        if (can[0] == 0) {
            throw new UnsupportedBufferException("stream-ordered calls need 64-bit stream memory operations (cuStreamWaitValue64), which "
                    + device + " does not offer with this driver (" + Cuda.driverVersionString() + ")");
        }
        this.word = Cuda.allocate(device.ordinal(), 8);
        Cuda.fill(word, (byte) 0);
        this.releases = new CudaStream(device);
        for (int i = 0; i < MAX_HELD; i++) {
            events[i] = new CudaEvent(device, false, false);
        }
    }

    /** The order keeper of {@code s}, which must be a {@link CudaStream}. */
    static CudaStreamOrder of(DeviceStream s) {
        if (!(s instanceof CudaStream cs)) {
            throw new UnsupportedBufferException("onStream takes a dev.ferry.cuda.CudaStream (Cuda.newStream(), or Cuda.wrapStream for a stream of "
                    + "your own), not a " + s.getClass().getName());
        }
        return new CudaStreamOrder(cs);
    }

    @Override
    public void prepareKernels(dev.ferry.DataType type) {
        if (type != null) DeviceReduction.preload(stream.device(), type); // null: no reduction
        DeviceReduction.preload(stream.device(), dev.ferry.DataType.BYTE); // the block copies (ipc-kernel) are in the byte module
    }

    @Override
    public long mark(boolean hold) {
        long m = ++marks;
        events[(int) (m % MAX_HELD)].record(stream);
        if (hold) {
            stream.device().makeCurrent();
            check(cuStreamWaitValue64(stream.handle(), JCudaPointers.device(word.address()), m, jcuda.driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ),
                    "cuStreamWaitValue64");
        }
        return m;
    }

    @Override
    public boolean reached(long mark) {
        return events[(int) (mark % MAX_HELD)].isDone();
    }

    @Override
    public void awaitReached(long mark) {
        CudaEvent e = events[(int) (mark % MAX_HELD)];
        // a short spin for the usual case (the stream is there already or nearly), then a parked wait
        for (int spins = 0; !e.isDone(); spins++) {
            if (spins < 2000) Thread.onSpinWait(); else LockSupport.parkNanos(spins < 20_000 ? 10_000 : 100_000);
        }
    }

    @Override
    public void release(long mark) {
        releases.device().makeCurrent();
        check(cuStreamWriteValue64(releases.handle(), JCudaPointers.device(word.address()), mark, 0), "cuStreamWriteValue64");
    }

    @Override
    public boolean capturing() {
        return stream.isCapturing();
    }

    @Override
    public void synchronize() {
        stream.synchronize();
    }

    @Override
    public void close() {
        try {
            releases.synchronize();
        } finally {
            for (CudaEvent e : events) e.close();
            releases.close();
            word.close();
        }
    }
}
