// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.ompi;

import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.cuda.Cuda;
import dev.ferry.mpi.LargeMessages;
import dev.ferry.mpi.Mpi;
import dev.ferry.mpi.MpiFamily;
import dev.ferry.mpi.MpiLibrary;
import dev.ferry.mpi.NativeEnvironment;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.MpiFamilyChoice;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Open MPI, on one of two paths ({@link OmpiBinding}, {@code ferry.ompi.binding}): its C API
 * through java.lang.foreign (the shared binding {@link Mpi} on {@code libmpi.so.40}; no mpi.jar
 * needed) or its own Java bindings (mpi.jar + libmpi_java.so). Available when the process was
 * launched by Open MPI (or is a singleton that chose it) and MPI initializes on the chosen path.
 * Device buffers go straight to MPI only when {@code MPIX_Query_cuda_support()} says yes.
 */
public final class OmpiProvider implements TransportProvider {
    /** Priority when device buffers go straight to a CUDA-aware Open MPI. */
    static final int PRIORITY_CUDA_AWARE = 100;
    /** Priority for host buffers only. */
    static final int PRIORITY_HOST = 20;

    /** The path the probe chose. */
    private volatile OmpiBinding.Path path = OmpiBinding.Path.JAVA;

    @Override
    public String name() {
        return "ompi";
    }

    @Override
    public Probe probe(ProbeContext context) {
        MpiFamilyChoice family = MpiFamilyChoice.of(context.launch(), context.settings());
        if (family.family() != Launch.Family.OPEN_MPI) {
            return Probe.unavailable(name(), "this process belongs to the MPICH family (" + family.reason()
                    + "); Open MPI is not loaded beside it: launch with Open MPI's mpirun (or srun --mpi=pmix) to use ompi", null);
        }
        if (MpiLibrary.request(MpiFamily.OPEN_MPI) != MpiFamily.OPEN_MPI) {
            return Probe.unavailable(name(), "this process already bound an MPICH-ABI library through java.lang.foreign (backend mvapich); "
                    + "one process holds one MPI library", null);
        }
        OmpiBinding.Choice choice;
        try {
            choice = OmpiBinding.choose(OmpiBinding.setting(context.settings()), Mpi::unavailabilityCause);
        } catch (FerryException e) {
            return Probe.unavailable(name(), e.getMessage(), e);
        }
        this.path = choice.path();
        // CUDA first: the GPU is chosen from the local rank before MPI_Init, as CUDA-aware MPIs want
        // (when the launcher gave none, after MPI_Init from MPI's shared-memory split)
        if (Cuda.isAvailable() && context.launch().localRank() >= 0) {
            Cuda.defaultDevice();
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("binding", choice.path().setting + ": " + choice.path().label + " (" + choice.reason() + ")");
        String version;
        CudaSupportQuery.Answer cuda;
        if (choice.path() == OmpiBinding.Path.JAVA) {
            Throwable jar = OmpiBinding.javaBindingsMissing();
            if (jar instanceof ClassNotFoundException) {
                return Probe.unavailable(name(), "Open MPI's mpi.jar is not on the class path (-Dferry.ompi.binding=java): add $(ompi_info --path libdir)/mpi.jar "
                        + "(Debian/Ubuntu ship none: ./ferry setup builds it from the matching source package), or use -Dferry.ompi.binding=ffm (needs no mpi.jar)", jar, details);
            }
            // libmpi_java.so: mpirun puts Open MPI's libdir on java.library.path, srun does not
            OmpiJavaLibrary.prepare().ifPresent(f -> details.put("libmpi_java", f));
            JarPath.Started rt;
            try {
                rt = JarPath.load().start();
            } catch (FerryException | ReflectiveOperationException | LinkageError e) {
                Throwable cause = e instanceof FerryException && e.getCause() != null ? e.getCause() : e;
                String hint = cause instanceof LinkageError || cause instanceof ReflectiveOperationException
                        ? OmpiJavaLibrary.explain(cause) + "; the mpi.jar must match the loaded Open MPI; "
                          + "or use -Dferry.ompi.binding=ffm (needs no mpi.jar)"
                        : "MPI_Init failed: " + cause.getMessage();
                return Probe.unavailable(name(), hint, cause, details);
            }
            version = rt.version();
            cuda = rt.cuda();
            details.putAll(rt.details());
        } else {
            Throwable missing = Mpi.unavailabilityCause();
            if (missing != null) {
                return Probe.unavailable(name(), "Open MPI's libmpi.so.40 could not be bound through java.lang.foreign: " + missing.getMessage(),
                        missing, details);
            }
            OmpiFfmRuntime rt;
            try {
                rt = OmpiFfmRuntime.get();
            } catch (FerryException e) {
                details.put("library", Mpi.library().path() + " (found by " + Mpi.library().how() + ")");
                return Probe.unavailable(name(), "MPI could not be initialized: " + e.getMessage(), e, details);
            }
            version = rt.version;
            cuda = rt.cuda;
            details.put("library", rt.version + " at " + rt.library);
            details.put("found by", rt.foundBy);
            details.put("symbols", MpiLibrary.rtldMode(MpiFamily.OPEN_MPI).equals("true")
                    ? "RTLD_GLOBAL (Open MPI's components resolve libmpi's symbols globally; -Dferry.ompi.rtldGlobal=false to change)"
                    : "RTLD_LOCAL (-Dferry.ompi.rtldGlobal=false)");
            details.put("threads", rt.threadLevelName());
            if (!rt.workarounds.isEmpty()) {
                details.put("workarounds", String.join("; ", rt.workarounds));
            }
            if (!NativeEnvironment.changes().isEmpty()) {
                details.put("environment", String.join(", ", NativeEnvironment.changes()));
            }
        }
        details.put("large messages", Mpi.unavailabilityCause() == null ? LargeMessages.how() : "unavailable: " + Mpi.unavailabilityCause().getMessage());
        details.put("cuda-aware", (cuda.cudaAware() ? "yes" : "no") + " (" + cuda.explanation() + ")");
        details.put("mpi family", family.reason());
        details.put("node-local rank", dev.ferry.spi.NodeLocal.describe());
        EnumSet<Capability> caps = EnumSet.of(Capability.HOST_BUFFERS);
        if (cuda.cudaAware()) {
            caps.add(Capability.CUDA_AWARE_LIBRARY);
        }
        boolean direct = cuda.cudaAware() && Cuda.isAvailable();
        if (direct) {
            caps.add(Capability.CUDA_DEVICE_BUFFERS);
            caps.add(Capability.CUDA_AWARE_MPI);
        }
        String reason = version + " via " + choice.path().setting + " (" + choice.path().label + "; " + choice.reason() + ")"
                + (cuda.cudaAware() ? ", CUDA-aware" : ", not CUDA-aware")
                + (direct ? ": device buffers go straight to MPI" : cuda.cudaAware() ? " but CUDA is unavailable here: host buffers only" : ": host buffers only");
        return Probe.available(name(), direct ? PRIORITY_CUDA_AWARE : PRIORITY_HOST, caps, reason, details);
    }

    @Override
    public dev.ferry.spi.Transport open(OpenContext context) {
        // mpi.jar's classes are touched only from here on (OmpiJavaTransport), never by the provider
        // class itself: without mpi.jar the provider still loads and its probe says what is missing
        if (path == OmpiBinding.Path.FFM) {
            return OmpiFfmTransport.world(OmpiFfmRuntime.get());
        }
        try {
            return JarPath.load().openWorld();
        } catch (ReflectiveOperationException e) {
            throw new FerryException("backend ompi's mpi.jar path is not available: " + e, e);
        }
    }

    @Override
    public void shutdown() {
        dev.ferry.spi.MpiLifecycle.finalizeNow();
    }
}
