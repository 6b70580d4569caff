// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaEvent;
import dev.ferry.cuda.CudaStream;
import dev.ferry.cuda.DeviceReduction;

/**
 * The second step of {@code ipc-push} on one GPU: a rank folds its half of the result in its own
 * memory, chunk by chunk on the call's stream, while a second stream's copy engine pushes each folded
 * chunk to the peer. The fold reads and writes this GPU's memory only, and the pushes are the only
 * traffic on the link, so the link carries the half at the copy engine's speed and the fold hides
 * behind it but for the first chunk.
 */
final class FoldAndPush implements AutoCloseable {
    /** Chunks per half: the pipeline waits for one chunk's fold before its first push. */
    private static final int CHUNKS = 8;
    /** Bytes of the smallest chunk: below it, a chunk's launch and copy would cost more than they hide. */
    private static final long MIN_CHUNK_BYTES = 64L << 10;

    private final int device;
    private final CudaStream push;
    private final CudaEvent[] folded = new CudaEvent[CHUNKS + 1];
    private final CudaEvent pushed;

    FoldAndPush(int device) {
        this.device = device;
        this.push = Cuda.newStream(device);
        for (int i = 0; i < folded.length; i++) folded[i] = Cuda.newEvent(device, false);
        this.pushed = Cuda.newEvent(device, false);
    }

    int device() {
        return device;
    }

    /**
     * Enqueues {@code out[i] = first[i] op second[i]} for {@code count} elements on {@code stream}, in
     * chunks, each pushed to {@code peerOut} once folded; at return {@code stream} waits for the last push
     * (the call's end synchronizes it). {@code first} and {@code second} in rank order, so that every
     * rank's half is folded alike; {@code out} may be either of them.
     */
    void run(long out, long first, long second, long peerOut, long count, DataType type, ReduceOp op, CudaStream stream) {
        int size = type.size();
        long chunk = Math.max((count + CHUNKS - 1) / CHUNKS, Math.max(1, MIN_CHUNK_BYTES / size));
        chunk = Math.max(1, (chunk * size + 15) / 16 * 16 / size); // 16-byte chunks where the type allows: every chunk on the kernel's vector path
        int k = 0;
        for (long at = 0; at < count; at += chunk, k++) {
            long n = Math.min(chunk, count - at), offset = at * size;
            DeviceReduction.reduce(type, op, out + offset, new long[] {first + offset, second + offset}, n, stream);
            folded[k].record(stream);
            push.waitFor(folded[k]);
            Cuda.copyAsync(peerOut + offset, out + offset, n * size, push);
        }
        pushed.record(push);
        stream.waitFor(pushed);
    }

    @Override
    public void close() {
        for (CudaEvent e : folded) e.close();
        pushed.close();
        push.close();
    }
}
