package dev.ferry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * A non-blocking operation in flight. Its buffers must not be written (a send's) or read (a
 * receive's) until it completes; closing them meanwhile is safe (the memory is freed when the
 * request completes, see {@link Communicator}). Every request must be completed
 * ({@link #waitFor()} or a successful {@link #test()}).
 */
public interface Request {
    /** Blocks until the operation completes; its status (for sends: destination, tag, bytes). */
    Status waitFor();

    /** Completes the operation if it can without blocking: its status, or empty while in flight. */
    Optional<Status> test();

    /**
     * Waits at most {@code timeout} for the operation, polling {@link #test()} (first spinning,
     * then sleeping up to a millisecond between polls). When it has not completed in time, throws
     * {@link OperationTimeoutException} and the request stays in flight, unchanged: its buffers
     * must stay alive, and it must still be completed later (by another wait or a successful test).
     */
    default Status waitFor(Duration timeout) {
        long start = System.nanoTime();
        long limit = timeout.toNanos();
        long pause = 0;
        while (true) {
            Optional<Status> s = test();
            if (s.isPresent()) {
                return s.get();
            }
            long waited = System.nanoTime() - start;
            if (waited >= limit) {
                throw new OperationTimeoutException(this + " did not complete within " + timeout.toMillis()
                        + " ms; it is still in flight: keep its buffers alive and complete it later");
            }
            if (pause == 0) {
                pause = 1_000;
                Thread.onSpinWait();
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(Math.min(pause, limit - waited));
                pause = Math.min(pause * 2, 1_000_000);
            }
        }
    }

    /** Waits for every request, in order; the statuses in the same order. */
    static List<Status> waitAll(Collection<? extends Request> requests) {
        List<Status> out = new ArrayList<>(requests.size());
        RuntimeException failure = null;
        for (Request r : requests) {
            try {
                out.add(r.waitFor());
            } catch (RuntimeException e) {
                // keep completing the rest, so that no request is left dangling over freed memory
                if (failure == null) failure = e; else failure.addSuppressed(e);
                out.add(null);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return out;
    }

    /** Waits for every request, in order. */
    static List<Status> waitAll(Request... requests) {
        return waitAll(Arrays.asList(requests));
    }
}
