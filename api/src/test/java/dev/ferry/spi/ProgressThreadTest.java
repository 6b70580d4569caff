package dev.ferry.spi;

import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The progress thread without MPI: attempts that a counter completes. */
class ProgressThreadTest {

    /** A future for the program is completed off the progress thread: its stages never run there. */
    @Test
    void aProgramsFutureIsCompletedOffTheProgressThread() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        CompletableFuture<String> stage = ProgressThread.pollForProgram(() -> attempts.incrementAndGet() < 50 ? Optional.empty() : Optional.of(7))
                .thenApply(v -> Thread.currentThread().getName());
        String ranOn = stage.get(30, TimeUnit.SECONDS);
        assertFalse(ranOn.equals("ferry-progress"), "a stage ran on the progress thread");
    }
}
