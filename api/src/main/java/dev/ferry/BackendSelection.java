// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.flight.FlightRecorder;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.spi.CollectivePlanning;
import dev.ferry.spi.Transport;
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
    private final Launch launch;
    private final Settings settings;
    private final List<Probe> duplicates = new ArrayList<>();
    /** The provider whose probe or open is running (for its dependsOn), or null. */
    private TransportProvider asking;
    private final Set<TransportProvider> opened = new HashSet<>();
    private final List<Throwable> loadFailures = new ArrayList<>();
    private Probe self;
    private String decoration;

    /** The providers on the class path ({@link ServiceLoader}), in class-path order. */
    static BackendSelection discover() {
        List<TransportProvider> found = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        Iterator<TransportProvider> it = ServiceLoader.load(TransportProvider.class, BackendSelection.class.getClassLoader()).iterator();
        while (true) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                found.add(it.next());
            } catch (ServiceConfigurationError | LinkageError e) {
                // a provider whose class cannot even load (a missing jar it links against): keep the
                // reason for the report instead of failing every backend
                failures.add(e);
            }
        }
        return new BackendSelection(found, failures, Launch.detect(), Settings.process());
    }

    /**
     * A selection over {@code candidates}, in that order. Of two providers with one name (case
     * ignored), the first is used and the other is reported as a duplicate; {@code loadFailures}
     * are providers that could not be loaded, shown in the report.
     */
    /** The planner instead of the one {@link java.util.ServiceLoader} finds (tests); null: that one. */
    CollectivePlanning planning;

    BackendSelection(List<? extends TransportProvider> candidates, List<Throwable> loadFailures, Launch launch, Settings settings) {
        this.launch = launch;
        this.settings = settings;
        this.loadFailures.addAll(loadFailures);
        for (TransportProvider p : candidates) {
            String name = p.name().toLowerCase(Locale.ROOT);
            TransportProvider first = providers.putIfAbsent(name, p);
            if (first != null) {
                duplicates.add(Probe.unavailable(name + " (duplicate)", "two providers are named " + name + ": " + first.getClass().getName()
                        + " (used) and " + p.getClass().getName() + " (ignored); remove one of their jars from the class path", null));
            }
        }
    }

    /** The requested name and where it came from. */
    static String[] requested(Settings settings) {
        String source = settings.source(FerrySettings.BACKEND);
        return new String[] {settings.get(FerrySettings.BACKEND), source == null ? "default" : source};
    }

    synchronized SelectionReport report(String requested, String source) {
        for (String name : providers.keySet()) {
            // dependencies first: a decorator's probe finds the probes of what it wraps ready
            for (String dep : providers.get(name).dependsOn()) {
                probe(dep.toLowerCase(Locale.ROOT));
            }
            probe(name);
        }
        List<Probe> all = new ArrayList<>();
        for (String name : providers.keySet()) {
            all.add(probes.get(name));
        }
        all.addAll(duplicates);
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
        decoration = null;
        self = probes.get(report.chosen());
        FlightRecorder.checkSettings(); // a bad value fails before anything is opened
        Transport world = open(report.chosen());
        FlightRecorder.start(world);
        return new CheckedCommunicator(planned(world));
    }

    /**
     * {@code world} with its collectives planned ({@link CollectivePlanning}, from
     * {@code ferry-collectives}: every collective on the algorithm measured fastest for it); the
     * backend's own collectives when no planner is on the class path.
     */
    private Transport planned(Transport world) {
        Transport t = planning != null ? planning.plan(world, settings) : CollectivePlanning.planned(world, settings, BackendSelection.class.getClassLoader());
        if (t != world) decoration = "collectives planned per call (ferry doctor shows the plan)";
        return t;
    }

    /** What the last {@link #open(SelectionReport)} put over the chosen backend, for the start-up line; null: nothing. */
    synchronized String decoration() {
        return decoration;
    }

    // ---- OpenContext ---------------------------------------------------------------------

    @Override
    public Launch launch() {
        return launch;
    }

    @Override
    public synchronized Probe probe(String name) {
        String key = name.toLowerCase(Locale.ROOT);
        if (asking != null && !declares(asking, key)) {
            // a provider may only build on what it declares: the report probes those first
            throw new IllegalStateException("backend " + asking.name() + " asked about backend " + key + ", which its dependsOn() "
                    + asking.dependsOn() + " does not name: add it there");
        }
        Probe p = probes.get(key);
        if (p != null) {
            return p;
        }
        TransportProvider provider = providers.get(key);
        if (provider == null) {
            return Probe.unavailable(key, "no provider named " + key + " on the class path", null);
        }
        if (!probing.add(key)) {
            return Probe.unavailable(key, "probe cycle through " + key, null);
        }
        TransportProvider outer = asking;
        asking = provider;
        try {
            p = provider.probe(this);
            if (p == null) {
                p = Probe.unavailable(key, "probe of " + provider.getClass().getName() + " returned null", null);
            }
        } catch (RuntimeException | LinkageError e) {
            p = Probe.unavailable(key, "probe failed: " + e, e);
        } finally {
            asking = outer;
            probing.remove(key);
        }
        probes.put(key, p);
        return p;
    }

    private static boolean declares(TransportProvider p, String name) {
        for (String d : p.dependsOn()) {
            if (d.equalsIgnoreCase(name)) return true;
        }
        return false;
    }

    @Override
    public Settings settings() {
        return settings;
    }

    @Override
    public Probe self() {
        return self;
    }

    @Override
    public synchronized Transport open(String name) {
        String key = name.toLowerCase(Locale.ROOT);
        TransportProvider provider = providers.get(key);
        Probe p = probe(key);
        if (provider == null || !p.isAvailable()) {
            throw new FerryException("cannot open backend " + key + ": " + p.reason(), p.unavailabilityCause());
        }
        Probe outer = self;
        TransportProvider outerAsking = asking;
        self = p;
        asking = provider;
        try {
            Transport c = provider.open(this);
            opened.add(provider);
            return c;
        } finally {
            self = outer;
            asking = outerAsking;
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
