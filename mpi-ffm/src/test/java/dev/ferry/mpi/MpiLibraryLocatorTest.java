// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.FerryException;
import dev.ferry.mpi.MpiLibraryLocator.Candidate;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The search order of the MPI libraries of both families (the Open MPI ones first: later tests load libmpi.so.40). */
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.MethodName.class)
class MpiLibraryLocatorTest {

    private static List<Candidate> candidates(Map<String, String> settings, Map<String, String> env, Optional<Path> launcher) {
        return MpiLibraryLocator.candidates(dev.ferry.Settings.of(settings), env, launcher);
    }

    @Test
    void explicitFileIsTheOnlyCandidate() {
        List<Candidate> c = candidates(Map.of("ferry.mvapich.lib", "/x/libmpi.so.12"), Map.of("MPI_HOME", "/opt/y"), Optional.empty());
        assertEquals(1, c.size());
        assertEquals("/x/libmpi.so.12", c.get(0).target());
        assertTrue(c.get(0).explicit());
        assertEquals("-Dferry.mvapich.lib=/x/libmpi.so.12", c.get(0).how());
    }

    @Test
    void explicitMissingFileFailsWithoutTryingAnythingElse() {
        FerryException e = assertThrows(FerryException.class,
                () -> MpiLibraryLocator.locate(candidates(Map.of("ferry.mvapich.lib", "/nonexistent/libmpi.so.12"), Map.of(), Optional.empty()), false));
        assertTrue(e.getMessage().contains("/nonexistent/libmpi.so.12") && e.getMessage().contains("does not exist"), e.getMessage());
        assertTrue(e.getMessage().contains("FERRY_MVAPICH_LIB"), e.getMessage());
    }

    @Test
    void explicitDirectoryIsSearchedForBothNames(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("lib"));
        List<Candidate> c = candidates(Map.of("ferry.mvapich.lib", dir.toString()), Map.of(), Optional.empty());
        assertEquals(List.of(dir.resolve("libmpi.so.12").toString(), dir.resolve("libmpich.so.12").toString(),
                dir.resolve("lib/libmpi.so.12").toString(), dir.resolve("lib/libmpich.so.12").toString(),
                dir.resolve("libmpi.so.12").toString()), c.stream().map(Candidate::target).toList());
        FerryException e = assertThrows(FerryException.class, () -> MpiLibraryLocator.locate(c, false));
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
    }

    @Test
    void homesThenLauncherThenLoaderThenStandardPlaces() {
        List<Candidate> c = candidates(Map.of(), Map.of("MV2_HOME", "/opt/mv2", "MPI_HOME", "/opt/mpi"),
                Optional.of(Path.of("/opt/mpich-cuda/bin/hydra_pmi_proxy")));
        List<String> t = c.stream().map(Candidate::target).toList();
        int mpiHome = t.indexOf("/opt/mpi/lib/libmpi.so.12");
        int mv2Home = t.indexOf("/opt/mv2/lib/libmpi.so.12");
        int launcher = t.indexOf("/opt/mpich-cuda/lib/libmpi.so.12");
        int loader = t.indexOf("libmpi.so.12");
        int debian = t.indexOf("/usr/lib/x86_64-linux-gnu/libmpich.so.12");
        assertTrue(0 <= mpiHome && mpiHome < mv2Home && mv2Home < launcher && launcher < loader && loader < debian, t.toString());
        assertTrue(t.contains("/opt/mpi/lib64/libmpi.so.12"), t.toString());
        assertTrue(c.get(loader).byName());
        assertEquals("libmpich.so.12", t.get(loader + 1));
        assertEquals("MPI_HOME=/opt/mpi", c.get(mpiHome).how());
        assertTrue(c.get(launcher).how().contains("hydra_pmi_proxy"), c.get(launcher).how());
    }

    @Test
    void onlyLaunchersCountAsTheLaunchersInstallation() {
        assertTrue(MpiLibraryLocator.isLauncher(Path.of("/usr/bin/hydra_pmi_proxy")));
        assertTrue(MpiLibraryLocator.isLauncher(Path.of("/opt/mvapich2/bin/mpispawn")));
        assertTrue(MpiLibraryLocator.isLauncher(Path.of("/usr/bin/mpiexec.mpich")));
        assertTrue(!MpiLibraryLocator.isLauncher(Path.of("/usr/bin/timeout")));
        assertTrue(!MpiLibraryLocator.isLauncher(Path.of("/usr/bin/bash")));
    }

    @Test
    void aNonMpiLibraryIsRefused() {
        // libc is loadable but is no MPI: the search stops there with a message naming the setting
        Path libc = Path.of("/lib/x86_64-linux-gnu/libc.so.6");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(libc), "needs glibc at " + libc);
        FerryException e = assertThrows(FerryException.class,
                () -> MpiLibraryLocator.locate(candidates(Map.of("ferry.mvapich.lib", libc.toString()), Map.of(), Optional.empty()), false));
        assertTrue(e.getMessage().contains("not an MPI library") && e.getMessage().contains("-Dferry.mvapich.lib"), e.getMessage());
    }

    @Test
    void openMpisLibraryIsRefusedByName() {
        Path ompi = Path.of("/usr/lib/x86_64-linux-gnu/libmpi.so.40");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(ompi), "needs Open MPI at " + ompi);
        FerryException e = assertThrows(FerryException.class,
                () -> MpiLibraryLocator.locate(candidates(Map.of("ferry.mvapich.lib", ompi.toString()), Map.of(), Optional.empty()), false));
        assertTrue(e.getMessage().contains("is Open MPI") && e.getMessage().contains("backend ompi"), e.getMessage());
    }

    @Test
    void promotionToGlobalOnlyTouchesLoadedLibraries() {
        // libm is mapped into every JVM; a library that is not loaded stays unloaded (RTLD_NOLOAD)
        java.util.Optional<Path> libm = dev.ferry.spi.LoadedLibraries.find("libm.so");
        org.junit.jupiter.api.Assumptions.assumeTrue(libm.isPresent(), "libm is not mapped");
        assertTrue(MpiLibraryLocator.promoteToGlobal(libm.get()));
        assertTrue(!MpiLibraryLocator.promoteToGlobal(Path.of("/nonexistent/libnothing.so")));
        assertTrue(dev.ferry.spi.LoadedLibraries.find("libnothing").isEmpty());
    }

    @Test
    void definingFileNamesTheLibraryOfASymbol() {
        java.lang.foreign.MemorySegment strlen = java.lang.foreign.Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        Path f = MpiLibraryLocator.definingFile(strlen).orElseThrow();
        assertTrue(f.getFileName().toString().startsWith("libc"), f.toString());
    }

    // ---- Open MPI ----------------------------------------------------------------------------

    private static List<Candidate> ompi(Map<String, String> settings, Map<String, String> env, Optional<Path> launcher) {
        return MpiLibraryLocator.candidates(MpiFamily.OPEN_MPI, dev.ferry.Settings.of(settings), env, launcher);
    }

    @Test
    void aa_openMpiSettingIsTheOnlyCandidate() {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.ferry.spi.LoadedLibraries.find("libmpi.so.40").isEmpty(), "Open MPI is loaded here");
        List<Candidate> c = ompi(Map.of("ferry.ompi.lib", "/x/libmpi.so.40"), Map.of("OMPI_HOME", "/opt/y"), Optional.empty());
        assertEquals(1, c.size());
        assertEquals("-Dferry.ompi.lib=/x/libmpi.so.40", c.get(0).how());
        FerryException e = assertThrows(FerryException.class, () -> MpiLibraryLocator.locate(MpiFamily.OPEN_MPI, c, false));
        assertTrue(e.getMessage().contains("does not exist") && e.getMessage().contains("FERRY_OMPI_LIB"), e.getMessage());
    }

    @Test
    void ab_openMpiOrder_homeThenLauncherThenLoaderThenOmpiInfoThenUsualPlaces() {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.ferry.spi.LoadedLibraries.find("libmpi.so.40").isEmpty(), "Open MPI is loaded here");
        List<Candidate> c = ompi(Map.of(), Map.of("OMPI_HOME", "/opt/ompi5"), Optional.of(Path.of("/opt/ompi6/bin/prted")));
        List<String> targets = c.stream().map(Candidate::target).toList();
        assertEquals("/opt/ompi5/lib/libmpi.so.40", targets.get(0));
        int launcher = targets.indexOf("/opt/ompi6/lib/libmpi.so.40");
        int loader = targets.indexOf("libmpi.so.40");
        int info = targets.indexOf(MpiLibraryLocator.OMPI_INFO);
        int fixed = targets.indexOf("/usr/lib/x86_64-linux-gnu/libmpi.so.40");
        assertTrue(0 < launcher && launcher < loader && loader < info && info < fixed, targets.toString());
        assertTrue(MpiLibraryLocator.isLauncher(Path.of("/opt/ompi6/bin/prted")) && MpiLibraryLocator.isLauncher(Path.of("/usr/bin/orted")));
    }

    @Test
    void openMpiIsFoundAndAnotherLibraryIsRefusedForIt() {
        Path ompiLib = Path.of("/usr/lib/x86_64-linux-gnu/libmpi.so.40");
        Path mpich = Path.of("/lib/x86_64-linux-gnu/libc.so.6"); // not MPICH itself: loading it would make the MPICH tests find it loaded
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(ompiLib) && Files.isRegularFile(mpich), "needs Debian's Open MPI and glibc");
        FerryException e = assertThrows(FerryException.class,
                () -> MpiLibraryLocator.locate(MpiFamily.OPEN_MPI, List.of(new Candidate(mpich.toString(), false, "a test", true)), false));
        assertTrue(e.getMessage().contains("is not Open MPI"), e.getMessage());
        MpiLibraryLocator.Located l = MpiLibraryLocator.locate(MpiFamily.OPEN_MPI, List.of(new Candidate(ompiLib.toString(), false, "a test", true)), false);
        assertEquals(MpiFamily.OPEN_MPI, l.family());
        MpiAbi abi = MpiAbi.openMpi(l.lookup());
        assertEquals(l.lookup().find("ompi_mpi_comm_world").orElseThrow().address(), abi.commWorld);
        assertEquals(8, abi.handleBytes);
        assertEquals(24, abi.statusBytes);
    }
}
