// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Communicator;
import java.util.LinkedHashMap;
import java.util.Map;

/** {@link JarPath} over {@link OmpiRuntime} and {@link OmpiJavaTransport} (mpi.jar + libmpi_java). */
final class MpiJarPath implements JarPath {
    @Override
    public Started start() {
        OmpiRuntime rt = OmpiRuntime.get();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("library", rt.version + " at " + rt.library.map(Object::toString).orElse("?"));
        details.put("threads", rt.threadLevelName());
        if (!rt.workarounds.isEmpty()) {
            details.put("workarounds", String.join("; ", rt.workarounds));
        }
        return new Started(rt.version, rt.cuda, details);
    }

    @Override
    public dev.ferry.spi.Transport openWorld() {
        return OmpiJavaTransport.world(OmpiRuntime.get());
    }
}
