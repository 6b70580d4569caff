// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.InvalidArgumentException;

/**
 * How a sender cuts a message: at most {@code threshold} bytes in one piece through one staging
 * buffer, above that chunks of {@link #chunkFor} bytes with {@code depth} in flight. Only the
 * sender decides (the header tells the receiver the chunk size), so a communicator may be tuned
 * alone; collectives use the process settings, which every rank shares.
 *
 * @param chunk     largest chunk (and staging buffer)
 * @param minChunk  smallest chunk of a pipelined message; equal to {@code chunk} for fixed chunks
 * @param threshold largest message sent unpipelined
 * @param depth     chunks in flight per transfer
 */
record Tuning(long chunk, long minChunk, long threshold, int depth) {
    /** Granularity of adaptive chunks. */
    static final long ALIGN = 64 * 1024;

    static Tuning of(StagedSettings s) {
        return new Tuning(s.chunk(), s.minChunk(), s.threshold(), s.depth());
    }

    /** Checks against the staging buffers the pool has ({@code maxBuffer} bytes). */
    Tuning checked(long maxBuffer) {
        if (chunk > maxBuffer || minChunk < 4096 || minChunk > chunk || threshold > chunk || depth < 1) {
            throw new InvalidArgumentException("tuning " + this + " does not fit staging buffers of " + maxBuffer + " bytes");
        }
        return this;
    }

    /**
     * The chunk size for {@code rest} bytes after the first piece: about {@code 2 x depth} chunks,
     * so that filling and draining the pipeline (the first device-to-host and the last host-to-device
     * copy, which nothing overlaps) stays a small part of the transfer, but never below
     * {@code minChunk} (MPI messages that small lose bandwidth) nor above {@code chunk}.
     */
    long chunkFor(long rest) {
        long want = (rest + 2L * depth - 1) / (2L * depth);
        want = (want + ALIGN - 1) / ALIGN * ALIGN;
        return Math.max(minChunk, Math.min(chunk, want));
    }

    @Override
    public String toString() {
        return "chunk " + StagedSettings.bytes(chunk) + (minChunk < chunk ? " (adaptive from " + StagedSettings.bytes(minChunk) + ")" : " (fixed)")
                + ", threshold " + StagedSettings.bytes(threshold) + ", depth " + depth;
    }
}
