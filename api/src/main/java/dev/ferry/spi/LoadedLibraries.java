// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Which shared libraries this process has mapped (Linux /proc/self/maps): the MPI actually loaded. */
public final class LoadedLibraries {
    private LoadedLibraries() {
    }

    /** The first mapped file whose name starts with {@code prefix} (e.g. "libmpi.so"), if any. */
    public static Optional<Path> find(String prefix) {
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(l -> {
                        int slash = l.indexOf('/');
                        return slash < 0 ? null : l.substring(slash);
                    })
                    .filter(p -> p != null && Path.of(p).getFileName().toString().startsWith(prefix))
                    .map(Path::of)
                    .findFirst();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
