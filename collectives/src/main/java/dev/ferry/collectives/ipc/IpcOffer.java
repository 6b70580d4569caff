// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What a rank tells a peer of one of its device buffers so that the peer can map it by CUDA IPC:
 * the allocation's IPC handle, base and size, the buffer's offset in it, the allocation's generation
 * (a new one for memory allocated again at the same address) and the device.
 */
public record IpcOffer(byte[] handle, long base, long size, long offset, long generation, int device) {
    /** Bytes of {@link #write}. */
    public static final int BYTES = 64 + 8 * 4 + 4;

    /** Writes the offer at {@code at} of {@code s}. */
    public void write(MemorySegment s, long at) {
        MemorySegment.copy(MemorySegment.ofArray(handle), 0, s, at, 64);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 64, base);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 72, size);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 80, offset);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 88, generation);
        s.set(ValueLayout.JAVA_INT_UNALIGNED, at + 96, device);
    }

    /** The offer at {@code at} of {@code s}. */
    public static IpcOffer read(MemorySegment s, long at) {
        byte[] h = new byte[64];
        MemorySegment.copy(s, at, MemorySegment.ofArray(h), 0, 64);
        return new IpcOffer(h, s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 64), s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 72),
                s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 80), s.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 88),
                s.get(ValueLayout.JAVA_INT_UNALIGNED, at + 96));
    }
}
