// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.FerryException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The wire protocol of staged point-to-point messages, the same whatever memory the two ends use
 * (MPI lets a send from host memory match a receive into device memory, so the receiver cannot
 * choose a protocol from its own buffer).
 *
 * <ul>
 * <li>A message of at most {@code eager} bytes is one MPI message of exactly its bytes, with the
 *     user's tag, on the user's communicator: nothing added.</li>
 * <li>A longer message starts with a <em>first piece</em> of exactly {@code HEADER + eager}
 *     bytes on the user's communicator with the user's tag: the header (total size, chunk size,
 *     a transfer tag) and the first {@code eager} bytes of data. Being longer than any eager message,
 *     it is recognised by its size alone. The rest follows as chunks on the backend's private
 *     bulk communicator, tagged with the transfer tag, from the sender to the source the receiver
 *     learned from the first piece (so ANY_SOURCE and ANY_TAG receives work, and first pieces keep
 *     MPI's order: a later message cannot overtake an earlier one with the same source and tag).</li>
 * <li>An IPC offer is a first piece that carries, instead of data, a CUDA IPC handle of the
 *     sender's device allocation and the buffer's place in it. The receiver copies straight from
 *     the sender's GPU and answers DONE, or answers SEND (it is not a device buffer, or it cannot
 *     map the handle) and the sender then sends all data as chunks.</li>
 * </ul>
 *
 * Every receive therefore posts a first receive of {@code HEADER + eager} bytes into a small
 * staging slot, and {@code eager} must be equal on every rank (checked when a communicator is made).
 */
final class Wire {
    /** Bytes of the header at the start of a first piece. */
    static final int HEADER = 64;
    /** Bytes of a reply (DONE / SEND), kept in a slot's scratch area. */
    static final int REPLY = 8;
    /** Scratch bytes after the first piece in a slot. */
    static final int SCRATCH = 64;

    static final int MAGIC = 0x46525931; // "FRY1"
    static final int FLAG_IPC_OFFER = 1;

    /** IPC reply: the receiver copied the data; the sender's buffer is free. */
    static final int REPLY_DONE = 0;
    /** IPC reply: send the data as chunks (the receive buffer is not device memory). */
    static final int REPLY_SEND = 1;
    /** IPC reply: send the data as chunks and offer no IPC to this receiver again (mapping failed). */
    static final int REPLY_SEND_NO_IPC = 2;

    private Wire() {
    }

    /** Size of a first piece. */
    static long firstPiece(long eager) {
        return HEADER + eager;
    }

    /** Size of a slot: first piece and scratch. */
    static long slot(long eager) {
        return HEADER + eager + SCRATCH;
    }

    /** Where a slot's scratch area starts. */
    static long scratch(long eager) {
        return HEADER + eager;
    }

    /** Tag of the chunks of transfer {@code t} on the bulk communicator. */
    static int dataTag(int t) {
        return 2 * t;
    }

    /** Tag of the reply to transfer {@code t} on the bulk communicator. */
    static int replyTag(int t) {
        return 2 * t + 1;
    }

    /** Number of chunks after {@code inline} bytes of {@code total}, of {@code chunk} bytes each. */
    static long chunks(long total, long inline, long chunk) {
        long rest = total - inline;
        return rest <= 0 ? 0 : (rest + chunk - 1) / chunk;
    }

    /**
     * The header of a first piece.
     *
     * @param flags       {@link #FLAG_IPC_OFFER} or 0
     * @param total       message bytes
     * @param inline      data bytes in the first piece (eager, or 0 for an IPC offer)
     * @param chunk       bytes per chunk after them (the last may be shorter)
     * @param transferTag the transfer's tag (chunks use {@link #dataTag}, replies {@link #replyTag})
     */
    record Header(int flags, long total, long inline, long chunk, int transferTag) {
        void write(MemorySegment s) {
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, MAGIC);
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 4, flags);
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, total);
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, inline);
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, chunk);
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 32, transferTag);
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 36, 0);
        }

        static Header read(MemorySegment s, int source) {
            int magic = s.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
            if (magic != MAGIC) {
                throw new FerryException("staged: a message from rank " + source + " has the size of a first piece but no staged header (0x"
                        + Integer.toHexString(magic) + "): do all ranks use backend staged with the same ferry.staged.eager?");
            }
            Header h = new Header(s.get(ValueLayout.JAVA_INT_UNALIGNED, 4), s.get(ValueLayout.JAVA_LONG_UNALIGNED, 8),
                    s.get(ValueLayout.JAVA_LONG_UNALIGNED, 16), s.get(ValueLayout.JAVA_LONG_UNALIGNED, 24), s.get(ValueLayout.JAVA_INT_UNALIGNED, 32));
            if (h.total < 0 || h.inline < 0 || h.chunk <= 0 || h.transferTag < 0) {
                throw new FerryException("staged: corrupt header from rank " + source + ": " + h);
            }
            return h;
        }

        boolean ipcOffer() {
            return (flags & FLAG_IPC_OFFER) != 0;
        }
    }

}
