// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import dev.ferry.Settings;
import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.InvalidArgumentException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.MpiFamilyChoice;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.Transport;
import dev.ferry.spi.TransportProvider;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The staged backend: a decorator over the launched MPI's host backend ({@code ompi} under Open
 * MPI, {@code mvapich} under an MPICH-family launcher) that carries device buffers through pinned
 * host memory, pipelined, and between GPUs of one node by CUDA IPC.
 *
 * <p>Available wherever such an inner backend is. With CUDA it takes device buffers and ranks
 * between a CUDA-aware MPI (which takes them directly) and host-only backends, so that
 * {@code auto} picks it when the MPI is not CUDA-aware; without CUDA it ranks below its inner
 * backend, so that {@code auto} picks the plain MPI backend.
 */
public final class StagedProvider implements TransportProvider {
    /** Priority with CUDA: below a CUDA-aware MPI (100), above host-only backends (20). */
    static final int PRIORITY_CUDA = 60;
    /** Priority without CUDA: below the inner backend itself. */
    static final int PRIORITY_HOST = 10;
    /** Inner backends, in the order they are considered. */
    static final List<String> INNER = List.of("ompi", "mvapich");

    private StagedSettings settings;
    private String inner;

    @Override
    public String name() {
        return "staged";
    }

    @Override
    public List<String> dependsOn() {
        return INNER;
    }

    @Override
    public Probe probe(ProbeContext context) {
        StagedSettings s;
        try {
            s = StagedSettings.read(context.settings());
        } catch (InvalidArgumentException e) {
            return Probe.unavailable(name(), "bad setting: " + e.getMessage(), e);
        }
        String forced;
        try {
            forced = context.settings().get(StagedSettings.INNER);
        } catch (InvalidArgumentException e) {
            return Probe.unavailable(name(), "bad setting: " + e.getMessage(), e);
        }
        Map<String, Probe> inners = new LinkedHashMap<>();
        for (String n : INNER) {
            inners.put(n, context.probe(n));
        }
        Probe chosen = null;
        if (forced != null) {
            chosen = inners.get(forced);
            if (chosen == null) {
                return Probe.unavailable(name(), "ferry.staged.inner=" + forced + " is not one of " + INNER, null);
            }
            if (!chosen.isAvailable()) {
                return Probe.unavailable(name(), "its inner backend " + forced + " (ferry.staged.inner) is unavailable: " + chosen.reason(),
                        chosen.unavailabilityCause());
            }
        } else {
            String preferred = preferredInner(context.launch(), context.settings());
            Probe p = inners.get(preferred);
            if (p != null && p.isAvailable() && p.has(Capability.HOST_BUFFERS)) {
                chosen = p;
            } else {
                for (Probe q : inners.values()) {
                    if (q.isAvailable() && q.has(Capability.HOST_BUFFERS)) {
                        chosen = q;
                        break;
                    }
                }
            }
        }
        if (chosen == null) {
            StringBuilder why = new StringBuilder("no host MPI backend to stage through:");
            inners.forEach((n, p) -> why.append(' ').append(n).append(": ").append(p.reason()).append(';'));
            return Probe.unavailable(name(), why.toString(), null);
        }
        settings = s;
        inner = chosen.provider();

        boolean gpu = Cuda.isAvailable();
        boolean ipc = gpu && s.ipc() && Cuda.deviceCount() >= 1;
        EnumSet<Capability> caps = EnumSet.of(Capability.HOST_BUFFERS);
        if (gpu) {
            caps.add(Capability.CUDA_DEVICE_BUFFERS);
        }
        if (ipc) {
            caps.add(Capability.CUDA_IPC);
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("inner", inner + " (" + chosen.reason() + ")");
        details.put("node-local rank", dev.ferry.spi.NodeLocal.describe());
        details.putAll(s.describe());
        details.put("ipc", !s.ipc() ? "off (ferry.ipc=false)" : !gpu ? "off (no CUDA)" : "on, cache of "
                + dev.ferry.Settings.process().get(dev.ferry.collectives.ipc.IpcSettings.CACHE_SIZE) + " mappings");
        details.put("peer access", gpu ? peerAccess() : "no CUDA");
        details.put("cuda", Cuda.describe());
        String innerWhat = chosen.details().getOrDefault("library", chosen.reason());
        String reason = gpu
                ? "device buffers staged through pinned host memory over " + inner + " (" + shortName(innerWhat)
                        + (chosen.has(Capability.CUDA_AWARE_MPI) ? ", CUDA-aware: " + inner + " itself is preferred" : ", not CUDA-aware")
                        + ")" + (ipc ? "; CUDA IPC between GPUs of one node" : "")
                : "host buffers passed to " + inner + " (" + shortName(innerWhat) + "); no CUDA here (" + firstClause(Cuda.unavailabilityCause())
                        + "), so auto prefers " + inner + " itself";
        if (s.stageHostBuffers()) {
            reason += " [test mode: host buffers staged too, ferry.staged.stageHostBuffers]";
        }
        return Probe.available(name(), gpu ? PRIORITY_CUDA : PRIORITY_HOST, caps, reason, details);
    }

    /** The backend of the launcher's family: ompi for Open MPI, mvapich for the MPICH family. */
    static String preferredInner(Launch launch, Settings settings) {
        try {
            return MpiFamilyChoice.of(launch, settings).family() == Launch.Family.MPICH ? "mvapich" : "ompi";
        } catch (RuntimeException e) {
            return "ompi";
        }
    }

    private static String shortName(String library) {
        int at = library.indexOf(" at ");
        return at < 0 ? library : library.substring(0, at);
    }

    private static String firstClause(Throwable t) {
        if (t == null || t.getMessage() == null) return "unavailable";
        String m = t.getMessage();
        int semi = m.indexOf(';');
        return semi < 0 ? m : m.substring(0, semi);
    }

    /** "0<->1 yes" pairs between the visible devices, or "one device". */
    static String peerAccess() {
        int n = Cuda.deviceCount();
        if (n < 2) {
            return n + " device: same-GPU IPC only";
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                String v;
                try {
                    v = Cuda.canAccessPeer(i, j) && Cuda.canAccessPeer(j, i) ? "yes" : "no";
                } catch (RuntimeException e) {
                    v = "? (" + e.getMessage() + ")";
                }
                if (!sb.isEmpty()) sb.append(", ");
                sb.append(i).append("<->").append(j).append(' ').append(v);
            }
        }
        return sb.toString();
    }

    @Override
    public Transport open(OpenContext context) {
        if (settings == null || inner == null) {
            Probe p = probe(context);
            p.ensureAvailable();
        }
        StagedRuntime rt = StagedRuntime.acquire(settings, inner);
        Transport world;
        try {
            world = context.open(inner);
        } catch (RuntimeException e) {
            rt.release();
            throw new FerryException("staged: cannot open its inner backend " + inner + ": " + e.getMessage(), e);
        }
        return new StagedTransport(world, rt);
    }

    @Override
    public void shutdown() {
        StagedRuntime.shutdown();
    }
}
