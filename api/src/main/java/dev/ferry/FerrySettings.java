// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.List;
import java.util.Locale;

/**
 * The settings the api module declares (read through {@link Settings}); each backend module
 * declares its own in one class of its own ({@code OmpiSettings}, {@code StagedSettings}, ...).
 */
public final class FerrySettings implements SettingsCatalog {
    private static final String MODULE = "api";

    /** {@code ferry.backend}: which backend {@link Ferry#open()} opens. */
    public static final Setting<String> BACKEND = Setting.of(MODULE, "ferry.backend",
            new Setting.Parser<>("auto or a backend's name", s -> s.toLowerCase(Locale.ROOT)), "auto",
            "the backend `Ferry.open()` opens: `auto` (the available one of highest priority) or a backend's name");
    /** {@code ferry.log}: who prints the line naming the backend chosen. */
    public static final Setting<String> LOG = Setting.of(MODULE, "ferry.log", Setting.choice("rank0", "all", "quiet"), "rank0",
            "which ranks log the line naming the backend and why (INFO, logger `dev.ferry.Ferry`): `rank0`, `all` ranks, or `quiet` (none)");
    /** {@code ferry.device}: the CUDA device ordinal; unset: node-local rank modulo the device count. */
    public static final Setting<Integer> DEVICE = Setting.derived(MODULE, "ferry.device", Setting.INT,
            "node-local rank mod devices", "the CUDA device ordinal this rank uses");
    /** {@code ferry.threads}: the MPI thread level to ask for. */
    public static final Setting<ThreadLevel> THREADS = Setting.of(MODULE, "ferry.threads",
            new Setting.Parser<>("one of multiple, serialized, funneled, single", s -> {
                String v = s.toUpperCase(Locale.ROOT);
                return ThreadLevel.valueOf(v.startsWith("MPI_THREAD_") ? v.substring("MPI_THREAD_".length()) : v);
            }), ThreadLevel.MULTIPLE, "the MPI thread level to ask for: `multiple`, `serialized`, `funneled` or `single`");
    /** {@code ferry.mpi}: the MPI family of a singleton without launcher, or under a launcher that starts either. */
    public static final Setting<String> MPI = Setting.of(MODULE, "ferry.mpi", Setting.choice("ompi", "openmpi", "open-mpi", "mpich", "mvapich"), null,
            "the MPI family of a singleton without launcher, or under srun: `ompi` or `mpich`");
    /** {@code ferry.mpi.largeCount}: whether MPI-4 large-count calls are used where the library has them. */
    public static final Setting<String> MPI_LARGE_COUNT = Setting.of(MODULE, "ferry.mpi.largeCount", Setting.choice("auto", "true", "false"), "auto",
            "`auto`: use `MPI_Send_c` and friends where the library has them; `false`: derived datatypes");
    /** {@code ferry.maxPieceBytes}: the largest buffer handed to one int-count MPI call. */
    public static final Setting<Long> MAX_PIECE_BYTES = Setting.of(MODULE, "ferry.maxPieceBytes", Setting.BYTES, 1L << 30,
            "largest buffer handed to one int-count MPI call: point-to-point messages over it still travel as one MPI message "
                    + "(large-count calls or a derived datatype); broadcasts and reductions over it are split into pieces");
    /** {@code ferry.abortOnUncaught}: an uncaught exception aborts the MPI job. */
    public static final Setting<Boolean> ABORT_ON_UNCAUGHT = Setting.of(MODULE, "ferry.abortOnUncaught", Setting.BOOLEAN, true,
            "an uncaught exception aborts the MPI job instead of leaving the other ranks waiting");
    /** {@code ferry.timeout}: seconds after which a blocking call is reported (0: never). */
    public static final Setting<Double> TIMEOUT = Setting.of(MODULE, "ferry.timeout", Setting.SECONDS, 0.0,
            "seconds: a blocking call that takes longer is reported (operation, communicator, peer, tag) and the job aborted; 0: no watchdog");
    /** {@code ferry.timeout.action}: abort the job after a timeout, or only report. */
    public static final Setting<String> TIMEOUT_ACTION = Setting.of(MODULE, "ferry.timeout.action", Setting.choice("abort", "report"), "abort",
            "after `ferry.timeout`: `abort` the MPI job, or `report` only and keep waiting");
    /** {@code ferry.timeout.dump}: print every thread's stack after a timeout report. */
    public static final Setting<Boolean> TIMEOUT_DUMP = Setting.of(MODULE, "ferry.timeout.dump", Setting.BOOLEAN, false,
            "print every thread's stack after a timeout report");
    /** {@code ferry.flight.ring}: operations the flight recorder keeps per communicator; 0: no recorder. */
    public static final Setting<Integer> FLIGHT_RING = Setting.of(MODULE, "ferry.flight.ring",
            new Setting.Parser<>("a whole number, 0 or more", s -> {
                int n = Integer.parseInt(s);
                if (n < 0) throw new IllegalArgumentException();
                return n;
            }), 64,
            "the last operations the flight recorder keeps per communicator (rounded up to a power of two) for hang reports; "
                    + "0: no flight recorder (no ring, no JFR events, no dumps)");
    /** {@code ferry.flight.dir}: where ranks write their flight-recorder dumps and rank 0 its hang report. */
    public static final Setting<String> FLIGHT_DIR = Setting.of(MODULE, "ferry.flight.dir", Setting.STRING, "ferry-flight",
            "where every rank writes its flight-recorder dump (one folder per job, relative to the working directory) on a "
                    + "timeout, an uncaught exception, a lost rank or a request, and rank 0 the hang report");

    /** {@code ferry.matchReceives}: which non-blocking receives Ferry matches before the MPI library receives into them. */
    public static final Setting<String> MATCH_RECEIVES = Setting.of(MODULE, "ferry.matchReceives", Setting.choice("device", "all"), "device",
            "which `irecv` Ferry matches itself (probe, then receive of the whole message) before the MPI library receives into it, "
                    + "so that the library never truncates one: `device` (receives into device memory, whose truncation crashes Open MPI's "
                    + "CUDA path) or `all` (every receive: a truncated one never leaves its sender waiting in a rendezvous, at the cost of a "
                    + "probe per receive; the default under a CUDA-aware MPICH, whose GPU path aborts on a truncated receive of a message "
                    + "sent from device memory); blocking receives are always matched first");

    @Override
    public List<Setting<?>> settings() {
        return List.of(BACKEND, LOG, DEVICE, THREADS, MPI, MPI_LARGE_COUNT, MAX_PIECE_BYTES, ABORT_ON_UNCAUGHT, TIMEOUT, TIMEOUT_ACTION, TIMEOUT_DUMP,
                FLIGHT_RING, FLIGHT_DIR, MATCH_RECEIVES);
    }
}
