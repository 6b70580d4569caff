// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.Transport;
import dev.ferry.spi.TransportProvider;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Backend selection over providers made here: the choice for {@code auto} and for a name, the
 * report of unknown, unavailable, failing, duplicate and unloadable providers, and the order and
 * limits of decorators' dependencies.
 */
class BackendSelectionTest {
    private static final Launch LAUNCH = new Launch(Launch.Family.OPEN_MPI, "test", 0, 2, 0);

    /** A provider whose probe is the given function; open returns a transport that only knows its backend name (one rank). */
    private static final class Fake implements TransportProvider {
        final String name;
        final List<String> deps;
        final Function<ProbeContext, Probe> probe;
        final List<String> log;
        int probes;

        Fake(String name, List<String> deps, List<String> log, Function<ProbeContext, Probe> probe) {
            this.name = name;
            this.deps = deps;
            this.log = log;
            this.probe = probe;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public List<String> dependsOn() {
            return deps;
        }

        @Override
        public Probe probe(ProbeContext context) {
            probes++;
            log.add("probe " + name);
            return probe.apply(context);
        }

        @Override
        public Transport open(OpenContext context) {
            log.add("open " + name);
            for (String d : deps) {
                context.open(d);
            }
            return (Transport) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Transport.class},
                    (p, m, a) -> m.getName().equals("backend") ? name : m.getReturnType() == int.class ? 1 : null);
        }
    }

    private static Probe up(String name, int priority) {
        return Probe.available(name, priority, EnumSet.of(Capability.HOST_BUFFERS), name + " is here", Map.of());
    }

    private static Probe down(String name) {
        return Probe.unavailable(name, name + " is missing", null);
    }

    private static BackendSelection of(TransportProvider... providers) {
        return new BackendSelection(List.of(providers), List.of(), LAUNCH, Settings.of(java.util.Map.of()));
    }

    @Test
    void autoChoosesTheAvailableProviderOfHighestPriority() {
        List<String> log = new ArrayList<>();
        BackendSelection s = of(new Fake("low", List.of(), log, c -> up("low", 10)), new Fake("high", List.of(), log, c -> up("high", 50)),
                new Fake("best", List.of(), log, c -> down("best")));
        SelectionReport r = s.report("auto", "default");
        assertEquals("high", r.chosen());
        assertTrue(r.why().startsWith("auto: highest priority"), r.why());
        assertEquals(3, r.probes().size());
        assertTrue(r.table().contains("best is missing"), r.table());
    }

    @Test
    void eachProviderIsProbedOnce() {
        List<String> log = new ArrayList<>();
        Fake a = new Fake("a", List.of(), log, c -> up("a", 1));
        BackendSelection s = of(a);
        s.report("auto", "default");
        s.report("a", "-Dferry.backend");
        s.probe("a");
        assertEquals(1, a.probes);
    }

    @Test
    void aRequestedNameIsChosenOnlyWhenAvailable() {
        List<String> log = new ArrayList<>();
        BackendSelection s = of(new Fake("a", List.of(), log, c -> up("a", 1)), new Fake("b", List.of(), log, c -> down("b")));
        assertEquals("a", s.report("a", "-Dferry.backend").chosen());
        SelectionReport r = s.report("b", "-Dferry.backend");
        assertNull(r.chosen());
        assertEquals("backend b is unavailable: b is missing", r.why());
        SelectionReport unknown = s.report("c", "FERRY_BACKEND");
        assertNull(unknown.chosen());
        assertEquals("unknown backend 'c'; known: auto, a, b", unknown.why());
    }

    @Test
    void nothingAvailableAndNoProvidersAreSaidSo() {
        List<String> log = new ArrayList<>();
        assertEquals("no provider is available here (reasons above)", of(new Fake("a", List.of(), log, c -> down("a"))).report("auto", "default").why());
        SelectionReport none = of().report("auto", "default");
        assertNull(none.chosen());
        assertTrue(none.why().startsWith("no TransportProvider found on the class path"), none.why());
    }

    @Test
    void aProbeThatThrowsOrReturnsNullIsAnUnavailableRowWithTheCause() {
        List<String> log = new ArrayList<>();
        IllegalStateException boom = new IllegalStateException("boom");
        BackendSelection s = of(new Fake("throws", List.of(), log, c -> { throw boom; }), new Fake("null", List.of(), log, c -> null),
                new Fake("ok", List.of(), log, c -> up("ok", 1)));
        SelectionReport r = s.report("auto", "default");
        assertEquals("ok", r.chosen());
        Probe t = r.probe("throws");
        assertEquals("probe failed: java.lang.IllegalStateException: boom", t.reason());
        assertEquals(boom, t.unavailabilityCause());
        assertTrue(r.probe("null").reason().contains("returned null"), r.probe("null").reason());
    }

    @Test
    void duplicateNamesAreReportedAndTheFirstIsUsed() {
        List<String> log = new ArrayList<>();
        Fake first = new Fake("same", List.of(), log, c -> up("same", 1));
        Fake second = new Fake("SAME", List.of(), log, c -> up("same", 99));
        SelectionReport r = of(first, second).report("auto", "default");
        assertEquals("same", r.chosen());
        assertEquals(1, first.probes);
        assertEquals(0, second.probes);
        Probe dup = r.probe("same (duplicate)");
        assertNotNull(dup, r.table());
        assertTrue(dup.reason().startsWith("two providers are named same"), dup.reason());
        assertTrue(r.table().contains("remove one of their jars"), r.table());
    }

    @Test
    void providersThatCannotLoadAreReported() {
        List<String> log = new ArrayList<>();
        BackendSelection s = new BackendSelection(List.of(new Fake("a", List.of(), log, c -> up("a", 1))),
                List.of(new java.util.ServiceConfigurationError("dev.example.Broken: NoClassDefFoundError")), LAUNCH, Settings.of(java.util.Map.of()));
        SelectionReport r = s.report("auto", "default");
        assertEquals("a", r.chosen());
        assertTrue(r.table().contains("dev.example.Broken"), r.table());
    }

    @Test
    void dependenciesAreProbedFirstAndOpenedThroughTheContext() {
        List<String> log = new ArrayList<>();
        // the decorator comes first on the class path; its dependency is probed before it anyway
        Fake decorator = new Fake("deco", List.of("inner"), log, c -> {
            Probe inner = c.probe("inner");
            return inner.isAvailable() ? up("deco", 60) : down("deco");
        });
        Fake inner = new Fake("inner", List.of(), log, c -> up("inner", 20));
        BackendSelection s = of(decorator, inner);
        SelectionReport r = s.report("auto", "default");
        assertEquals(List.of("probe inner", "probe deco"), log);
        assertEquals("deco", r.chosen());
        Communicator c = s.open(r);
        assertEquals("deco", c.backend());
        assertEquals(List.of("probe inner", "probe deco", "open deco", "open inner"), log);
    }

    @Test
    void aProviderMayNotAskAboutOneItDoesNotDeclare() {
        List<String> log = new ArrayList<>();
        Fake sneaky = new Fake("sneaky", List.of(), log, c -> c.probe("other"));
        Fake other = new Fake("other", List.of(), log, c -> up("other", 1));
        SelectionReport r = of(sneaky, other).report("auto", "default");
        Probe p = r.probe("sneaky");
        assertTrue(p.reason().contains("asked about backend other, which its dependsOn() [] does not name"), p.reason());
        assertEquals("other", r.chosen());
    }

    @Test
    void aProbeCycleEndsAsUnavailable() {
        List<String> log = new ArrayList<>();
        Fake a = new Fake("a", List.of("b"), log, c -> c.probe("b"));
        Fake b = new Fake("b", List.of("a"), log, c -> c.probe("a"));
        SelectionReport r = of(a, b).report("auto", "default");
        assertNull(r.chosen());
        assertTrue(r.table().contains("probe cycle through"), r.table());
    }

    @Test
    void openingAnUnavailableProviderIsAnExceptionWithTheReason() {
        List<String> log = new ArrayList<>();
        BackendSelection s = of(new Fake("a", List.of(), log, c -> down("a")));
        FerryException e = assertThrows(FerryException.class, () -> s.open("a"));
        assertEquals("cannot open backend a: a is missing", e.getMessage());
    }

    private static Probe cudaAware(String name) {
        return Probe.available(name, 100, EnumSet.of(Capability.HOST_BUFFERS, Capability.CUDA_DEVICE_BUFFERS, Capability.CUDA_AWARE_MPI,
                Capability.CUDA_AWARE_LIBRARY), name + " takes device buffers", Map.of());
    }

    private static Transport transportOf(Communicator c) {
        return ((dev.ferry.spi.CheckedCommunicator) c).transport();
    }

    @Test
    void everyBackendsWorldTransportGetsThePlannerAndOnlyTheWorld() {
        RecordingPlanning.PLANNED.clear();
        List<String> log = new ArrayList<>();
        BackendSelection host = of(new Fake("host", List.of(), log, c -> up("host", 20)));
        host.planning = new RecordingPlanning();
        Communicator h = host.open(host.report("auto", "default"));
        assertTrue(transportOf(h) instanceof RecordingPlanning.Planned, "a host-only backend's collectives are planned too");
        assertNotNull(host.decoration());
        // a decorator over a CUDA-aware MPI backend (as staged or nccl over ompi): its world is planned, not the inner transport it opens
        Fake inner = new Fake("mpi", List.of(), log, c -> cudaAware("mpi"));
        Fake deco = new Fake("deco", List.of("mpi"), log, c -> c.probe("mpi").isAvailable()
                ? Probe.available("deco", 110, EnumSet.of(Capability.HOST_BUFFERS, Capability.CUDA_DEVICE_BUFFERS, Capability.CUDA_AWARE_MPI,
                        Capability.CUDA_AWARE_LIBRARY), "deco", Map.of())
                : down("deco"));
        BackendSelection s = of(deco, inner);
        s.planning = new RecordingPlanning();
        Communicator c = s.open(s.report("auto", "default"));
        assertEquals("deco", c.backend(), "the communicator names the chosen backend");
        assertTrue(transportOf(c) instanceof RecordingPlanning.Planned);
        assertEquals(List.of("host", "deco"), RecordingPlanning.PLANNED, "one planner per world, over the chosen backend's transport");
    }
}
