package dev.ferry.staged;

import dev.ferry.Buffer;
import dev.ferry.spi.Transport;

/**
 * The ranks that {@link IpcCollectives} run among, as a communicator gives them: a staged one
 * ({@link StagedTransport}), or a CUDA-aware MPI backend's ({@link MpiWithIpcCollectives}).
 */
interface IpcMembers {
    int rank();

    int size();

    /** The transport for the records' fallback allGather, agreements and barriers (its collectives on host memory). */
    Transport user();

    /** Where every rank runs and whether it maps CUDA IPC memory (exchanged when the communicator was made). */
    Peers peers();

    StagedRuntime runtime();

    /** The IPC offer for a device buffer of this rank, or null when CUDA cannot export its memory. */
    Wire.IpcOffer ipcOffer(Buffer buffer);

    /** How collectives on device buffers choose the IPC path, and the setting that says so (for messages). */
    StagedSettings.DeviceCollectives deviceCollectives();

    String deviceCollectivesSetting();

    /**
     * What a rank does now and then while it waits for its peers inside an IPC collective: advances
     * the transfers that the program left pending (MPI's progress rule), so that a peer waiting for
     * one of them can reach the collective.
     */
    void progressWhileWaiting();

    /** The IPC collectives of this communicator. */
    IpcCollectives ipcCollectives();
}
