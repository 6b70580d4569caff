// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.reliability.ranks.GenericContract;
import dev.ferry.reliability.ranks.HostIdentity;
import dev.ferry.testing.MpiJob;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The conformance suite across two "hosts" made of network namespaces on this machine
 * ({@code scripts/netns-hosts.sh}), per (backend, launcher) pair: the launcher runs in the first
 * host and starts the second host's ranks through {@code scripts/netns-agent} instead of ssh, and
 * the ranks talk over TCP on the namespaces' veth interfaces (Open MPI: {@code --mca btl tcp,self},
 * {@code btl_tcp_if_include}/{@code oob_tcp_if_include fe0}; Hydra: {@code -iface fe0}). Checked: the
 * ranks report two network namespaces and two host names (none the test JVM's), the suite passes,
 * and the bytes sent through each host's fe0 grew by more than the suite's largest message.
 *
 * <p>Also {@code ./ferry run --hostfile} across the two hosts, for each launcher family: every
 * {@code FERRY_*} variable of the caller reaches the rank on the other host, whose launch agent
 * starts it with a login's environment as ssh would ({@code FERRY_NETNS_AGENT_ENV=ssh}), so only
 * what the launcher forwards gets there; and both ranks run in the caller's directory with the
 * caller's class path.
 *
 * <p>Runs when {@code -Dferry.test.multihost=true}, or by default when {@code netns-hosts.sh check}
 * passes (root, iproute2, veth and bridge devices); otherwise skipped with the reason. The hosts are
 * removed after the tests, also when they fail (and at JVM exit).
 */
class MultiHostIT {
    /** A known defect of MPICH 4.0.2, not of Ferry: a job between namespace hosts reports it as a skipped MPI_Finalize with this reason. */
    static final String MPICH_UCX_FINALIZE_HANG = "MPICH 4.0.2 ch4:ucx over TCP between namespace hosts: in MPI_Finalize one rank's "
            + "UCX endpoint close waits for a peer that is already in the PMI barrier (docs/reliability.md)";

    static final int HOSTS = 2;
    static final Path REPO = Path.of(System.getProperty("ferry.test.repository", "..")).toAbsolutePath().normalize();
    static final Path SCRIPT = REPO.resolve("scripts/netns-hosts.sh");
    static final Path AGENT = REPO.resolve("scripts/netns-agent");
    static final String PREFIX = "fy" + ProcessHandle.current().pid() % 100_000;

    static String skipReason;
    static boolean up;

    record Ran(int rc, String out) {
    }

    static Ran sh(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(SCRIPT.toString()));
        cmd.addAll(Arrays.asList(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new Ran(-1, out + "\n(timed out)");
        }
        return new Ran(p.exitValue(), out);
    }

    @BeforeAll
    static void makeHosts() throws Exception {
        String mode = System.getProperty("ferry.test.multihost", "auto").trim().toLowerCase(Locale.ROOT);
        if (mode.equals("false")) {
            skipReason = "-Dferry.test.multihost=false";
            return;
        }
        Ran check = sh("check");
        if (check.rc() != 0) {
            if (mode.equals("true")) fail("-Dferry.test.multihost=true but this machine cannot make network-namespace hosts: " + check.out().trim());
            skipReason = "network-namespace hosts unavailable here (" + check.out().trim() + "); -Dferry.test.multihost=true makes this a failure";
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(MultiHostIT::removeHostsQuietly, "netns-hosts-down"));
        up = true; // from here on, tear down even if "up" fails half-way
        Ran r = sh("--prefix", PREFIX, "up", Integer.toString(HOSTS));
        System.out.println("[ferry-hosts] " + SCRIPT + " --prefix " + PREFIX + " up " + HOSTS + ":\n" + r.out().trim());
        if (r.rc() != 0) fail("netns-hosts.sh up failed:\n" + r.out());
    }

    @AfterAll
    static void removeHosts() throws Exception {
        if (up) {
            Ran r = sh("--prefix", PREFIX, "down");
            up = false;
            assertEquals(0, r.rc(), () -> "netns-hosts.sh down failed:\n" + r.out());
        }
    }

    private static void removeHostsQuietly() {
        try {
            if (up) sh("--prefix", PREFIX, "down");
        } catch (Exception e) {
            System.err.println("netns-hosts.sh down: " + e);
        }
    }

    static long txBytes(int host) throws Exception {
        Ran r = sh("--prefix", PREFIX, "exec", PREFIX + "-h" + host, "cat", "/sys/class/net/fe0/statistics/tx_bytes");
        if (r.rc() != 0) fail("cannot read fe0's counters in host " + host + ":\n" + r.out());
        return Long.parseLong(r.out().trim());
    }

    static String rootNetns() throws IOException {
        return Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString().replaceAll("[^0-9]", "");
    }

    @TestFactory
    List<DynamicNode> conformanceAcrossHosts() throws Exception {
        List<DynamicNode> out = new ArrayList<>();
        for (Pair pair : Pair.selected()) {
            String why = skipReason != null ? skipReason : pair.unavailable().orElse(null);
            if (why != null) {
                out.add(DynamicContainer.dynamicContainer(pair.id(), Stream.of(DynamicTest.dynamicTest("across " + HOSTS + " hosts", () -> Assumptions.abort(why)))));
                continue;
            }
            out.add(DynamicContainer.dynamicContainer(pair.id(), run(pair)));
        }
        return out;
    }

    /** {@code ./ferry run} across the hosts: its FERRY_* variables reach the remote rank (each launcher family). */
    @TestFactory
    List<DynamicNode> ferryRunForwardsSettings() {
        List<DynamicNode> out = new ArrayList<>();
        for (MpiJob.Family family : MpiJob.Family.values()) {
            out.add(DynamicTest.dynamicTest("./ferry run --hostfile, " + family, () -> ferryRun(family)));
        }
        return out;
    }

    private void ferryRun(MpiJob.Family family) throws Exception {
        if (skipReason != null) Assumptions.abort(skipReason);
        if (!MpiJob.launcherInstalled(family)) Assumptions.abort(family + "'s launcher is not installed");
        boolean ompi = family == MpiJob.Family.OPEN_MPI;
        Path work = Files.createDirectories(Path.of(System.getProperty("ferry.test.reports", "target/ferry-ranks"))
                .resolve("ferry-run-" + (ompi ? "ompi" : "mpich")).toAbsolutePath());
        // FERRY_PREBUILT: this test JVM's java and jars, so that ./ferry neither sets up nor builds; its class
        // folders (this module's tests among them) are the caller's class path
        Path prebuilt = Files.createDirectories(work.resolve("prebuilt"));
        Path lib = Files.createDirectories(prebuilt.resolve("lib"));
        Files.deleteIfExists(prebuilt.resolve("jdk"));
        Files.createSymbolicLink(prebuilt.resolve("jdk"), Path.of(System.getProperty("java.home")));
        List<String> userClassPath = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path p = Path.of(e).toAbsolutePath();
            if (e.endsWith(".jar")) {
                Files.deleteIfExists(lib.resolve(p.getFileName()));
                Files.createSymbolicLink(lib.resolve(p.getFileName()), p);
            } else if (Files.isDirectory(p)) {
                userClassPath.add(p.toString());
            }
        }
        Path hostfile = work.resolve("hosts");
        Files.writeString(hostfile, PREFIX + "-h1" + (ompi ? " slots=1" : ":1") + "\n" + PREFIX + "-h2" + (ompi ? " slots=1" : ":1") + "\n");
        String marker = "arrived-" + ProcessHandle.current().pid();
        List<String> cmd = List.of(SCRIPT.toString(), "--prefix", PREFIX, "exec", PREFIX + "-h1",
                REPO.resolve("ferry").toString(), "run", "--mpi", ompi ? "ompi" : "mpich", "--hostfile", hostfile.toString(), "-np", "2",
                "-cp", String.join(":", userClassPath), "--", "dev.ferry.reliability.ranks.SettingsEcho");
        Path log = work.resolve("output.log");
        Files.writeString(log, String.join(" ", cmd) + "\n");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("FERRY_"));
        env.put("FERRY_PREBUILT", prebuilt.toString());
        env.put("FERRY_TEST_ECHO", marker);
        env.put("FERRY_LOG", "all");
        env.put("FERRY_NETNS_PREFIX", PREFIX);
        env.put("FERRY_NETNS_AGENT_ENV", "ssh");
        if (ompi) {
            env.put("OMPI_MCA_plm_rsh_agent", AGENT.toString());
            env.put("OMPI_MCA_oob_tcp_if_include", "fe0");
            env.put("OMPI_MCA_btl_tcp_if_include", "fe0");
        } else {
            env.put("HYDRA_LAUNCHER", "ssh");
            env.put("HYDRA_LAUNCHER_EXEC", AGENT.toString());
            env.put("HYDRA_IFACE", "fe0");
        }
        Process p = pb.start();
        boolean ended = p.waitFor(120, TimeUnit.SECONDS);
        if (!ended) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        String output = Files.readString(log);
        assertTrue(ended, () -> "./ferry run did not end within 120 s:\n" + output);
        assertEquals(0, p.exitValue(), () -> "./ferry run failed:\n" + output);
        List<String> lines = output.lines().filter(l -> l.startsWith("settings-echo: ")).toList();
        assertEquals(2, lines.size(), () -> "one line per rank:\n" + output);
        Set<String> hosts = new HashSet<>();
        for (String l : lines) {
            hosts.add(l.replaceAll(".*host=(\\S+).*", "$1"));
            assertTrue(l.contains(" dir=" + work + " "), () -> "the rank runs in the caller's directory " + work + ": " + l);
            assertTrue(l.contains(" FERRY_TEST_ECHO=" + marker + " "), () -> "FERRY_TEST_ECHO did not reach this rank: " + l + "\n" + output);
            assertTrue(l.endsWith(" ferry.log=all from FERRY_LOG"), () -> "the setting ferry.log did not reach this rank from FERRY_LOG: " + l);
        }
        assertEquals(Set.of(PREFIX + "-h1", PREFIX + "-h2"), hosts, () -> "one rank on each host:\n" + output);
    }

    private Stream<DynamicNode> run(Pair pair) throws Exception {
        Path hostfile = Files.createTempFile("ferry-hosts", ".txt");
        StringBuilder hf = new StringBuilder();
        for (int h = 1; h <= HOSTS; h++) {
            hf.append(PREFIX).append("-h").append(h).append(pair.family() == MpiJob.Family.OPEN_MPI ? " slots=2" : ":2").append('\n');
        }
        Files.writeString(hostfile, hf);
        MpiJob job = pair.job("multihost", 2 * HOSTS).classes(HostIdentity.class, GenericContract.class)
                .property("ferry.test.expectHosts", Integer.toString(HOSTS))
                .property("ferry.test.rootNetns", rootNetns())
                .env("FERRY_NETNS_PREFIX", PREFIX)
                .launcherPrefix(SCRIPT.toString(), "--prefix", PREFIX, "exec", PREFIX + "-h1");
        if (pair.family() == MpiJob.Family.OPEN_MPI) {
            // ob1 with the tcp BTL only: no shared memory and no UCX between the "hosts" (they share one kernel and /dev/shm)
            job.launcherOptions("--hostfile", hostfile.toString(), "--mca", "plm_rsh_agent", AGENT.toString(), "--mca", "pml", "ob1",
                    "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "fe0", "--mca", "oob_tcp_if_include", "fe0");
        } else {
            job.launcherOptions("-f", hostfile.toString(), "-launcher", "ssh", "-launcher-exec", AGENT.toString(), "-iface", "fe0");
            // MPICH's netmod between hosts: UCX (Debian's ch4:ucx) or libfabric (ch4:ofi) would otherwise find the other
            // "host" on this machine's shared memory (they compare boot ids, not host names): TCP on fe0 only
            job.env("UCX_TLS", "tcp,self").env("UCX_NET_DEVICES", "fe0").env("FI_PROVIDER", "tcp").env("FI_TCP_IFACE", "fe0");
            // a known defect of this MPI, not of Ferry: reported as a skipped MPI_Finalize with the reason, not as a pass
            job.property("ferry.test.knownFinalizeHang", MPICH_UCX_FINALIZE_HANG);
        }
        long[] before = new long[HOSTS + 1];
        for (int h = 1; h <= HOSTS; h++) before[h] = txBytes(h);
        DynamicContainer results = job.asTests();
        long[] sent = new long[HOSTS + 1];
        for (int h = 1; h <= HOSTS; h++) sent[h] = txBytes(h) - before[h];
        Files.deleteIfExists(hostfile);
        System.out.println("[ferry-hosts] " + pair + ": bytes sent through fe0 per host: " + Arrays.toString(Arrays.copyOfRange(sent, 1, sent.length)));
        DynamicTest traffic = DynamicTest.dynamicTest("every host sent its messages over TCP on fe0", () -> {
            for (int h = 1; h <= HOSTS; h++) {
                int host = h;
                assertTrue(sent[h] > (1 << 20), () -> "host " + host + " sent only " + sent[host] + " bytes through fe0");
            }
        });
        return Stream.of(results, traffic);
    }
}
