// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Backend {@code ompi}: Open MPI through {@code java.lang.foreign} ({@code dev.ferry.mpi}) or
 * through Open MPI's own Java bindings, and {@link dev.ferry.ompi.Ompi}, interop with those
 * bindings.
 *
 * <p>Open MPI's {@code mpi.jar} (automatic module {@code mpi}) is optional: without it the backend
 * runs on the foreign-function binding. For {@code ferry.ompi.binding=java} or
 * {@link dev.ferry.ompi.Ompi}, put the launched Open MPI's {@code mpi.jar} on the module path and
 * resolve it ({@code --add-modules mpi} or {@code ALL-MODULE-PATH}).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // Open MPI's mpi.jar has no module descriptor
module dev.ferry.ompi {
    requires transitive dev.ferry.api;
    requires dev.ferry.cuda;
    requires dev.ferry.mpi;
    // optional at run time; transitive: Ompi.wrap and unwrap take and give its communicators
    requires static transitive mpi;

    exports dev.ferry.ompi;

    provides dev.ferry.spi.TransportProvider with dev.ferry.ompi.OmpiProvider;
    provides dev.ferry.spi.SettingsCatalog with dev.ferry.ompi.OmpiSettings;
}
