// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Communicator;
import dev.ferry.collectives.ipc.NodeIpc;
import dev.ferry.spi.CheckedCommunicator;
import java.util.List;
import java.util.Map;

/**
 * The measurement hook of the collectives planner: what a measurement tool (the bench) or a test
 * reads from or sets on a communicator's collectives, and nothing else. Public only so that such
 * tools can live outside this module; applications set {@code ferry.collectives} instead, and this
 * class may change with the tools that use it.
 */
public final class CollectivesDiagnostics {
    private CollectivesDiagnostics() {
    }

    /** The planner of {@code c}'s collectives; {@link IllegalArgumentException} when it has none. */
    public static Planner planner(Communicator c) {
        if (c instanceof CheckedCommunicator f && f.transport() instanceof PlannedTransport p) {
            return p.planner();
        }
        throw new IllegalArgumentException((c == null ? "null" : c.toString()) + " has no collectives planner");
    }

    /**
     * Runs {@code c}'s collectives on the algorithms {@code choice} names, written as
     * {@code ferry.collectives} ({@code NAME} or {@code op:NAME,...}; null: the planner's own choice
     * again), from the next call on. Call it on every rank alike.
     *
     * @throws dev.ferry.InvalidSettingException as the setting would, for a name or collective that does not fit
     */
    public static void force(Communicator c, String choice) {
        Map<String, String> parsed;
        try {
            parsed = choice == null ? null : CollectivesSettings.parseChoice(choice);
        } catch (IllegalArgumentException e) {
            throw new dev.ferry.InvalidSettingException(CollectivesSettings.COLLECTIVES.key(), choice, "diagnostics", CollectivesSettings.COLLECTIVES.parser().accepted());
        }
        planner(c).force(parsed, choice);
    }

    /**
     * Plans {@code c}'s collectives from {@code first}'s measurements ahead of the tables it had
     * (as {@code ferry.collectives.table} would), from the next call on. Call it on every rank alike.
     */
    public static void useTable(Communicator c, CostTable first) {
        planner(c).useTable(first);
    }

    /** The name of the algorithm that ran this thread's last collective, or null. */
    public static String lastAlgorithm() {
        return Planner.lastAlgorithm();
    }

    /** Forgets this thread's last algorithm ({@link #lastAlgorithm()} is null until the next collective it runs). */
    public static void forgetLastAlgorithm() {
        Planner.ranOnStream(null);
    }

    /** How many blocking collectives of {@code c} each algorithm ran so far, by name (those that ran any). */
    public static Map<String, Long> runs(Communicator c) {
        return planner(c).runs();
    }

    /** The names of the algorithms of {@code c}. */
    public static List<String> algorithms(Communicator c) {
        return planner(c).algorithms().stream().map(Algorithm::name).toList();
    }

    /**
     * A counter of the node's collectives in this process ({@code ipcCollectives}, {@code gpuReductions},
     * {@code shortAllReduces}, {@code ipcAgreements}, {@code ipcDeclinedAfterMapping}, {@code ipcRepeatedCalls} (calls on
     * the buffers of one of the last mapped calls, which skip the meeting after the mappings), {@code boardRounds}, {@code ipcEventWaits},
     * {@code chainReductions}, {@code hierarchicalReductions}, {@code gatheredReductions}); 0 when none ran.
     */
    public static long counter(String name) {
        NodeIpc n = NodeIpc.currentOrNull();
        return n == null ? 0 : n.counter(name);
    }

    /** Every counter of {@link #counter}, for reports. */
    public static Map<String, Long> counters() {
        NodeIpc n = NodeIpc.currentOrNull();
        return n == null ? Map.of() : n.counters();
    }

    private static IpcCollectives ipc(Communicator c) {
        Algorithm a = planner(c).byName("ipc");
        if (a == null) throw new IllegalArgumentException(c + " has no collectives over CUDA IPC");
        return IpcAlgorithms.engine(a);
    }

    /**
     * How the collectives over CUDA IPC of {@code c} end: on the ranks' interprocess events, or with a
     * stream synchronize and a barrier (the default). Call it on every rank alike.
     */
    public static void endOnEvents(Communicator c, boolean on) {
        ipc(c).offerEvents(on);
    }

    /** Whether the collectives over CUDA IPC of {@code c} found every peer reachable (null before the first call that maps). */
    public static Boolean ipcVerified(Communicator c) {
        return ipc(c).verified();
    }
}
