// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.FerryException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.MpiFamilyChoice;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The nccl backend: the launched MPI backend (the <em>inner</em> one) for messages, and NVIDIA NCCL
 * ({@link NcclCollectives}) for every collective it can serve, asked of the collectives planner
 * ({@link Transport#preferredAlgorithm()}). NCCL is one of the planner's algorithms under every
 * backend anyway; this backend only puts it first, for programs that want NCCL whatever the
 * measured costs say.
 *
 * <p>Available when {@code libnccl.so.2} loads ({@link Nccl}), a CUDA driver with a device is
 * present, and an inner backend is. Whether every rank has a GPU of its own (NCCL refuses two
 * ranks on one GPU) can only be known with the other ranks, so it is decided when the backend
 * opens, by one allGather over the inner communicator ({@link GpuPlacement}); when ranks share a
 * GPU, collectives take the planner's other algorithms and {@link Nccl#inactiveReason} says why (or,
 * when {@code nccl} was requested by name, opening fails with the reason).
 *
 * <p>Inner backend ({@code -Dferry.nccl.inner=ompi|mvapich|staged} overrides): the launcher's
 * MPI backend ({@code ompi} under Open MPI, {@code mvapich} under the MPICH family) when it is
 * CUDA-aware, so device point-to-point goes straight to MPI; otherwise {@code staged} over that
 * MPI, so that device point-to-point and the reductions NCCL lacks still work on device buffers;
 * failing both, the host MPI backend (device buffers then only in NCCL's collectives).
 *
 * <p>Priority 10: below every other backend, so {@code auto} never picks it: under any backend the
 * planner already takes NCCL where its measured cost is lowest.
 */
public final class NcclProvider implements TransportProvider {
    /** Below every other backend: {@code auto} never picks it (the planner offers NCCL to every backend). */
    static final int PRIORITY = 10;
    /** Inner backends, in the order they are probed. */
    static final List<String> INNER = List.of("ompi", "mvapich", "staged");

    private String inner;

    /** Used by ServiceLoader. */
    public NcclProvider() {
    }

    @Override
    public String name() {
        return "nccl";
    }

    @Override
    public List<String> dependsOn() {
        return INNER;
    }

    @Override
    public Probe probe(ProbeContext context) {
        Map<String, Probe> inners = new LinkedHashMap<>();
        for (String n : INNER) {
            inners.put(n, context.probe(n));
        }
        String forced = context.settings().get(NcclSettings.INNER);
        Probe self;
        try {
            String chosen = chooseInner(preferredMpi(context.launch(), context.settings()), inners, forced);
            Throwable lib = Nccl.unavailabilityCause();
            Throwable cuda = Cuda.isAvailable() ? null : Cuda.unavailabilityCause();
            self = decide(lib, cuda, chosen, chosen == null ? null : inners.get(chosen), inners, details(lib, chosen, inners));
            inner = self.isAvailable() ? chosen : null;
        } catch (FerryException e) {
            return Probe.unavailable(name(), e.getMessage(), e, details(Nccl.unavailabilityCause(), null, inners));
        }
        return self;
    }

    /** ompi or mvapich: the MPI backend of the launcher's family. */
    static String preferredMpi(Launch launch, Settings settings) {
        try {
            return MpiFamilyChoice.of(launch, settings).family() == Launch.Family.MPICH ? "mvapich" : "ompi";
        } catch (RuntimeException e) {
            return "ompi";
        }
    }

    /**
     * The inner backend (see the class comment), or null when none is available; a forced one that
     * is unknown or unavailable is an error.
     */
    static String chooseInner(String preferred, Map<String, Probe> inners, String forced) {
        if (forced != null) {
            String f = forced.trim().toLowerCase(Locale.ROOT);
            Probe p = inners.get(f);
            if (p == null) {
                throw new FerryException("-Dferry.nccl.inner=" + forced + " is not one of " + INNER);
            }
            if (!p.isAvailable()) {
                throw new FerryException("its inner backend " + f + " (ferry.nccl.inner) is unavailable: " + p.reason());
            }
            return f;
        }
        Probe mpi = inners.get(preferred);
        if (mpi != null && mpi.isAvailable() && mpi.has(Capability.CUDA_AWARE_MPI)) {
            return preferred;
        }
        Probe staged = inners.get("staged");
        if (staged != null && staged.isAvailable() && staged.has(Capability.CUDA_DEVICE_BUFFERS)) {
            return "staged";
        }
        if (mpi != null && mpi.isAvailable()) {
            return preferred;
        }
        for (Map.Entry<String, Probe> e : inners.entrySet()) {
            if (e.getValue() != null && e.getValue().isAvailable()) {
                return e.getKey();
            }
        }
        return null;
    }

    /**
     * The probe's answer from what was found: the library's failure (or null), CUDA's (or null),
     * and the chosen inner backend (or null), in that order of precedence.
     */
    static Probe decide(Throwable library, Throwable cuda, String inner, Probe innerProbe, Map<String, Probe> inners, Map<String, String> details) {
        if (library != null) {
            return Probe.unavailable("nccl", "the NCCL library is unavailable: " + library.getMessage(), library, details);
        }
        if (cuda != null) {
            return Probe.unavailable("nccl", "no CUDA here (" + (cuda.getMessage() == null ? cuda.toString() : cuda.getMessage())
                    + "): NCCL runs collectives between GPUs only", cuda, details);
        }
        if (inner == null || innerProbe == null) {
            StringBuilder why = new StringBuilder("no MPI backend to run beside (NCCL needs one for its unique id and for everything but device collectives):");
            inners.forEach((n, p) -> why.append(' ').append(n).append(": ").append(p == null ? "?" : p.reason()).append(';'));
            return Probe.unavailable("nccl", why.toString(), null, details);
        }
        EnumSet<Capability> caps = EnumSet.of(Capability.HOST_BUFFERS, Capability.CUDA_DEVICE_BUFFERS);
        if (innerProbe.has(Capability.CUDA_AWARE_MPI)) caps.add(Capability.CUDA_AWARE_MPI);
        if (innerProbe.has(Capability.CUDA_IPC)) caps.add(Capability.CUDA_IPC);
        String reason = "NCCL " + Nccl.version() + " first for every collective it serves, " + inner + " for messages ("
                + innerProbe.reason() + "); one GPU per rank is checked when it opens";
        return Probe.available("nccl", PRIORITY, caps, reason, details);
    }

    static Map<String, String> details(Throwable library, String inner, Map<String, Probe> inners) {
        Map<String, String> d = new LinkedHashMap<>();
        if (library == null) {
            d.put("library", "NCCL " + Nccl.version() + " at " + Nccl.library() + " (found by " + Nccl.foundBy() + ")");
            d.put("ncclCommSplit", Nccl.hasCommSplit() ? "yes (split and duplicate use it)" : "no (before 2.18: split and duplicate make a new unique id)");
            d.put("ncclMemAlloc", Nccl.hasMemAlloc() ? "yes" : "no");
        } else {
            d.put("library", "not loaded: " + library.getMessage());
        }
        d.put("environment", Nccl.describeEnvironment() + "; Ferry sets no NCCL_* variable (NVLink multicast stays as NCCL and the user decide)");
        d.put("cuda", Cuda.describe());
        if (inner != null) {
            Probe p = inners.get(inner);
            d.put("inner", inner + (p == null ? "" : " (" + p.reason() + ")"));
            d.put("delegated to " + inner, "point-to-point (tags, wildcards), barrier, host and managed buffers, device memory of another GPU;"
                    + " reductions of SHORT and pair types and with LAND/LOR/BAND/BOR/BXOR/MINLOC/MAXLOC (NCCL has no such type or operator)");
        }
        d.put("on NCCL", "broadcast, allGather, reduce, allReduce (BYTE INT LONG FLOAT DOUBLE FLOAT16 BFLOAT16; SUM PROD MAX MIN), gather, scatter,"
                + " allToAll and the vector collectives (grouped ncclSend/ncclRecv), reduceScatterBlock (ncclReduceScatter), reduceScatter (grouped ncclReduce), on device memory of the rank's GPU");
        d.put("agreement", "the planner's vote on every rank's buffers per collective (ferry.collectives.uniformBuffers=true skips it)");
        long t = NcclCollectives.timeoutNanos(Settings.process());
        d.put("timeout", t == 0 ? "none (ferry.nccl.timeout / ferry.timeout unset)" : (t / 1e9) + " s, then ncclCommAbort and NcclException");
        d.putAll(NcclRuntime.snapshot());
        return d;
    }

    /**
     * What happened after the probe (GPU placement decided at open, delegations and failures,
     * each recorded once): for reports and {@code ferry doctor}.
     */
    public static Map<String, String> runtimeDetails() {
        return NcclRuntime.snapshot();
    }

    @Override
    public Transport open(OpenContext context) {
        if (inner == null) {
            probe(context).ensureAvailable();
        }
        Transport world;
        try {
            world = context.open(inner);
        } catch (RuntimeException e) {
            throw new FerryException("nccl: cannot open its inner backend " + inner + ": " + e.getMessage(), e);
        }
        String refusal;
        try {
            refusal = GpuPlacement.refusal(GpuPlacement.exchange(world, GpuPlacement.mine()));
        } catch (RuntimeException e) {
            world.close();
            throw e;
        }
        NcclRuntime.placement(refusal);
        if (refusal != null) {
            if ("nccl".equals(context.settings().get(FerrySettings.BACKEND))) {
                world.close();
                throw new FerryException("backend nccl (requested by name) cannot run here: " + refusal);
            }
            if (world.rank() == 0) {
                System.getLogger("dev.ferry.nccl").log(System.Logger.Level.INFO, "collectives take the planner's other algorithms, not NCCL: " + refusal);
            }
        }
        return new PreferNccl(world);
    }

    /** The inner backend's transport, named nccl, asking the planner for NCCL first. */
    static final class PreferNccl extends dev.ferry.spi.ForwardingTransport {
        PreferNccl(Transport inner) {
            super(inner);
        }

        @Override
        public String backend() {
            return "nccl";
        }

        @Override
        public String preferredAlgorithm() {
            return "nccl";
        }

        @Override
        public Transport split(int color, int key) {
            Transport t = inner.split(color, key);
            return t == null ? null : new PreferNccl(t);
        }

        @Override
        public Transport duplicate() {
            return new PreferNccl(inner.duplicate());
        }

        @Override
        public dev.ferry.spi.PendingDuplicate startDuplicate() {
            dev.ferry.spi.PendingDuplicate started = inner.startDuplicate();
            return () -> new PreferNccl(started.finish());
        }
    }
}
