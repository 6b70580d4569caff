// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.testing;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * What every rank-side contract of the kit starts from: each test gets its own duplicate of the
 * world communicator ({@link #comm}, {@link #rank}, {@link #size}; see {@link #newCommunicator()}), and the buffers it allocates
 * with {@link #alloc} (or hands to {@link #closeAfter}) are closed after it, once every rank has
 * reached the end of the test (a barrier), so that no rank frees memory a peer still sends from.
 * A test that fails on one rank prints its failure at once ({@link FailureNow}): its peers may then
 * wait for it in a collective until the runner's time limit, and the failure would otherwise be lost.
 */
@ExtendWith(RankContract.FailureNow.class)
public abstract class RankContract {
    protected Communicator comm;
    protected int rank;
    protected int size;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void openCommunicator() {
        comm = newCommunicator();
        rank = comm.rank();
        size = comm.size();
    }

    /**
     * The communicator of one test, which the test closes: a duplicate of the world. A backend's
     * suite may put its own transport over one instead (backend nccl's suites on machines without
     * a GPU, whose world is its inner backend's).
     */
    protected Communicator newCommunicator() {
        return TestWorld.world().duplicate();
    }

    @AfterEach
    void closeCommunicator() throws Exception {
        try {
            comm.barrier();
        } finally {
            comm.close();
            for (AutoCloseable c : toClose) c.close();
            toClose.clear();
        }
    }

    /** A buffer of kind {@code m} of exactly {@code bytes}, closed after the test. */
    protected Buffer alloc(Mem m, long bytes) {
        Buffer b = m.allocate(bytes);
        toClose.add((AutoCloseable) b);
        return b;
    }

    /** Closes {@code c} after the test; returns it. */
    protected <T extends AutoCloseable> T closeAfter(T c) {
        toClose.add(c);
        return c;
    }

    /** Prints a test's failure on this rank before the closing barrier, where a peer still in the test would hold it. */
    static final class FailureNow implements TestExecutionExceptionHandler {
        @Override
        public void handleTestExecutionException(ExtensionContext context, Throwable t) throws Throwable {
            if (!(t instanceof org.opentest4j.TestAbortedException)) { // a skip is not a failure
                System.err.println("rank " + TestWorld.world().rank() + ": " + context.getDisplayName() + " failed here: " + t);
                t.printStackTrace();
                System.err.flush();
            }
            throw t;
        }
    }
}
