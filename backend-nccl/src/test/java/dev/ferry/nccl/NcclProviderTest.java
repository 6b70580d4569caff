// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Ferry;
import dev.ferry.FerryException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The probe's answers on this machine (no GPU) and on made-up findings. */
class NcclProviderTest {

    static Probe host(String name) {
        return Probe.available(name, 20, EnumSet.of(Capability.HOST_BUFFERS), name + " host buffers only", Map.of());
    }

    static Probe cudaAware(String name) {
        return Probe.available(name, 100, EnumSet.of(Capability.HOST_BUFFERS, Capability.CUDA_DEVICE_BUFFERS, Capability.CUDA_AWARE_MPI),
                name + " CUDA-aware", Map.of());
    }

    static Probe staged() {
        return Probe.available("staged", 60, EnumSet.of(Capability.HOST_BUFFERS, Capability.CUDA_DEVICE_BUFFERS), "staged over ompi", Map.of());
    }

    static Probe off(String name) {
        return Probe.unavailable(name, name + " is not here", null);
    }

    static Map<String, Probe> inners(Probe ompi, Probe mvapich, Probe staged) {
        Map<String, Probe> m = new LinkedHashMap<>();
        m.put("ompi", ompi);
        m.put("mvapich", mvapich);
        m.put("staged", staged);
        return m;
    }

    /** A probe context with made-up inner probes (this machine has no launcher here). */
    static ProbeContext context(Map<String, Probe> inners) {
        return new ProbeContext() {
            @Override
            public Launch launch() {
                return Launch.detect(Map.of("OMPI_COMM_WORLD_SIZE", "1", "OMPI_COMM_WORLD_RANK", "0"));
            }

            @Override
            public Probe probe(String provider) {
                return inners.getOrDefault(provider, off(provider));
            }

            @Override
            public dev.ferry.Settings settings() {
                return dev.ferry.Settings.process();
            }
        };
    }

    @Test
    void registeredForServiceLoaderAsNccl() {
        boolean found = false;
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class)) {
            found |= p.name().equals("nccl") && p instanceof NcclProvider;
        }
        assertTrue(found, "META-INF/services/dev.ferry.spi.TransportProvider lists NcclProvider");
        assertEquals(List.of("ompi", "mvapich", "staged"), new NcclProvider().dependsOn());
    }

    @Test
    void withoutACudaDriverItIsUnavailableAndSaysSo() {
        // this machine (and CI) has no GPU: the real probe, with the real library loaded from the wheel
        if (Cuda.isAvailable()) {
            throw new AssertionError("this test expects a machine without a CUDA driver; it found " + Cuda.describe());
        }
        Probe p = new NcclProvider().probe(context(inners(host("ompi"), off("mvapich"), off("staged"))));
        assertFalse(p.isAvailable(), p.toString());
        assertTrue(p.reason().startsWith("no CUDA here"), p.reason());
        assertTrue(p.reason().contains("libcuda.so.1"), "names what is missing: " + p.reason());
        assertTrue(p.details().get("library").contains("NCCL " + Nccl.version()), p.details().toString());
        assertTrue(p.details().get("environment").contains("Ferry sets no NCCL_* variable"), p.details().toString());
        assertTrue(p.details().containsKey("gpu placement"), p.details().toString());
    }

    @Test
    void withoutTheLibraryItIsUnavailableWithTheLocatorsReason() {
        Throwable lib = assertThrows(NcclException.class, () -> NcclLibraryLocator.locate(
                NcclLibraryLocator.candidates(dev.ferry.Settings.of(Map.of("ferry.nccl.lib", "/nonexistent/libnccl.so.2")), Map.of(),
                        java.util.Optional.empty())));
        assertTrue(lib.getMessage().contains("-Dferry.nccl.lib=/nonexistent/libnccl.so.2") && lib.getMessage().contains("does not exist"), lib.getMessage());
        Probe p = NcclProvider.decide(lib, null, "ompi", host("ompi"), inners(host("ompi"), off("mvapich"), off("staged")), Map.of());
        assertFalse(p.isAvailable());
        assertTrue(p.reason().startsWith("the NCCL library is unavailable: ") && p.reason().contains("does not exist"), p.reason());
        assertTrue(p.unavailabilityCause() == lib);
    }

    @Test
    void nothingFoundAnywhereListsThePlacesTriedAndHowToInstall() {
        NcclException e = assertThrows(NcclException.class, () -> NcclLibraryLocator.locate(
                List.of(new NcclLibraryLocator.Candidate("/nonexistent/a/libnccl.so.2", false, "x", false),
                        new NcclLibraryLocator.Candidate("libnccl-nonexistent.so.9", true, "the dynamic loader", false))));
        assertTrue(e.getMessage().contains("/nonexistent/a/libnccl.so.2") && e.getMessage().contains("scripts/install-nccl.sh")
                && e.getMessage().contains("nvidia-nccl-cu13"), e.getMessage());
    }

    @Test
    void aFileThatIsNotNcclIsAnError() {
        String libc = "/lib/x86_64-linux-gnu/libc.so.6";
        NcclException e = assertThrows(NcclException.class, () -> NcclLibraryLocator.locate(
                List.of(new NcclLibraryLocator.Candidate(libc, false, "a test", false))));
        assertTrue(e.getMessage().contains("exports no ncclGetVersion"), e.getMessage());
    }

    @Test
    void searchOrderSettingThenHomesThenLoaderThenWheelsThenSitePackages() {
        var c = NcclLibraryLocator.candidates(dev.ferry.Settings.process(),
                Map.of("NCCL_HOME", "/opt/nccl-x"), java.util.Optional.empty());
        assertEquals("/opt/nccl-x/lib/libnccl.so.2", c.get(0).target());
        int loader = -1, wheel = -1;
        for (int i = 0; i < c.size(); i++) {
            if (c.get(i).byName() && loader < 0) loader = i;
            if (c.get(i).how().contains("wheel folder") && wheel < 0) wheel = i;
        }
        assertTrue(loader > 0 && wheel > loader, "loader before the project's wheel: " + c);
        assertTrue(c.get(wheel).target().endsWith("nvidia/nccl/lib/libnccl.so.2"), c.get(wheel).target());
        var explicit = NcclLibraryLocator.candidates(dev.ferry.Settings.of(Map.of("ferry.nccl.lib", "/x/libnccl.so.2")), Map.of("NCCL_HOME", "/y"),
                java.util.Optional.empty());
        assertEquals(1, explicit.size(), "an explicit library is the only candidate: " + explicit);
        var mapped = NcclLibraryLocator.candidates(dev.ferry.Settings.of(Map.of("ferry.nccl.lib", "/x/libnccl.so.2")), Map.of(),
                java.util.Optional.of(Path.of("/already/libnccl.so.2")));
        assertEquals(1, mapped.size(), "a library already in the process wins over everything: " + mapped);
        assertEquals("/already/libnccl.so.2", mapped.get(0).target());
    }

    @Test
    void cudaMissingComesBeforeInnerMissing() {
        Probe p = NcclProvider.decide(null, new RuntimeException("no CUDA driver: libcuda.so.1 was not found"), null, null,
                inners(off("ompi"), off("mvapich"), off("staged")), Map.of());
        assertTrue(p.reason().startsWith("no CUDA here (no CUDA driver"), p.reason());
    }

    @Test
    void noInnerBackendIsAReasonListingEach() {
        Probe p = NcclProvider.decide(null, null, null, null, inners(off("ompi"), off("mvapich"), off("staged")), Map.of());
        assertFalse(p.isAvailable());
        assertTrue(p.reason().contains("ompi: ompi is not here") && p.reason().contains("staged: staged is not here"), p.reason());
    }

    @Test
    void availableBelowEveryOtherBackendWithTheInnersCapabilities() {
        Probe p = NcclProvider.decide(null, null, "ompi", cudaAware("ompi"), inners(cudaAware("ompi"), off("mvapich"), staged()), Map.of());
        assertTrue(p.isAvailable());
        assertEquals(NcclProvider.PRIORITY, p.priority());
        assertTrue(p.priority() < 20 && p.priority() < 60, "auto never picks it: every planner offers NCCL per call, whatever the backend");
        assertTrue(p.has(Capability.CUDA_DEVICE_BUFFERS) && p.has(Capability.CUDA_AWARE_MPI));
        assertTrue(p.reason().contains("NCCL " + Nccl.version()) && p.reason().contains("ompi for messages"), p.reason());
    }

    @Test
    void innerIsTheCudaAwareMpiElseStagedElseTheHostMpi() {
        assertEquals("ompi", NcclProvider.chooseInner("ompi", inners(cudaAware("ompi"), off("mvapich"), staged()), null));
        assertEquals("staged", NcclProvider.chooseInner("ompi", inners(host("ompi"), off("mvapich"), staged()), null));
        assertEquals("ompi", NcclProvider.chooseInner("ompi", inners(host("ompi"), off("mvapich"), off("staged")), null));
        assertEquals("mvapich", NcclProvider.chooseInner("mvapich", inners(off("ompi"), cudaAware("mvapich"), staged()), null));
        assertNull(NcclProvider.chooseInner("ompi", inners(off("ompi"), off("mvapich"), off("staged")), null));
        assertEquals("ompi", NcclProvider.chooseInner("ompi", inners(host("ompi"), off("mvapich"), staged()), "ompi"), "forced");
        FerryException e = assertThrows(FerryException.class, () -> NcclProvider.chooseInner("ompi", inners(host("ompi"), off("mvapich"), off("staged")), "staged"));
        assertTrue(e.getMessage().contains("staged is not here"), e.getMessage());
        assertThrows(FerryException.class, () -> NcclProvider.chooseInner("ompi", inners(host("ompi"), off("mvapich"), off("staged")), "gloo"));
    }

    @Test
    void inAFreshJvmWithoutTheLibraryTheProbeSaysWhyAndNothingCrashes() throws Exception {
        // the binding's static initializer runs once per JVM: a child JVM with -Dferry.nccl.lib pointing nowhere
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                "-Dferry.nccl.lib=/nonexistent/libnccl.so.2", ProbeMain.class.getName()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM did not finish");
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("available=false"), out);
        assertTrue(out.contains("reason=the NCCL library is unavailable: the NCCL library named by -Dferry.nccl.lib=/nonexistent/libnccl.so.2 does not exist"), out);
    }

    /** Prints the nccl probe's answer with made-up inner probes (run in a child JVM). */
    public static final class ProbeMain {
        public static void main(String[] args) {
            Probe p = new NcclProvider().probe(context(inners(host("ompi"), off("mvapich"), off("staged"))));
            System.out.println("available=" + p.isAvailable());
            System.out.println("reason=" + p.reason());
            System.out.println("details=" + p.details());
        }
    }
}
