// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Ferry's API: {@link dev.ferry.Ferry}, {@link dev.ferry.Communicator}, buffers and their
 * exceptions ({@code dev.ferry}), and the service interfaces a backend implements
 * ({@code dev.ferry.spi}: {@link dev.ferry.spi.TransportProvider} and what it builds on).
 *
 * <p>Backends, the GPU runtime, the collectives planner and every module's settings are found
 * with {@link java.util.ServiceLoader}; on the module path they must be launched with native
 * access: {@code --enable-native-access=dev.ferry.api,dev.ferry.cuda,dev.ferry.mpi,dev.ferry.ompi,dev.ferry.mvapich,dev.ferry.nccl,jcuda}.
 * The flight recorder ({@code dev.ferry.flight}) is exported to the planner only; its programs
 * ({@code dev.ferry.flight.HangReport}) and {@code dev.ferry.tools.Doctor} run with
 * {@code -m dev.ferry.api/CLASS}.
 */
@SuppressWarnings("module") // the qualified export names a module built after this one
module dev.ferry.api {
    requires java.management; // thread dumps of the call tracker
    // System.Logger's default backend: without it a launch with -m would log through the JDK's
    // fallback console logger instead of java.util.logging, unlike a launch on the class path
    requires java.logging;
    requires jdk.jfr; // the flight recorder's events
    requires jdk.unsupported; // sun.misc.Signal (SIGUSR1 asks for a flight-recorder dump)

    exports dev.ferry;
    // public: users write backends rarely, but TransportProvider is the documented way to add
    // one, and ferry-testkit's published contracts test such backends
    exports dev.ferry.spi;
    exports dev.ferry.flight to dev.ferry.collectives;

    uses dev.ferry.spi.TransportProvider;
    uses dev.ferry.spi.DeviceSupport;
    uses dev.ferry.spi.CollectivePlanning;
    uses dev.ferry.spi.SettingsCatalog;

    provides dev.ferry.spi.SettingsCatalog with dev.ferry.FerrySettings;
}
