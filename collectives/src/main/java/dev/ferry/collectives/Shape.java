// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.DataType;
import dev.ferry.ReduceOp;

/**
 * What every rank passes alike to one collective (MPI's rule: the same operation, type, operator,
 * count and root everywhere), and so what the planner may decide from without a message between
 * ranks. {@code bytes}: the size the call's count gives, {@code type.bytes(count)} (for a
 * reduce-scatter, the whole send buffer; for the vector collectives, which only their own rank
 * knows, 0).
 */
public record Shape(Collective collective, DataType type, ReduceOp op, long bytes, int root) {
    @Override
    public String toString() {
        return collective.label() + " " + bytes + " B " + type + (op == null ? "" : " " + op) + (collective.rooted() ? " root " + root : "");
    }
}
