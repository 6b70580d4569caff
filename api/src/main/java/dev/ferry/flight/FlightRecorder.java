// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.FerrySettings;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidSettingException;
import dev.ferry.Settings;
import dev.ferry.spi.MpiLifecycle;
import dev.ferry.spi.Transport;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ferry's flight recorder: for every communicator the last {@code ferry.flight.ring} operations
 * of this rank ({@link OperationRing}), kept always; a JFR event per call while a recording asks
 * for Ferry's events ({@code dev.ferry.Collective}, {@code dev.ferry.PointToPoint},
 * {@code dev.ferry.Wait}); and, on a watchdog timeout, an uncaught exception, an exit in the
 * middle of a call, SIGUSR1 or {@code ferry doctor --hang}, a dump of every rank's rings into
 * {@code ferry.flight.dir} and a {@link HangReport} built by rank 0 ({@link DumpCoordinator}).
 *
 * <p>{@code ferry.flight.ring=0} turns all of it off: the call tracker then skips the recorder
 * at a test of a constant.
 */
public final class FlightRecorder {
    private static final int RING = ringSize(lenientRing());
    /** Whether the recorder is on ({@code ferry.flight.ring} above 0); read once, so that a call pays nothing when it is off. */
    public static final boolean ON = RING > 0;

    private static final AtomicInteger OPENED = new AtomicInteger();
    private static final List<OperationRing> RINGS = new ArrayList<>(); // guarded by itself
    private static volatile DumpCoordinator coordinator;

    private FlightRecorder() {
    }

    private static int lenientRing() {
        try {
            return Settings.process().get(FerrySettings.FLIGHT_RING);
        } catch (InvalidSettingException e) {
            return FerrySettings.FLIGHT_RING.defaultValue(); // Ferry.open() reports the bad value (checkSettings)
        }
    }

    /** The ring's length: {@code n} rounded up to a power of two (at most 2^20), 0 for 0. */
    static int ringSize(int n) {
        return n <= 1 ? Math.max(n, 0) : Integer.highestOneBit(Math.min(n, 1 << 20) - 1) << 1;
    }

    /** Reads the recorder's settings: a bad value is an {@link InvalidSettingException} (from {@code Ferry.open()}, before MPI starts). */
    public static void checkSettings() {
        Settings.process().get(FerrySettings.FLIGHT_RING);
        Settings.process().get(FerrySettings.FLIGHT_DIR);
    }

    /**
     * The ring of a communicator being constructed, named as every rank names it (see
     * {@link OperationRing}); null when the recorder is off.
     */
    public static OperationRing register(Communicator c) {
        if (!ON) {
            return null;
        }
        CurrentCall making = CurrentCall.inProgress();
        String id, origin;
        if (making != null && making.ring != null) {
            OperationRing parent = making.ring;
            long n = making.collective >= 0 ? making.collective : making.seq;
            String sub = making.made++ == 0 ? "" : "+" + (making.made - 1);
            boolean split = making.op.equals("split");
            id = parent.id() + "." + n + (split ? "c" + making.peer : "") + sub;
            origin = making.op + " #" + n + " of " + parent.id() + (split ? " (color " + making.peer + ")" : "");
        } else {
            id = Integer.toString(OPENED.getAndIncrement());
            origin = "opened";
        }
        OperationRing r = new OperationRing(id, origin, c, RING);
        synchronized (RINGS) {
            RINGS.removeIf(OperationRing::gone);
            RINGS.add(r);
        }
        return r;
    }

    /** The rings of the communicators open now, in the order they were made. */
    static List<OperationRing> rings() {
        synchronized (RINGS) {
            return new ArrayList<>(RINGS);
        }
    }

    /**
     * Starts the dumps of this process over the world communicator's transport: the ranks agree
     * on a job name (rank 0's start time and process id, one broadcast), and a daemon thread
     * watches for dump requests. Collective; once per process (later calls do nothing, on every rank alike).
     */
    public static synchronized void start(Transport world) {
        if (!ON || coordinator != null) {
            return;
        }
        String job;
        try (HostBuffer b = HostBuffer.allocate(16)) {
            if (world.rank() == 0) {
                b.segment().set(ValueLayout.JAVA_LONG, 0, System.currentTimeMillis());
                b.segment().set(ValueLayout.JAVA_LONG, 8, ProcessHandle.current().pid());
            }
            world.broadcast(b, 2, DataType.LONG, 0);
            long millis = b.segment().get(ValueLayout.JAVA_LONG, 0);
            long pid = b.segment().get(ValueLayout.JAVA_LONG, 8);
            job = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneId.systemDefault()).format(Instant.ofEpochMilli(millis)) + "-" + pid;
        }
        DumpCoordinator c = new DumpCoordinator(Path.of(Settings.process().get(FerrySettings.FLIGHT_DIR)), job, world.rank(), world.size());
        c.start();
        coordinator = c;
    }

    /** World rank of this process for events and dumps, or -1 before MPI. */
    static int worldRank() {
        DumpCoordinator c = coordinator;
        return c != null ? c.rank() : MpiLifecycle.worldRank();
    }

    /**
     * Writes this rank's dump now for {@code reason}, asks the other ranks for theirs, and on rank 0
     * builds the hang report; with {@code abortFollows} a rank other than 0 waits (a few seconds at
     * most) for rank 0's report before returning, because the job is about to be aborted. Never
     * throws: a dump that cannot be written is reported on stderr.
     */
    public static void dump(String reason, boolean abortFollows) {
        dump(reason, abortFollows, false);
    }

    /**
     * As {@link #dump}, from a JVM that exits while a thread is inside a Ferry call (a launcher
     * ending the job after a rank was lost, System.exit): the dump says that this rank is gone.
     */
    public static void dumpAtExit(String reason) {
        dump(reason, false, true);
    }

    private static void dump(String reason, boolean abortFollows, boolean exiting) {
        if (!ON) {
            return;
        }
        try {
            DumpCoordinator c = coordinator;
            if (c == null) {
                c = DumpCoordinator.alone(Path.of(dirLeniently()), MpiLifecycle.worldRank());
            }
            c.dumpNow(reason, abortFollows, exiting, false);
        } catch (RuntimeException | Error e) {
            MpiLifecycle.reportFault("ferry: rank " + MpiLifecycle.worldRank() + ": the flight recorder could not write its dump: " + e);
        }
    }

    private static String dirLeniently() {
        try {
            return Settings.process().get(FerrySettings.FLIGHT_DIR);
        } catch (InvalidSettingException e) {
            return FerrySettings.FLIGHT_DIR.defaultValue();
        }
    }
}
