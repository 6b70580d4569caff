package dev.ferry.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ferry.CudaException;
import dev.ferry.HostBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Waiting for a stream by a word in pinned host memory instead of {@code cuStreamSynchronize}: the
 * stream writes the next sequence number into the word once everything before it on the stream is
 * done ({@code cuStreamWriteValue32}, with its memory fence), and the host spins on the word. Under
 * CUDA MPS the word arrives several microseconds before a stream synchronize returns (the short
 * allReduce's status word showed it first). The stream is queried now and then while waiting, so
 * that a stream whose work failed is an exception, not a hang. Where the driver refuses stream
 * memory operations, {@link #await} falls back to a stream synchronize for good.
 *
 * <p>One flag serves one thread at a time (a collective's stream and its caller).
 */
public final class CompletionFlag implements AutoCloseable {
    private static final VarHandle INT = JAVA_INT.varHandle();

    private final HostBuffer word = Cuda.allocatePinned(64);
    private int seq;
    /** False once the driver refused a stream write: every wait is then a stream synchronize. */
    private boolean usable = Native.WRITE != null;
    private boolean recorded;

    /**
     * Enqueues on {@code stream} the write of the next sequence number into the word, behind all
     * earlier work on the stream.
     */
    public void record(CudaStream stream) {
        recorded = false;
        if (!usable) {
            return;
        }
        int next = seq + 1;
        stream.device().makeCurrent();
        int r;
        try {
            r = (int) Native.WRITE.invokeExact(JCudaPointers.handle(stream.handle()), word.address(), next, 0);
        } catch (Throwable t) {
            throw new CudaException("cuStreamWriteValue32 failed: " + t, t);
        }
        if (r != 0) {
            usable = false; // e.g. CUDA_ERROR_NOT_SUPPORTED: wait by synchronizing from now on
            return;
        }
        seq = next;
        recorded = true;
    }

    /** Waits until everything before the last {@link #record} on {@code stream} is done. */
    public void await(CudaStream stream) {
        if (!recorded) {
            stream.synchronize();
            return;
        }
        MemorySegment w = word.segment();
        for (int spins = 1; ; spins++) {
            if ((int) INT.getAcquire(w, 0L) == seq) {
                return;
            }
            if ((spins & 1023) == 0 && stream.isIdle()) { // isIdle throws for work that failed
                if ((int) INT.getAcquire(w, 0L) == seq) return;
                stream.synchronize();
                return;
            }
            Thread.onSpinWait();
        }
    }

    /** {@link #record} then {@link #await}. */
    public void recordAndAwait(CudaStream stream) {
        record(stream);
        await(stream);
    }

    @Override
    public void close() {
        word.close();
    }

    /** The driver entry point, bound once; null where libcuda has no {@code cuStreamWriteValue32_v2}. */
    @SuppressWarnings("restricted")
    private static final class Native {
        static final MethodHandle WRITE;

        static {
            MethodHandle h = null;
            try {
                SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
                h = cuda.find("cuStreamWriteValue32_v2").map(a -> Linker.nativeLinker().downcallHandle(a,
                        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT))).orElse(null);
            } catch (IllegalArgumentException | IllegalCallerException e) {
                h = null;
            }
            WRITE = h;
        }
    }
}
