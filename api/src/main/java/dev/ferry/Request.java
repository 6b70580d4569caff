package dev.ferry;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * A non-blocking operation in flight. The buffers it uses must stay alive and untouched until it
 * completes. Every request must be completed ({@link #waitFor()} or a successful {@link #test()}).
 */
public interface Request {
    /** Blocks until the operation completes; its status (for sends: destination, tag, bytes). */
    Status waitFor();

    /** Completes the operation if it can without blocking: its status, or empty while in flight. */
    Optional<Status> test();

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
