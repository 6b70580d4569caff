// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Ferry's conformance kit: the contracts every backend passes (JUnit 5 and jqwik), run in every
 * rank of an MPI job by {@link dev.ferry.testing.RankRunner}, for Ferry's backends and for users'
 * own.
 */
module dev.ferry.testing {
    requires transitive dev.ferry.api;
    requires dev.ferry.cuda;
    requires dev.ferry.collectives;
    requires transitive org.junit.jupiter.api;
    requires transitive net.jqwik.api;
    requires org.junit.jupiter.params;
    requires org.junit.platform.launcher;
    requires java.management;

    exports dev.ferry.testing;
    // the test engines reach the contracts' test methods by reflection
    opens dev.ferry.testing;
}
