// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link StagedContract} through the whole staging pipeline (host buffers staged, small chunks)
 * over each path of the inner backend ompi: java.lang.foreign ({@code ferry.ompi.binding=ffm}) and
 * mpi.jar ({@code java}); {@code -Dferry.ompi.binding=ffm|java} runs one path only.
 */
class StagedOverBothOmpiPathsIT {

    @TestFactory
    List<DynamicNode> stagedOverEachOmpiPath() {
        String only = System.getProperty("ferry.ompi.binding");
        List<String> bindings = only == null || only.isBlank() || only.equals("auto") ? List.of("ffm", "java") : List.of(only.trim());
        List<DynamicNode> out = new ArrayList<>();
        for (String binding : bindings) {
            out.add(StagedConformanceIT.stagedHost("staged-over-ompi-" + binding, 2).property("ferry.ompi.binding", binding).asTests());
        }
        return out;
    }
}
