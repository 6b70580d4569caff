// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.testing.LoadedMpiCheck;
import dev.ferry.testing.MpiJob;
import dev.ferry.testing.Mvapich2;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The MVAPICH2 rows: backend mvapich under MVAPICH2's own Hydra {@code mpiexec}
 * ({@code -Dferry.test.mvapich2.home}, see {@link Mvapich2}), loading MVAPICH2's
 * {@code libmpi.so.12} ({@link LoadedMpiCheck} runs first and fails on any other library): the
 * conformance suite and the bad-input matrix with 2 and 4 ranks ({@code ferry.test.np}).
 */
class Mvapich2IT {

    @TestFactory
    List<DynamicNode> conformance() {
        return List.of(Mvapich2.rows("mvapich/mvapich2 conformance", () -> {
            List<DynamicNode> out = new ArrayList<>();
            for (int np : MpiJob.rankCounts()) {
                out.add(Mvapich2.job("mvapich2", np).classes(LoadedMpiCheck.class, MvapichContract.class)
                        .property("ferry.backend", "mvapich").asTests());
            }
            return DynamicContainer.dynamicContainer("mvapich/mvapich2 conformance", out);
        }));
    }

    /** The bad-input matrix, as under MPICH (same seed and number of cases). */
    @TestFactory
    List<DynamicNode> badInputMatrix() {
        return List.of(Mvapich2.rows("mvapich/mvapich2 bad-input matrix", () -> {
            List<DynamicNode> out = new ArrayList<>();
            for (int np : MpiJob.rankCounts()) {
                out.add(Mvapich2.job("mvapich2-matrix", np).classes(LoadedMpiCheck.class, MvapichBadInputMatrix.class)
                        .property("ferry.backend", "mvapich").property("ferry.timeout", "60").property("ferry.test.perTestTimeout", "600")
                        .asTests());
            }
            return DynamicContainer.dynamicContainer("mvapich/mvapich2 bad-input matrix", out);
        }));
    }
}
