package dev.ferry.staged;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.spi.DeviceCollectivesDecorator;
import dev.ferry.spi.Transport;

/**
 * Offers the staged backend's node-local CUDA IPC collectives to {@code ompi} and {@code mvapich}
 * over a CUDA-aware MPI ({@link MpiWithIpcCollectives}), as {@code ferry.deviceCollectives} asks:
 * {@code auto} takes the IPC path where a call can, {@code ipc} fails a device-buffer collective
 * among one node's ranks that cannot take it. The choice of {@code auto} comes from measurement:
 * on one H100 and on two H200s the IPC path was faster than CUDA-aware Open MPI 5.0.7's device
 * collectives at every measured size (bench/results/, README "Benchmarks").
 */
public final class StagedDeviceCollectives implements DeviceCollectivesDecorator {
    /** For {@link java.util.ServiceLoader}. */
    public StagedDeviceCollectives() {
    }

    @Override
    public Transport decorate(Transport world, Settings settings) {
        StagedSettings s;
        try {
            s = StagedSettings.read(settings);
        } catch (RuntimeException e) {
            world.close();
            throw e;
        }
        StagedSettings.DeviceCollectives mode = "ipc".equals(settings.get(FerrySettings.DEVICE_COLLECTIVES))
                ? StagedSettings.DeviceCollectives.IPC : StagedSettings.DeviceCollectives.AUTO;
        // every rank wraps (the peer exchange is collective); where CUDA IPC is off on some rank
        // (ferry.staged.ipc=false, no CUDA), or the ranks span nodes, every collective goes to the MPI
        StagedRuntime rt;
        try {
            rt = StagedRuntime.acquire(s, world.backend());
        } catch (RuntimeException e) {
            world.close();
            throw e;
        }
        return new MpiWithIpcCollectives(world, rt, mode); // closes world and releases rt when it fails
    }
}
