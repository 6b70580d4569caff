// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;
import dev.ferry.DeviceBuffer;

/**
 * The allReduce of {@code ipc-pipelined} on one GPU: this rank's slice of the result, chunk by chunk,
 * in three stages on three streams that overlap. The copy engine pulls chunk k of this rank's slice
 * from every peer's input into a scratch slot; a kernel folds it with this rank's own input into the
 * result; the copy engine pushes that chunk of the result into every peer's result. While chunk k is
 * folded, chunk k + 1 is pulled and chunk k - 1 pushed, so the link carries data both ways at once
 * and no stage waits for a whole slice. Every wait is between this rank's own streams (events): the
 * peers' inputs are ready when the call starts, and the call's closing meeting covers the pushes.
 */
final class SlicePipeline implements AutoCloseable {
    /** Bytes of one chunk: small enough that filling and draining the pipeline costs little, large enough for a copy at full speed. */
    static final long CHUNK_BYTES = 16L << 20;
    /** Bytes of the smallest chunk. */
    private static final long MIN_CHUNK_BYTES = 4L << 10;
    /** Scratch slots per peer: a chunk is pulled into a slot once the fold that read the slot last has ended. */
    private static final int SLOTS = 3;

    private final int device;
    private final CudaStream fold, push;
    private final CudaEvent[] pulled = new CudaEvent[SLOTS], folded = new CudaEvent[SLOTS];
    private final CudaEvent pushed;
    private DeviceBuffer scratch;
    private int scratchPeers;

    SlicePipeline(int device) {
        this.device = device;
        this.fold = Cuda.newStream(device);
        this.push = Cuda.newStream(device);
        for (int i = 0; i < SLOTS; i++) {
            pulled[i] = Cuda.newEvent(device, false);
            folded[i] = Cuda.newEvent(device, false);
        }
        this.pushed = Cuda.newEvent(device, false);
    }

    int device() {
        return device;
    }

    /**
     * Enqueues slice {@code [first, first + length)} (elements) of the allReduce: {@code inputs[r]} is
     * rank r's input as this process addresses it, {@code results[r]} rank r's result, rank
     * {@code me}'s own at {@code me}. The pulls run on {@code stream}, which at return waits for the
     * last push (the call's end synchronizes it).
     */
    void allReduceSlice(long[] inputs, long[] results, int me, long first, long length, DataType type, ReduceOp op, CudaStream stream) {
        int n = inputs.length;
        int size = type.size();
        // about 16 chunks a slice, each of 4 KiB to CHUNK_BYTES: the pipeline fills and drains in a sixteenth
        long chunkBytes = Math.min(CHUNK_BYTES, Math.max(MIN_CHUNK_BYTES, (length * size + 15) / 16));
        long chunk = Math.max(1, chunkBytes / 16 * 16 / size); // elements per chunk, 16-byte aligned where the type allows
        long[] sources = new long[n];
        long k = 0;
        for (long at = first; at < first + length; at += chunk, k++) {
            long count = Math.min(chunk, first + length - at), bytes = count * size, offset = at * size;
            int slot = (int) (k % SLOTS);
            for (int r = 0; r < n; r++) sources[r] = inputs[r] + offset;
            DeviceReduction.reduce(type, op, results[me] + offset, sources, count, stream);
            folded[slot].record(stream);
            push.waitFor(folded[slot]);
            for (int j = 1; j < n; j++) {
                int r = (me + j) % n; // every rank starts with a different peer
                Cuda.copyAsync(results[r] + offset, results[me] + offset, bytes, push);
            }
        }
        pushed.record(push);
        stream.waitFor(pushed);
    }

    private void ensureScratch(int peers) {
        if (scratch != null && scratchPeers >= peers) return;
        if (scratch != null) scratch.close();
        scratch = null;
        scratch = Cuda.allocate(device, SLOTS * (long) peers * CHUNK_BYTES);
        scratchPeers = peers;
    }

    @Override
    public void close() {
        if (scratch != null) scratch.close();
        scratch = null;
        for (int i = 0; i < SLOTS; i++) {
            pulled[i].close();
            folded[i].close();
        }
        pushed.close();
        fold.close();
        push.close();
    }
}
