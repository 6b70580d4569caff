// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.spi.MpiLifecycle;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

/**
 * The JFR recordings of this JVM, written beside a flight-recorder dump: a recording started
 * with {@code -XX:StartFlightRecording} (or by the program) would otherwise reach its file only
 * at a clean exit, which a hung job that is aborted never has.
 */
final class JfrRecordings {
    private JfrRecordings() {
    }

    /** Writes every running recording so far to {@code dir/PREFIX.jfr} ({@code PREFIX-ID.jfr} when there are several); none when JFR never started. */
    static void dump(Path dir, String prefix) {
        if (!FlightRecorder.isInitialized()) {
            return; // asking for the recorder would start JFR
        }
        List<Recording> running = FlightRecorder.getFlightRecorder().getRecordings().stream()
                .filter(r -> r.getState() == RecordingState.RUNNING).toList();
        for (Recording r : running) {
            Path file = dir.resolve(running.size() == 1 ? prefix + ".jfr" : prefix + "-" + r.getId() + ".jfr");
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            try {
                r.dump(tmp); // then renamed: a dump cut short by the job's abort leaves the previous one whole
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | RuntimeException e) {
                MpiLifecycle.reportFault("ferry: cannot write JFR recording " + r.getName() + " to " + file + ": " + e);
            }
        }
    }
}
