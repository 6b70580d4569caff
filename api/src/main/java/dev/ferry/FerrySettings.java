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
            "who prints the line naming the backend and why: `rank0`, `all` ranks, or `quiet`");
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

    /** {@code ferry.deviceReductions}: who reduces device buffers under the MPI backends (ompi, mvapich). */
    public static final Setting<String> DEVICE_REDUCTIONS = Setting.of(MODULE, "ferry.deviceReductions", Setting.choice("auto", "gpu", "mpi"), "auto",
            "reduce, allReduce and reduce-scatter of device buffers under `ompi` and `mvapich` that the node-local IPC path does not "
                    + "carry: `gpu` moves the data with the MPI (device memory: allGather or gather of every input below 1 MiB per rank and 8 MiB in all, "
                    + "allToAll of blocks above and for reduce-scatter) and folds it on the GPU in rank order; `mpi` hands the reduction to "
                    + "the MPI (CUDA-aware MPIs reduce on the host); `auto`: `gpu` from 64 KiB per rank (reduce-scatter: 256 KiB sent "
                    + "per rank) when every rank's buffers are device memory, the measured crossover");

    /** {@code ferry.deviceCollectives}: who runs collectives on device buffers of one node's ranks under the MPI backends (ompi, mvapich). */
    public static final Setting<String> DEVICE_COLLECTIVES = Setting.of(MODULE, "ferry.deviceCollectives", Setting.choice("auto", "ipc", "mpi"), "auto",
            "collectives on device buffers under `ompi` and `mvapich` with a CUDA-aware MPI: `auto` runs them among ranks all on "
                    + "one node over CUDA IPC with reductions on the GPU (the `staged` backend's collectives, when ferry-backend-staged is "
                    + "on the class path) where every rank's buffers allow it, else hands them to the MPI; `ipc`: as `auto`, but such a "
                    + "call that cannot take the IPC path fails with UnsupportedBufferException (and opening fails without "
                    + "ferry-backend-staged); `mpi`: always the MPI");

    @Override
    public List<Setting<?>> settings() {
        return List.of(BACKEND, LOG, DEVICE, THREADS, MPI, MPI_LARGE_COUNT, MAX_PIECE_BYTES, ABORT_ON_UNCAUGHT, TIMEOUT, TIMEOUT_ACTION, TIMEOUT_DUMP,
                FLIGHT_RING, FLIGHT_DIR,
                DEVICE_REDUCTIONS, DEVICE_COLLECTIVES);
    }
}
