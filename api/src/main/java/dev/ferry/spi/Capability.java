package dev.ferry.spi;

/** Things a backend can do, each a separate yes/no question answered by its {@link Probe}. */
public enum Capability {
    /** Host memory (pageable and pinned) in every operation. */
    HOST_BUFFERS,
    /** CUDA device memory in every operation, handed to MPI or staged by Ferry. */
    CUDA_DEVICE_BUFFERS,
    /** Device memory handed straight to a CUDA-aware MPI (no staging by Ferry). */
    CUDA_AWARE_MPI,
    /** Device-to-device copies between ranks of one node through CUDA IPC handles. */
    CUDA_IPC
}
