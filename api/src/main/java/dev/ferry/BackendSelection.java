package dev.ferry;

import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.TransportProvider;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Iterator;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * Finds providers with ServiceLoader, probes each once (dependencies first), and picks one:
 * the requested name, or for {@code auto} the available provider of highest priority. One per
 * process; {@link Ferry} holds it.
 */
final class BackendSelection implements OpenContext {
    static final String AUTO = "auto";

    private final Map<String, TransportProvider> providers = new LinkedHashMap<>();
    private final Map<String, Probe> probes = new LinkedHashMap<>();
    private final Set<String> probing = new HashSet<>();
    private final Launch launch = Launch.detect();
    private final Set<TransportProvider> opened = new HashSet<>();
    private final List<Throwable> loadFailures = new ArrayList<>();
    private Probe self;

    BackendSelection() {
        Iterator<TransportProvider> it = ServiceLoader.load(TransportProvider.class, BackendSelection.class.getClassLoader()).iterator();
        while (true) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                TransportProvider p = it.next();
                providers.putIfAbsent(p.name().toLowerCase(Locale.ROOT), p);
            } catch (ServiceConfigurationError | LinkageError e) {
                // a provider whose class cannot even load (a missing jar it links against): keep the
                // reason for the report instead of failing every backend
                loadFailures.add(e);
            }
        }
    }

    /** The requested name and where it came from. */
    static String[] requested() {
        String v = System.getProperty("ferry.backend");
        if (v != null && !v.isBlank()) {
            return new String[] {v.trim().toLowerCase(Locale.ROOT), "-Dferry.backend"};
        }
        v = System.getenv("FERRY_BACKEND");
        if (v != null && !v.isBlank()) {
            return new String[] {v.trim().toLowerCase(Locale.ROOT), "FERRY_BACKEND"};
        }
        return new String[] {AUTO, "default"};
    }

    synchronized SelectionReport report(String requested, String source) {
        for (String name : providers.keySet()) {
            probe(name);
        }
        List<Probe> all = new ArrayList<>();
        for (String name : providers.keySet()) {
            all.add(probes.get(name));
        }
        for (Throwable e : loadFailures) {
            all.add(Probe.unavailable("(unloadable)", "a provider on the class path could not be loaded: " + e
                    + (e.getCause() != null ? " caused by " + e.getCause() : ""), e));
        }
        if (providers.isEmpty()) {
            return new SelectionReport(requested, source, launch, all, null,
                    "no TransportProvider found on the class path: add ferry-backend-ompi, ferry-backend-mvapich or ferry-backend-staged");
        }
        if (!AUTO.equals(requested)) {
            Probe p = probes.get(requested);
            if (p == null) {
                return new SelectionReport(requested, source, launch, all, null,
                        "unknown backend '" + requested + "'; known: auto, " + String.join(", ", providers.keySet()));
            }
            if (!p.isAvailable()) {
                return new SelectionReport(requested, source, launch, all, null, "backend " + requested + " is unavailable: " + p.reason());
            }
            return new SelectionReport(requested, source, launch, all, requested, "requested by " + source + "; " + p.reason());
        }
        Probe best = all.stream().filter(Probe::isAvailable)
                .max(Comparator.comparingInt(Probe::priority)).orElse(null);
        if (best == null) {
            return new SelectionReport(requested, source, launch, all, null, "no provider is available here (reasons above)");
        }
        String why = "auto: highest priority of the available backends ("
                + (best.has(Capability.CUDA_DEVICE_BUFFERS) ? (best.has(Capability.CUDA_AWARE_MPI) ? "device buffers straight to a CUDA-aware MPI" : "device buffers staged by Ferry")
                : "host buffers only") + "); " + best.reason();
        return new SelectionReport(requested, source, launch, all, best.provider(), why);
    }

    synchronized Communicator open(SelectionReport report) {
        self = probes.get(report.chosen());
        return open(report.chosen());
    }

    // ---- OpenContext ---------------------------------------------------------------------

    @Override
    public Launch launch() {
        return launch;
    }

    @Override
    public synchronized Probe probe(String name) {
        Probe p = probes.get(name);
        if (p != null) {
            return p;
        }
        TransportProvider provider = providers.get(name);
        if (provider == null) {
            return Probe.unavailable(name, "no provider named " + name + " on the class path", null);
        }
        if (!probing.add(name)) {
            return Probe.unavailable(name, "probe cycle through " + name, null);
        }
        try {
            p = provider.probe(this);
        } catch (RuntimeException | LinkageError e) {
            p = Probe.unavailable(name, "probe failed: " + e, e);
        } finally {
            probing.remove(name);
        }
        probes.put(name, p);
        return p;
    }

    @Override
    public String setting(String key, String fallback) {
        return Ferry.setting(key, fallback);
    }

    @Override
    public Probe self() {
        return self;
    }

    @Override
    public synchronized Communicator open(String name) {
        TransportProvider provider = providers.get(name);
        Probe p = probe(name);
        if (provider == null || !p.isAvailable()) {
            throw new FerryException("cannot open backend " + name + ": " + p.reason(), p.unavailabilityCause());
        }
        Probe outer = self;
        self = p;
        try {
            Communicator c = provider.open(this);
            opened.add(provider);
            return c;
        } finally {
            self = outer;
        }
    }

    synchronized void shutdown() {
        for (TransportProvider p : providers.values()) {
            if (opened.contains(p) || probes.containsKey(p.name())) {
                p.shutdown();
            }
        }
    }
}
