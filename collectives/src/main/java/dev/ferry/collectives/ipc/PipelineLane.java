// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;

/**
 * A second stream of the node's collectives on one device, with the two events that chain it to the
 * first: a collective that folds piece by piece on its stream hands each folded piece to this lane
 * ({@link #after}), whose copies run while the next piece folds, and waits for the lane's last copy
 * before it ends ({@link #joinInto}). An event may be recorded again once a wait on it is enqueued
 * (the wait keeps the point recorded before it), so two events serve any number of pieces.
 */
public final class PipelineLane implements AutoCloseable {
    private final CudaStream copies;
    private final CudaEvent handed;
    private final CudaEvent joined;

    PipelineLane(int device) {
        this.copies = Cuda.newStream(device);
        this.handed = Cuda.newEvent(device, false);
        this.joined = Cuda.newEvent(device, false);
    }

    /** This lane's stream, its work ordered after the point of {@code stream} at the call. */
    public CudaStream after(CudaStream stream) {
        handed.record(stream);
        copies.waitFor(handed);
        return copies;
    }

    /** Orders {@code stream}'s later work after everything enqueued on this lane so far. */
    public void joinInto(CudaStream stream) {
        joined.record(copies);
        stream.waitFor(joined);
    }

    @Override
    public void close() {
        copies.synchronize();
        handed.close();
        joined.close();
        copies.close();
    }
}
