package dev.ferry.spi;

import dev.ferry.Settings;

/**
 * Collectives on device buffers that Ferry runs itself, offered to the backends that hand device
 * buffers straight to a CUDA-aware MPI ({@code ompi}, {@code mvapich}); found with
 * {@link java.util.ServiceLoader} ({@code ferry-backend-staged} provides the node-local CUDA IPC
 * collectives). The selection applies it to the world transport it opens for the user when
 * {@code ferry.deviceCollectives} is not {@code mpi}; never to the inner transport of a decorator.
 */
public interface DeviceCollectivesDecorator {
    /**
     * Wraps {@code world}, taking ownership (closing it when the wrapping fails). Collective over
     * {@code world}: every rank wraps, and each call decides on every rank alike whether it takes
     * the decorator's path or goes to {@code world}.
     */
    Transport decorate(Transport world, Settings settings);
}
