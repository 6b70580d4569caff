// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry;

/**
 * A stream-ordered call on a stream that is being captured into a CUDA graph, on a path that a
 * graph cannot hold: one that Ferry's own thread must run when the stream reaches it (MPI, the
 * staged pipeline, the node's IPC collectives). Only collectives that run on the GPU alone (NCCL's,
 * where the planner picks NCCL) can be captured; the message names the path.
 */
public class CaptureUnsupportedException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public CaptureUnsupportedException(String message) {
        super(message);
    }
}
