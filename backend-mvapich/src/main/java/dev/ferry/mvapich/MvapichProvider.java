// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.mpi.Mpi;
import dev.ferry.mpi.MpiFamily;
import dev.ferry.mpi.MpiLibrary;
import dev.ferry.mpi.MpiLibraryLocator;
import dev.ferry.mpi.NativeEnvironment;
import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.MpiFamilyChoice;
import dev.ferry.spi.MpiLifecycle;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The MPICH-ABI family — MVAPICH2, MVAPICH2-GDR, MPICH, Intel MPI, Cray MPICH — bound directly
 * with java.lang.foreign. Available when the process was launched by an MPICH-family launcher
 * (Hydra's {@code PMI_*}, {@code MPI_LOCALRANKID}, MVAPICH2's {@code MV2_*}), or is a singleton
 * that chose this family, the library is found ({@link MpiLibraryLocator}) and MPI initializes.
 * Under an Open MPI launch it is unavailable without loading anything. Device buffers go straight
 * to MPI only when the library says it carries them ({@link GpuSupport}) and CUDA is usable.
 */
public final class MvapichProvider implements TransportProvider {
    /** Priority when device buffers go straight to a CUDA-aware MPI. */
    static final int PRIORITY_CUDA_AWARE = 100;
    /** Priority for host buffers only. */
    static final int PRIORITY_HOST = 20;

    /** Used by ServiceLoader. */
    public MvapichProvider() {
    }

    @Override
    public String name() {
        return "mvapich";
    }

    @Override
    public Probe probe(ProbeContext context) {
        MpiFamilyChoice family = MpiFamilyChoice.of(context.launch(), context.settings());
        if (family.family() != Launch.Family.MPICH) {
            return Probe.unavailable(name(), "this process belongs to Open MPI (" + family.reason()
                    + "); no MPICH-family library is loaded beside it: launch with MPICH's mpiexec (Hydra), MVAPICH2's mpirun_rsh, "
                    + "Intel MPI's mpirun or srun --mpi=pmi2 to use mvapich", null, Map.of("mpi family", family.reason()));
        }
        if (MpiLibrary.request(MpiFamily.MPICH_ABI) != MpiFamily.MPICH_ABI) {
            return Probe.unavailable(name(), "this process already bound Open MPI through java.lang.foreign (backend ompi); "
                    + "one process holds one MPI library", null, Map.of("mpi family", family.reason()));
        }
        Throwable missing = Mpi.unavailabilityCause();
        if (missing != null) {
            return Probe.unavailable(name(), missing.getMessage(), missing, Map.of("mpi family", family.reason()));
        }
        // CUDA first: the GPU is chosen from the local rank before MPI_Init, as CUDA-aware MPIs want
        // (when the launcher gave none, after MPI_Init from MPI's shared-memory split)
        if (Cuda.isAvailable() && context.launch().localRank() >= 0) {
            Cuda.defaultDevice();
        }
        MvapichRuntime rt;
        try {
            rt = MvapichRuntime.get();
        } catch (FerryException e) {
            Map<String, String> details = new LinkedHashMap<>();
            details.put("library", Mpi.library().path() + " (found by " + Mpi.library().how() + ")");
            details.put("mpi family", family.reason());
            return Probe.unavailable(name(), "MPI could not be initialized: " + e.getMessage(), e, details);
        }
        if (Cuda.isAvailable()) {
            Cuda.defaultDevice();
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("library", rt.version.name() + " at " + rt.library);
        details.put("family", rt.version.flavor().label() + (rt.version.device().isEmpty() ? "" : ", device " + rt.version.device()));
        details.put("found by", rt.foundBy);
        details.put("cuda-aware", (rt.cuda.cudaAware() ? "yes" : "no") + " (" + rt.cuda.explanation() + ")");
        details.put("threads", rt.threadLevelName());
        String workarounds = java.util.stream.Stream.of(rt.deviceReductionStaging, rt.deviceTreeStaging, rt.splitSendRecv).filter(java.util.Objects::nonNull)
                .collect(java.util.stream.Collectors.joining("; "));
        if (!workarounds.isEmpty()) {
            details.put("workarounds", workarounds);
        }
        details.put("mpi family", family.reason());
        details.put("node-local rank", dev.ferry.spi.NodeLocal.describe());
        details.put("symbols", rt.symbolScope);
        if (!NativeEnvironment.changes().isEmpty()) {
            details.put("environment", String.join(", ", NativeEnvironment.changes()));
        }
        EnumSet<Capability> caps = EnumSet.of(Capability.HOST_BUFFERS);
        if (rt.sharedGpu != null) {
            details.put("device buffers", "refused: " + rt.sharedGpu);
        }
        if (rt.cuda.cudaAware()) {
            caps.add(Capability.CUDA_AWARE_LIBRARY);
        }
        boolean direct = rt.takesDeviceBuffers();
        if (direct) {
            caps.add(Capability.CUDA_DEVICE_BUFFERS);
            caps.add(Capability.CUDA_AWARE_MPI);
        }
        String reason = rt.version.name() + " (" + rt.version.flavor().label() + ")"
                + (rt.cuda.cudaAware() ? ", CUDA-aware" : ", not CUDA-aware")
                + (direct ? ": device buffers go straight to MPI"
                        : !rt.cuda.cudaAware() ? ": host buffers only"
                        : !Cuda.isAvailable() ? " but CUDA is unavailable here: host buffers only"
                        : " but ranks share a GPU, where it fails: host buffers only");
        return Probe.available(name(), direct ? PRIORITY_CUDA_AWARE : PRIORITY_HOST, caps, reason, details);
    }

    @Override
    public dev.ferry.spi.Transport open(OpenContext context) {
        MvapichRuntime rt = MvapichRuntime.get();
        Mpi.Scratch s = Mpi.scratch();
        Mpi.check("MPI_Comm_dup(MPI_COMM_WORLD)", Mpi.commDup(Mpi.ABI.commWorld, s.handle));
        return new MvapichTransport(rt, (int) s.handle(), true);
    }

    @Override
    public void shutdown() {
        MpiLifecycle.finalizeNow();
    }
}
