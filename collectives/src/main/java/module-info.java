// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * The collectives planner and every collective algorithm: one planner per communicator, installed
 * on every backend's world ({@link dev.ferry.spi.CollectivePlanning}), choosing among the
 * algorithms of every {@link dev.ferry.collectives.AlgorithmProvider} by the measured cost tables.
 */
@SuppressWarnings({"module", "opens"}) // a module built after this one; a package of resources only
module dev.ferry.collectives {
    requires transitive dev.ferry.api;
    requires dev.ferry.cuda;

    exports dev.ferry.collectives;
    exports dev.ferry.collectives.ipc to dev.ferry.staged;
    // the measured cost tables, read through the class loader (CostTable.builtIn)
    opens dev.ferry.collectives.costs;

    uses dev.ferry.collectives.AlgorithmProvider;

    provides dev.ferry.collectives.AlgorithmProvider with dev.ferry.collectives.CoreAlgorithms;
    provides dev.ferry.spi.CollectivePlanning with dev.ferry.collectives.Planning;
    provides dev.ferry.spi.SettingsCatalog with
            dev.ferry.collectives.CollectivesSettings,
            dev.ferry.collectives.ipc.IpcSettings;
}
