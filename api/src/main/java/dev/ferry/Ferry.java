// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import java.util.Locale;

/**
 * Entry point: selects a transport backend and opens a communicator over all ranks.
 *
 * <pre>{@code
 * try (Communicator world = Ferry.open()) {
 *     HostBuffer buf = HostBuffer.allocate(1024);
 *     if (world.rank() == 0) world.send(buf, 256, DataType.INT, 1, 7);
 *     else if (world.rank() == 1) world.recv(buf, 256, DataType.INT, 0, 7);
 * }
 * }</pre>
 *
 * <p>Selection: {@code -Dferry.backend=auto|ompi|mvapich|staged|nccl} (environment {@code FERRY_BACKEND}
 * as fallback, {@code auto} by default). {@code auto} probes every provider and takes the
 * available one of highest priority: a CUDA-aware MPI that takes device buffers directly, then
 * {@code staged} where a CUDA driver is present, then the launched MPI for host buffers. A named
 * backend that is unknown or unavailable fails with {@link BackendUnavailableException}, whose
 * message is the {@link #report()} table.
 *
 * <p>Logging: through {@link System.Logger} (by default {@code java.util.logging}, INFO and above to
 * stderr; route it to another framework as usual). Rank 0 logs one short line at INFO naming the
 * backend and why ({@link SelectionReport#summary()}; {@code -Dferry.log=quiet} leaves it out,
 * {@code all} logs it on every rank); the whole reason and the table of every provider are logged
 * at DEBUG, on every rank. The logger names are the classes' names, under {@code dev.ferry}.
 *
 * <p>Every setting on the class path is read when a communicator is opened: a value that is not
 * accepted fails {@code open()} with {@link InvalidSettingException}, naming key, value and what
 * is accepted.
 *
 * <p>MPI is initialized by the first open and finalized at JVM exit or by {@link #shutdown()}.
 * If a thread ends with an uncaught exception, Ferry aborts the MPI job so that other ranks do
 * not wait forever for this one ({@code -Dferry.abortOnUncaught=false} turns that off).
 */
public final class Ferry {
    private static BackendSelection selection;
    private static SelectionReport lastReport;

    private Ferry() {
    }

    /** Opens a communicator over all ranks on the backend chosen by {@code ferry.backend} (default auto). */
    public static Communicator open() {
        String[] req = BackendSelection.requested(Settings.process());
        return open(req[0], req[1]);
    }

    /** Opens a communicator over all ranks on the named backend ({@code auto} selects). */
    public static Communicator open(String backend) {
        return open(backend.trim().toLowerCase(Locale.ROOT), "Ferry.open(\"" + backend + "\")");
    }

    private static synchronized Communicator open(String requested, String source) {
        dev.ferry.spi.ProcessEnvironment.prepareForCuda(); // before any backend may start the CUDA driver
        validateSettings();
        SelectionReport report = selection().report(requested, source);
        lastReport = report;
        if (report.chosen() == null) {
            throw new BackendUnavailableException("ferry: cannot open backend '" + requested + "': " + report.why(), report, null);
        }
        Communicator c = selection().open(report);
        log(report, selection().decoration(), c.rank());
        return c;
    }

    /** Probes every provider (without opening a communicator) and returns the table. */
    public static synchronized SelectionReport report() {
        validateSettings();
        String[] req = BackendSelection.requested(Settings.process());
        lastReport = selection().report(req[0], req[1]);
        return lastReport;
    }

    /**
     * Probes every provider (without opening a communicator) and returns the table for the named
     * backend ({@code auto} selects), whatever {@code ferry.backend} says.
     */
    public static synchronized SelectionReport report(String backend) {
        lastReport = selection().report(backend.trim().toLowerCase(Locale.ROOT), "Ferry.report(\"" + backend + "\")");
        return lastReport;
    }

    /** The report of the last {@link #open()} or {@link #report()}, or null. */
    public static synchronized SelectionReport lastReport() {
        return lastReport;
    }

    /** Finalizes MPI now (instead of at exit). No communicator may be used afterwards. */
    public static synchronized void shutdown() {
        if (selection != null) {
            selection.shutdown();
        }
    }

    /** Every setting on the class path, read once: a value not accepted is an {@link InvalidSettingException} here, on every rank alike. */
    private static void validateSettings() {
        Settings.process().validate(dev.ferry.spi.SettingsCatalog.all());
    }

    private static BackendSelection selection() {
        if (selection == null) {
            selection = BackendSelection.discover();
        }
        return selection;
    }

    private static final System.Logger LOG = System.getLogger(Ferry.class.getName());

    private static void log(SelectionReport report, String decoration, int rank) {
        String mode = Settings.process().get(FerrySettings.LOG);
        if (mode.equals("all") || (mode.equals("rank0") && rank == 0)) {
            // the decoration's first words name it; its setting and alternative are details
            int brief = decoration == null ? -1 : decoration.indexOf(" (");
            LOG.log(System.Logger.Level.INFO, report.summary() + (decoration == null ? "" : "; " + (brief < 0 ? decoration : decoration.substring(0, brief))));
        }
        LOG.log(System.Logger.Level.DEBUG, () -> "ferry: rank " + rank + ": backend " + report.chosen() + ": " + report.why()
                + (decoration == null ? "" : "; " + decoration) + System.lineSeparator() + report.table().stripTrailing());
    }
}
