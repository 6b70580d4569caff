// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;

/** The settings of backend ompi. */
public final class OmpiSettings implements SettingsCatalog {
    private static final String MODULE = "backend-ompi";

    /** {@code ferry.ompi.binding}: which of backend ompi's two paths it takes. */
    public static final Setting<String> BINDING = Setting.of(MODULE, "ferry.ompi.binding", Setting.choice("auto", "ffm", "java"), "auto",
            "backend ompi's path: `ffm` (Open MPI's C API through java.lang.foreign), `java` (mpi.jar) or `auto` (see backend-ompi/README.md)");
    /** {@code ferry.ompi.libdir}: where mpi.jar's {@code libmpi_java.so} is looked for first. */
    public static final Setting<String> LIBDIR = Setting.of(MODULE, "ferry.ompi.libdir", Setting.STRING, null,
            "the folder where the `java` path looks first for Open MPI's `libmpi_java.so`; unset: searched");

    /** {@code ferry.ompi.javaLibrary}: the file of mpi.jar's {@code libmpi_java.so}, where the user names it. */
    public static final Setting<String> JAVA_LIBRARY = Setting.of(MODULE, "ferry.ompi.javaLibrary", Setting.STRING, null,
            "the `java` path's `libmpi_java.so` file itself (unset: on `java.library.path`, else searched as `ferry.ompi.libdir` says); "
                    + "Ferry hands the file it found to the mpi.jar that `scripts/setup` builds through this system property");

    @Override
    public List<Setting<?>> settings() {
        return List.of(BINDING, LIBDIR, JAVA_LIBRARY);
    }
}
