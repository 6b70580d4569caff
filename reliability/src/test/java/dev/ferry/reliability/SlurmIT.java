// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.examples.Demo;
import dev.ferry.reliability.ranks.GenericBadInputMatrix;
import dev.ferry.reliability.ranks.GenericContract;
import dev.ferry.reliability.ranks.HostIdentity;
import dev.ferry.testing.MpiJob;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Ferry under Slurm's {@code srun}, on private Slurm clusters that {@code scripts/slurm-cluster.sh}
 * starts on this machine: one node (slurmctld and slurmd in this machine's own network namespace)
 * and two nodes (one slurmd per network-namespace "host", as {@link MultiHostIT}; each with its own
 * /tmp and /dev/shm). On each: {@code dev.ferry.tools.Doctor --open} (launch detection, backend
 * choice, node-local rank by MPI's shared-memory split), the conformance suite for every
 * (backend, family) pair (on one node with the bad-input matrix), and the demo, with
 * {@code srun --mpi=pmix} for the Open MPI family and
 * {@code srun --mpi=pmi2} for the MPICH family. Open MPI's libmpi_java.so is found without mpirun's
 * help (no -Djava.library.path is given).
 *
 * <p>{@code -Dferry.test.slurm=true|false|auto}. Auto runs when {@code slurm-cluster.sh check}
 * passes (root, Slurm and munge installed: scripts/setup installs them as root on Debian/Ubuntu) and
 * skips with the reason otherwise; but when scripts/setup recorded that it made Slurm available
 * ({@code SLURM=1} in .ferry/env), a failing check or cluster is a failure, not a skip. The
 * two-node cluster also needs network-namespace hosts ({@code netns-hosts.sh check}). Clusters are
 * torn down after the tests, also when they fail (and at JVM exit).
 */
class SlurmIT {
    static final Path REPO = MultiHostIT.REPO;
    static final Path SCRIPT = REPO.resolve("scripts/slurm-cluster.sh");
    static final String ID = Long.toString(ProcessHandle.current().pid() % 100_000);
    static final Cluster ONE = new Cluster("one node", "fl" + ID, 1);
    static final Cluster TWO = new Cluster("two nodes", "fs" + ID, 2);

    /** A cluster: its prefix, its nodes; why it is not there (skip), or that it is up. */
    static final class Cluster {
        final String name;
        final String prefix;
        final int nodes;
        String skip;
        boolean up;

        Cluster(String name, String prefix, int nodes) {
            this.name = name;
            this.prefix = prefix;
            this.nodes = nodes;
        }
    }

    record Ran(int rc, String out) {
    }

    static Ran sh(Path script, long seconds, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(script.toString()));
        cmd.addAll(Arrays.asList(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new Ran(-1, out + "\n(timed out)");
        }
        return new Ran(p.exitValue(), out);
    }

    /** Whether scripts/setup made Slurm available here (then it must work). */
    static boolean setupInstalledSlurm() {
        try {
            return Files.readAllLines(REPO.resolve(".ferry/env")).contains("SLURM=1");
        } catch (IOException e) {
            return false;
        }
    }

    @BeforeAll
    static void startClusters() throws Exception {
        String mode = System.getProperty("ferry.test.slurm", "auto").trim().toLowerCase(Locale.ROOT);
        if (mode.equals("false")) {
            ONE.skip = TWO.skip = "-Dferry.test.slurm=false";
            return;
        }
        boolean required = mode.equals("true") || setupInstalledSlurm();
        Ran check = sh(SCRIPT, 60, "check");
        if (check.rc() != 0) {
            if (required) fail("Slurm must work here (" + (mode.equals("true") ? "-Dferry.test.slurm=true" : "scripts/setup installed it: SLURM=1 in .ferry/env")
                    + ") but slurm-cluster.sh check fails: " + check.out().trim());
            ONE.skip = TWO.skip = "no Slurm here (" + check.out().trim() + "); scripts/setup installs it as root; -Dferry.test.slurm=true makes this a failure";
            return;
        }
        Ran netns = sh(REPO.resolve("scripts/netns-hosts.sh"), 60, "check");
        if (netns.rc() != 0) {
            TWO.skip = "network-namespace hosts unavailable here (" + netns.out().trim() + ")";
        }
        // the ranks use the mpi.jar that scripts/setup built for this checkout (it finds libmpi_java.so without mpirun's
        // help), not whichever one the shared ~/.m2 holds
        Path setupJar = REPO.resolve(".ferry/mpi/mpi.jar");
        if (System.getProperty("ferry.test.mpijar") == null && Files.isRegularFile(setupJar)) {
            System.setProperty("ferry.test.mpijar", setupJar.toString());
            setMpiJar = true;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(SlurmIT::stopQuietly, "slurm-cluster-down"));
        for (Cluster c : List.of(ONE, TWO)) {
            if (c.skip != null) continue;
            c.up = true; // from here on, tear down even if "up" fails half-way
            Ran r = sh(SCRIPT, 180, "--prefix", c.prefix, "up", c.nodes == 1 ? "--local" : "--netns", Integer.toString(c.nodes));
            System.out.println("[ferry-slurm] " + SCRIPT + " --prefix " + c.prefix + " up (" + c.name + "):\n" + r.out().trim());
            if (r.rc() != 0) fail("slurm-cluster.sh up (" + c.name + ") failed:\n" + r.out());
        }
    }

    static boolean setMpiJar;

    @AfterAll
    static void stopClusters() throws Exception {
        if (setMpiJar) System.clearProperty("ferry.test.mpijar");
        for (Cluster c : List.of(ONE, TWO)) {
            if (!c.up) continue;
            Ran r = sh(SCRIPT, 120, "--prefix", c.prefix, "down");
            c.up = false;
            assertEquals(0, r.rc(), () -> "slurm-cluster.sh down failed:\n" + r.out());
        }
    }

    private static void stopQuietly() {
        for (Cluster c : List.of(ONE, TWO)) {
            try {
                if (c.up) sh(SCRIPT, 120, "--prefix", c.prefix, "down");
            } catch (Exception e) {
                System.err.println("slurm-cluster.sh down: " + e);
            }
        }
    }

    /** srun --mpi= for a family. */
    static String pmi(MpiJob.Family family) {
        return family == MpiJob.Family.OPEN_MPI ? "pmix" : "pmi2";
    }

    /** A job of {@code np} ranks under srun on {@code c}; two nodes: half the ranks on each, TCP on fe0 only. */
    static MpiJob srun(MpiJob job, Cluster c, MpiJob.Family family) {
        return srun(job, c, family, 2);
    }

    static MpiJob srun(MpiJob job, Cluster c, MpiJob.Family family, int perNode) {
        job.launcherCommand(SCRIPT.toString(), "--prefix", c.prefix, "srun").launcherOptions("--mpi=" + pmi(family), "--kill-on-bad-exit=1");
        if (c.nodes > 1) {
            job.launcherOptions("-N", Integer.toString(c.nodes), "--ntasks-per-node=" + perNode);
            if (family == MpiJob.Family.OPEN_MPI) {
                // as MultiHostIT: ob1 over TCP on the namespaces' interface only
                job.env("OMPI_MCA_pml", "ob1").env("OMPI_MCA_btl", "tcp,self").env("OMPI_MCA_btl_tcp_if_include", "fe0")
                        .env("OMPI_MCA_oob_tcp_if_include", "fe0");
            } else {
                job.env("UCX_TLS", "tcp,self").env("UCX_NET_DEVICES", "fe0").env("FI_PROVIDER", "tcp").env("FI_TCP_IFACE", "fe0");
                // the shutdown defect MultiHostIT reports under mpiexec happens under srun too (seen once in 3 CI runs)
                job.property("ferry.test.knownFinalizeHang", MultiHostIT.MPICH_UCX_FINALIZE_HANG);
            }
        }
        return job;
    }

    static String rootNetns() {
        try {
            return MultiHostIT.rootNetns();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static int np(Cluster c) {
        return 2 * c.nodes;
    }

    @TestFactory
    List<DynamicNode> underSrun() {
        List<DynamicNode> out = new ArrayList<>();
        for (Cluster c : List.of(ONE, TWO)) {
            List<DynamicNode> tests = new ArrayList<>();
            for (MpiJob.Family family : MpiJob.Family.values()) {
                tests.add(DynamicTest.dynamicTest("doctor --open (srun --mpi=" + pmi(family) + ")", () -> doctor(c, family)));
            }
            for (Pair pair : Pair.selected()) {
                String why = c.skip != null ? c.skip : pair.unavailable().orElse(null);
                if (why != null) {
                    tests.add(DynamicContainer.dynamicContainer(pair.id(), Stream.of(DynamicTest.dynamicTest("conformance", () -> Assumptions.abort(why)))));
                    continue;
                }
                // where the ranks run (HostIdentity: as many network namespaces and host names as nodes), then the suite
                // (two nodes: one rank per node, to keep the run short on small CI machines; doctor and demo run two per node)
                // a backend unavailable in the ranks fails here (Pair.job skips): its launcher is installed, so under srun it must work
                // one node: the bad-input matrix too (the mistakes of every operation, under srun as under mpirun)
                MpiJob job = (c.nodes > 1 ? pair.job("slurm-" + c.nodes + "n", 2).classes(HostIdentity.class, GenericContract.class)
                        : pair.job("slurm-" + c.nodes + "n", 2).classes(HostIdentity.class, GenericContract.class, GenericBadInputMatrix.class)
                                .property("ferry.timeout", "60").property("ferry.test.perTestTimeout", "600"))
                        .property("ferry.test.skipUnavailable", "false").property("ferry.test.expectHosts", Integer.toString(c.nodes));
                if (c.nodes > 1) job.property("ferry.test.rootNetns", rootNetns());
                tests.add(DynamicContainer.dynamicContainer(pair.id() + " (srun --mpi=" + pmi(pair.family()) + ")",
                        Stream.of(srun(job, c, pair.family(), 1).asTests())));
            }
            for (MpiJob.Family family : MpiJob.Family.values()) {
                tests.add(DynamicTest.dynamicTest("demo (srun --mpi=" + pmi(family) + ")", () -> demo(c, family)));
            }
            out.add(DynamicContainer.dynamicContainer("Slurm, " + c.name, tests.stream()));
        }
        return out;
    }

    /**
     * The flight recorder under srun on the one-node cluster ({@link FlightRecorderIT} has the
     * launchers of the families): a skipped collective and a lost rank with Open MPI
     * ({@code --mpi=pmix}) and MPICH ({@code --mpi=pmi2}), a send without a receive on staged.
     */
    @TestFactory
    List<DynamicNode> flightRecorderUnderSrun() {
        List<DynamicNode> tests = new ArrayList<>();
        for (Pair pair : Pair.selected()) {
            List<HangCase> cases = switch (pair.id()) {
                case "ompi/openmpi", "mvapich/mpich" -> List.of(HangCase.SKIP, HangCase.DEAD);
                case "staged/openmpi" -> List.of(HangCase.SEND);
                default -> List.of();
            };
            for (HangCase hang : cases) {
                String name = pair.id() + " (srun --mpi=" + pmi(pair.family()) + "): " + hang.title();
                tests.add(DynamicTest.dynamicTest(name, () -> {
                    skipIfDown(ONE);
                    pair.unavailable().ifPresent(reason -> dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason));
                    MpiJob job = srun(hang.configure(pair.job("slurm-flight-" + hang.id(), HangCase.RANKS), false), ONE, pair.family(), HangCase.RANKS);
                    hang.check(pair.id() + " under srun", pair.backend(), job, false);
                }));
            }
        }
        return List.of(DynamicContainer.dynamicContainer("Slurm, one node: flight recorder", tests.stream()));
    }

    private static void skipIfDown(Cluster c) {
        if (c.skip != null) Assumptions.abort(c.skip);
    }

    /** Doctor --open under srun: Slurm detected on every rank, the family's backend opened, MPI's node-local ranks agree. */
    void doctor(Cluster c, MpiJob.Family family) throws Exception {
        skipIfDown(c);
        int np = np(c);
        MpiJob.Result r = srun(MpiJob.of("slurm-doctor-" + pmi(family) + "-" + c.nodes + "n", family, np), c, family)
                .main("dev.ferry.tools.Doctor", "--open").timeout(60).run();
        String log = r.output();
        String backend = family == MpiJob.Family.OPEN_MPI ? "ompi" : "mvapich";
        String flavour = family == MpiJob.Family.OPEN_MPI ? "srun --mpi=pmix" : "srun --mpi=pmi2";
        for (int rank = 0; rank < np; rank++) {
            assertTrue(log.contains("launch: Slurm srun (" + flavour), "rank " + rank + ": launch not detected as Slurm:\n" + r.tail(60));
            assertTrue(log.contains("opened " + backend + ": rank " + rank + " of " + np), "rank " + rank + " did not open " + backend + ":\n" + r.tail(80));
        }
        assertFalse(log.contains("singleton"), "a rank thinks it is a singleton:\n" + log);
        // MPI's shared-memory split: each rank's node-local rank of its node's 2 ranks, as Slurm said
        Matcher m = Pattern.compile("node-local rank: (\\d+) of (\\d+) \\(MPI_Comm_split_type\\(MPI_COMM_TYPE_SHARED\\); ([^)]*)\\)").matcher(log);
        int found = 0;
        while (m.find()) {
            found++;
            assertEquals(Integer.toString(np / c.nodes), m.group(2), "ranks per node: " + m.group());
            assertEquals("the launcher agrees", m.group(3), m.group());
        }
        assertTrue(found >= np, "every rank reports the split (" + found + " found):\n" + r.tail(60));
        if (family == MpiJob.Family.OPEN_MPI) {
            // ompi's FFM path needs no libmpi_java.so; its Java-bindings path must have found it without mpirun
            assertTrue(log.contains("binding: ffm") || log.contains("libmpi_java: "),
                    "ompi opened on its FFM path, or found libmpi_java.so without mpirun:\n" + r.tail(60));
        }
        if (r.timedOut() && family == MpiJob.Family.MPICH && c.nodes > 1) {
            // every rank opened and reported the above; then MPICH 4.0.2's MPI_Finalize (ch4:ucx over TCP between
            // namespace hosts) sometimes never returns right after MPI_Init: seen under Hydra's mpiexec as well, so not srun's
            Assumptions.abort("every rank opened mvapich and reported its node-local rank, but MPI_Finalize hung (MPICH 4.0.2 ch4:ucx over TCP "
                    + "between namespace hosts, right after MPI_Init; happens under mpiexec.mpich too): " + r.tail(5));
        }
        assertFalse(r.timedOut(), "timed out:\n" + r.tail(60));
        assertEquals(0, r.exitCode(), "exit code; output:\n" + r.tail(60));
    }

    /** The demo (scatter-shift-gather, mandelbrot, ping-pong; ipc-exchange skips without CUDA) under srun. */
    void demo(Cluster c, MpiJob.Family family) throws Exception {
        skipIfDown(c);
        int np = 2; // two nodes: one rank per node
        Path outDir = Path.of(System.getProperty("ferry.test.reports", "target/ferry-ranks"), "slurm-demo-" + pmi(family) + "-" + c.nodes + "n-out").toAbsolutePath();
        MpiJob.Result r = srun(MpiJob.of("slurm-demo-" + pmi(family) + "-" + c.nodes + "n", family, np), c, family, 1)
                .main(Demo.class.getName(), "--out", outDir.toString(), "--size", "600x400", "--sizes", "8,64K", "--reps", "20")
                .timeout(90).run();
        String log = r.output();
        assertTrue(log.contains("Ferry demo: " + np + " ranks"), log);
        assertTrue(log.contains("ferry: backend " + (family == MpiJob.Family.OPEN_MPI ? "ompi" : "mvapich")), r.tail(60));
        assertTrue(log.contains("[ok] scatter-shift-gather: " + np + " ranks"), r.tail(60));
        assertTrue(log.contains("[ok] mandelbrot: "), r.tail(60));
        assertTrue(log.contains("[ok] ping-pong: "), r.tail(60));
        assertFalse(log.contains("[FAIL]"), log);
        assertTrue(Files.isRegularFile(outDir.resolve(dev.ferry.examples.Mandelbrot.FILE)), "the demo wrote its image to " + outDir);
        assertTrue(log.contains("ferry demo: ") && log.contains(", 0 failed on "), r.tail(20));
        if (r.timedOut() && family == MpiJob.Family.MPICH && c.nodes > 1) {
            Assumptions.abort("the demo passed on every rank, but MPI_Finalize hung (MPICH 4.0.2 ch4:ucx over TCP between namespace hosts; "
                    + "happens under mpiexec.mpich too, docs/reliability.md section 6): " + r.tail(5));
        }
        assertFalse(r.timedOut(), "timed out:\n" + r.tail(60));
        assertEquals(0, r.exitCode(), "exit code; output:\n" + r.tail(60));
    }
}
