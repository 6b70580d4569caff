// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
package dev.ferry.mpi;

import dev.ferry.HostBuffer;
import dev.ferry.Request;
import dev.ferry.Status;
import dev.ferry.mpi.BindingTransport.Probed;
import dev.ferry.mpi.BindingTransport.Region;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import dev.ferry.spi.DeviceSupport;

/**
 * The library's receive of a message that Ferry matched (by MPI_Improbe or MPI_Mprobe): MPI_Imrecv
 * of exactly the message's bytes, so that the library never gets a receive shorter than its
 * message and the sender always completes. A message that fits goes straight into the receive's
 * memory; a longer one lands in host memory of its own first, the receive's memory then gets its
 * first bytes, and the receive fails with the binding's truncation exception. Used by the
 * receives that Ferry matches: {@link MatchedReceives} and {@link ProbedReceive}.
 */
final class MatchedMessageReceive implements Request {
    private final BindingTransport binding;
    private final Region into;
    private final long messageBytes;
    private final Request inner;
    private HostBuffer whole; // a message longer than the receive's memory, until it is copied
    private Status result;
    private RuntimeException failure;

    /** Starts the library's receive of {@code message} into {@code into}. */
    MatchedMessageReceive(BindingTransport binding, Probed message, Region into) {
        this.binding = binding;
        this.into = into;
        this.messageBytes = message.status().byteCount();
        if (messageBytes <= into.bytes()) {
            this.inner = binding.mpiImrecv(message, new Region(into.address(), messageBytes, into.kind()));
        } else {
            HostBuffer w = HostBuffer.allocate(messageBytes);
            try {
                this.inner = binding.mpiImrecv(message, new Region(w.address(), messageBytes, w.kind()));
            } catch (RuntimeException e) {
                w.close();
                throw e;
            }
            this.whole = w;
        }
    }

    @Override
    public synchronized Status waitFor() {
        if (!done()) {
            try {
                finish(inner.waitFor());
            } catch (RuntimeException e) {
                fail(e);
            }
        }
        return outcome();
    }

    @Override
    public synchronized Optional<Status> test() {
        if (!done()) {
            try {
                Optional<Status> st = inner.test();
                if (st.isEmpty()) {
                    return st;
                }
                finish(st.get());
            } catch (RuntimeException e) {
                fail(e);
            }
        }
        return Optional.of(outcome());
    }

    private boolean done() {
        return result != null || failure != null;
    }

    private Status outcome() {
        if (failure != null) {
            throw failure;
        }
        return result;
    }

    private void fail(RuntimeException e) {
        failure = e;
        if (whole != null) {
            whole.close();
            whole = null;
        }
    }

    /** The library's receive completed with {@code st}: a message longer than the memory leaves its first bytes there and a truncation failure. */
    private void finish(Status st) {
        if (whole == null) {
            result = st;
            return;
        }
        try {
            if (into.kind().isHostAccessible()) {
                MemorySegment.copy(whole.segment(), 0, MemorySegment.ofAddress(into.address()).reinterpret(into.bytes()), 0, into.bytes());
            } else {
                DeviceSupport.get().copyToDevice(into.address(), whole, into.bytes());
            }
            failure = binding.mpiTruncation("MPI_Imrecv of the message matched from rank " + st.source() + " tag " + st.tag() + " (message of "
                    + messageBytes + " bytes is longer than the receive count of " + into.bytes() + " bytes)");
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            whole.close();
            whole = null;
        }
    }
}
