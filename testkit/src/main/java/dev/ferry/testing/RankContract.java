package dev.ferry.testing;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What every rank-side contract of the kit starts from: each test gets its own duplicate of the
 * world communicator ({@link #comm}, {@link #rank}, {@link #size}), and the buffers it allocates
 * with {@link #alloc} (or hands to {@link #closeAfter}) are closed after it, once every rank has
 * reached the end of the test (a barrier), so that no rank frees memory a peer still sends from.
 */
public abstract class RankContract {
    protected Communicator comm;
    protected int rank;
    protected int size;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void openCommunicator() {
        comm = TestWorld.world().duplicate();
        rank = comm.rank();
        size = comm.size();
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
}
