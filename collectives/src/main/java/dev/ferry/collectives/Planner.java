// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.InvalidSettingException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The one place that decides how a collective moves, for one communicator: among the algorithms
 * that carry the call and fit its {@link Shape} and the communicator's {@link Topology}, the one
 * the {@link CostTable} times fastest (or, where no table applies, the first by
 * {@link Algorithm#preference()}); {@code ferry.collectives} names one instead.
 *
 * <p>A plan is the chosen algorithm followed by the cheaper-to-agree fallbacks up to the first that
 * takes any buffers ({@link Algorithm.Agreement#NONE}): where the chosen one needs every rank's
 * buffers to suit it and some rank's do not (MPI lets ranks pass different kinds of memory), every
 * rank moves on to the next alike. Plans depend only on what every rank knows alike, so the ranks
 * choose the same without a message; the only round a call may add is a vote, where an algorithm
 * asks for one ({@link Algorithm.Agreement#VOTE}), which also compares the ranks' calls
 * ({@link SameCall}), or that comparison alone, where an algorithm needs it and no vote ran
 * ({@link Algorithm#comparesCalls}).
 */
public final class Planner implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.ferry.collectives");
    private static final int PLANS_KEPT = 4096;

    private final Group group;
    private final List<Algorithm> algorithms;
    /** Calls each algorithm of {@link #algorithms} ran, by index. */
    private final java.util.concurrent.atomic.AtomicLongArray runs;
    private CostTable table;
    private CostTable.Setting setting;
    private final String backend;
    private final Map<String, Algorithm> forced = new LinkedHashMap<>();
    private String forcedText;
    /** The algorithm the backend asks for where it fits ({@link dev.ferry.spi.Transport#preferredAlgorithm}), or null. */
    private final Algorithm preferred;
    /** {@code ferry.collectives.uniformBuffers}: votes are each rank's own answer. */
    private final boolean uniform;
    /** Compares the ranks' calls, in the round of a vote or alone. */
    private final SameCall sameCall;
    private final Map<Shape, Algorithm[]> plans = recentPlans();
    /**
     * The last plan of each collective, read without the lock: a program repeats a few shapes, and
     * the lock and the access-ordered map cost a small collective about as much as the rest of the
     * planner. Written under the lock, with {@link #plans}; cleared with it.
     */
    private final AtomicReferenceArray<Plan> lastPlans = new AtomicReferenceArray<>(Collective.values().length);
    /** {@link #onStream}'s answers. */
    private final Map<Shape, Algorithm[]> streamPlans = recentPlans();
    /** The algorithm of this thread's last call (for call events and tests). */
    private static final ThreadLocal<String> LAST = new ThreadLocal<>();

    /**
     * A planner over {@code algorithms} for the communicator of {@code group} under backend
     * {@code backend}; {@code choice} is {@code ferry.collectives} parsed (null: none), checked here
     * against the algorithms' names.
     */
    Planner(Group group, List<Algorithm> algorithms, CostTable table, String backend, Map<String, String> choice, String choiceText, boolean uniform) {
        this.group = group;
        this.algorithms = List.copyOf(algorithms);
        this.runs = new java.util.concurrent.atomic.AtomicLongArray(this.algorithms.size());
        this.table = table;
        this.backend = backend;
        this.setting = table.closest(group.topology(), backend);
        this.forcedText = choiceText;
        this.uniform = uniform;
        this.sameCall = new SameCall(group);
        String wanted = group.mover().preferredAlgorithm();
        this.preferred = wanted == null ? null : byName(wanted);
        force(choice, choiceText);
    }

    /**
     * Runs the collectives {@code choice} names (as {@code ferry.collectives} parsed; null: none) on
     * the algorithms it names from the next call on, on this communicator; checked as the setting
     * is. For measurements and tests ({@link CollectivesDiagnostics#force}); call it on every rank alike.
     */
    synchronized void force(Map<String, String> choice, String choiceText) {
        forced.clear();
        clearPlans();
        forcedText = choiceText;
        if (choice != null) {
            for (Map.Entry<String, String> e : choice.entrySet()) {
                Algorithm a = byName(e.getValue());
                if (a == null) {
                    throw new InvalidSettingException(CollectivesSettings.COLLECTIVES.key(), choiceText, CollectivesSettings.COLLECTIVES.key() + "='"
                            + choiceText + "' names no algorithm '" + e.getValue() + "'; the algorithms here: " + names());
                }
                if (!e.getKey().equals("*") && !a.carries(Collective.byLabel(e.getKey()))) {
                    throw new InvalidSettingException(CollectivesSettings.COLLECTIVES.key(), choiceText, CollectivesSettings.COLLECTIVES.key() + "='"
                            + choiceText + "': algorithm " + a.name() + " does not run " + e.getKey());
                }
                forced.put(e.getKey(), a);
            }
        }
    }

    /** Plans from {@code first}'s measurements ahead of the current table's, from the next call on (measurements and tests). */
    synchronized void useTable(CostTable first) {
        table = table.withFirst(first);
        setting = table.closest(group.topology(), backend);
        clearPlans();
    }

    private void clearPlans() {
        plans.clear();
        for (int i = 0; i < lastPlans.length(); i++) lastPlans.set(i, null);
    }

    /** How many blocking calls each algorithm ran, by name (those that ran any). */
    public Map<String, Long> runs() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < algorithms.size(); i++) {
            if (runs.get(i) > 0) m.put(algorithms.get(i).name(), runs.get(i));
        }
        return m;
    }

    /** The algorithm named {@code name}, or null. */
    public Algorithm byName(String name) {
        for (Algorithm a : algorithms) {
            if (a.name().equals(name.toLowerCase(Locale.ROOT))) return a;
        }
        return null;
    }

    /** The names of the algorithms of this communicator. */
    public String names() {
        return String.join(", ", algorithms.stream().map(Algorithm::name).toList());
    }

    public List<Algorithm> algorithms() {
        return algorithms;
    }

    /** The measured setting whose costs this communicator uses (null: no table applies). */
    public synchronized CostTable.Setting setting() {
        return setting;
    }

    public Topology topology() {
        return group.topology();
    }

    /** The algorithm {@code ferry.collectives} names for {@code c}, or null. */
    private synchronized Algorithm forced(Collective c) {
        Algorithm a = forced.get(c.label());
        if (a == null) {
            a = forced.get("*");
            if (a != null && !a.carries(c)) a = null;
        }
        return a;
    }

    /**
     * The cost of {@code a} for {@code s} in microseconds from the table; NaN when not measured, or
     * measured under another backend than this communicator's where the time depends on it
     * ({@link Algorithm#timedWithBackend}: a table of {@code ompi} times the CUDA-aware MPI's own
     * collectives, which {@code staged} does not run).
     */
    public synchronized double cost(Algorithm a, Shape s) {
        if (otherBackend(a)) return Double.NaN;
        return table.micros(setting, a.name(), s);
    }

    /** True when the setting's times were measured under another backend and {@code a}'s time depends on the backend. */
    private boolean otherBackend(Algorithm a) {
        return a.timedWithBackend() && timedUnderOtherBackend();
    }

    /** Whether the cost table was measured under another backend than this communicator's. */
    private boolean timedUnderOtherBackend() {
        return setting != null && !setting.backend().equals(backend);
    }

    /** The algorithms to try for calls of {@code s}, best first, ending with one that takes any buffers. */
    public synchronized Algorithm[] plan(Shape s) {
        Algorithm[] p = plans.get(s);
        if (p == null) {
            p = decide(s);
            plans.put(s, p);
        }
        return p;
    }

    /**
     * The plan of calls of {@code shape}: {@code order} as {@link #plan} gives it, and whether
     * {@code ferry.collectives} named its one algorithm.
     */
    private record Plan(Shape shape, Algorithm[] order, boolean chosenBySetting, int[] slots) {
    }

    /** {@link #plan}, with whether the setting chose it: without the lock when the collective's last plan was for this shape. */
    private Plan planOf(Shape s) {
        Plan p = lastPlans.get(s.collective().ordinal());
        if (p != null && p.shape().equals(s)) return p;
        synchronized (this) {
            Algorithm[] order = plan(s);
            int[] slots = new int[order.length]; // where each algorithm of the order counts its runs
            for (int i = 0; i < order.length; i++) slots[i] = algorithms.indexOf(order[i]);
            p = new Plan(s, order, order.length == 1 && forced(s.collective()) != null, slots);
            lastPlans.set(s.collective().ordinal(), p);
            return p;
        }
    }

    private Algorithm[] decide(Shape s) {
        Topology t = group.topology();
        Algorithm f = forced(s.collective());
        if (f != null) {
            String why = f.unfit(s, t);
            if (why != null) {
                throw new InvalidSettingException(CollectivesSettings.COLLECTIVES.key(), forcedText, CollectivesSettings.COLLECTIVES.key() + "='"
                        + forcedText + "': " + f.name() + " cannot run " + s + " on " + t.describe() + ": " + why);
            }
            return new Algorithm[] {f};
        }
        List<Algorithm> fit = new ArrayList<>();
        for (Algorithm a : algorithms) {
            if (a.carries(s.collective()) && a.unfit(s, t) == null) fit.add(a);
        }
        fit.sort(byCost(s));
        if (preferred != null && fit.remove(preferred)) {
            fit.add(0, preferred);
        }
        List<Algorithm> order = new ArrayList<>();
        for (Algorithm a : fit) {
            order.add(a);
            if (a.agreement() == Algorithm.Agreement.NONE) break;
        }
        if (order.isEmpty() || order.get(order.size() - 1).agreement() != Algorithm.Agreement.NONE) {
            throw new IllegalStateException("no algorithm that takes any buffers runs " + s + " on " + t.describe() + " (algorithms: " + names() + ")");
        }
        return order.toArray(new Algorithm[0]);
    }

    /** A cache of plans by shape that keeps the {@link #PLANS_KEPT} last used. */
    private static Map<Shape, Algorithm[]> recentPlans() {
        return new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Shape, Algorithm[]> e) {
                return size() > PLANS_KEPT;
            }
        };
    }

    /** Cheapest first for calls of {@code s} (no cost: last), then by preference. */
    private Comparator<Algorithm> byCost(Shape s) {
        return Comparator.comparingDouble((Algorithm a) -> {
            double c = cost(a, s);
            return Double.isNaN(c) ? Double.POSITIVE_INFINITY : c;
        }).thenComparingInt(Algorithm::preference);
    }

    /**
     * The algorithms that may run stream-ordered calls of {@code s} on the stream by themselves,
     * cheapest first (by the blocking calls' costs, as {@link #plan}), possibly none: the one
     * {@code ferry.collectives} names when it can, else every one that fits and can. The first
     * that enqueues a call takes it; such a call needs no thread of Ferry's between the stream's work.
     */
    public synchronized Algorithm[] onStream(Shape s) {
        Algorithm[] p = streamPlans.get(s);
        if (p == null) {
            Algorithm f = forced(s.collective());
            List<Algorithm> fit = new ArrayList<>();
            if (f != null) {
                if (f.enqueues(s.collective())) fit.add(f);
            } else {
                Topology t = group.topology();
                for (Algorithm a : algorithms) {
                    if (a.carries(s.collective()) && a.enqueues(s.collective()) && a.unfit(s, t) == null) fit.add(a);
                }
                fit.sort(byCost(s));
            }
            p = fit.toArray(new Algorithm[0]);
            streamPlans.put(s, p);
        }
        return p;
    }

    /** Runs {@code call} on the first algorithm of its plan that every rank's buffers suit. */
    public void run(CollectiveCall call) {
        Plan plan = planOf(call.shape());
        Algorithm[] order = plan.order();
        boolean chosenBySetting = plan.chosenBySetting();
        boolean hostSeen = false; // an agreement found host memory on some rank: device-only algorithms are passed over
        boolean compared = false; // the ranks' calls compared (SameCall), in a vote or alone
        for (int i = 0; i < order.length; i++) {
            Algorithm a = order[i];
            if (hostSeen && a.needsDevice() && !chosenBySetting) continue;
            if (a.agreement() == Algorithm.Agreement.VOTE) {
                boolean takes = a.takes(call), device = allDevice(call);
                int agreed;
                if (uniform) {
                    agreed = (takes ? 1 : 0) | (device ? 2 : 0);
                } else {
                    agreed = sameCall.vote(call.shape(), takes, device, () -> mismatchPrefix(call, a));
                    compared = true;
                }
                hostSeen |= (agreed & 2) == 0;
                if ((agreed & 1) == 0) {
                    if (chosenBySetting) throw declined(a, call, null);
                    continue;
                }
            }
            if (!compared && a.comparesCalls(call.collective())) {
                sameCall.check(call.shape(), () -> mismatchPrefix(call, a));
                compared = true;
            }
            dev.ferry.flight.CurrentCall.algorithm(a.name());
            if (!a.ordersOnGpu()) dev.ferry.spi.PendingDeviceWork.complete();
            if (a.run(call)) {
                LAST.set(a.name());
                runs.incrementAndGet(plan.slots()[i]);
                if (LOG.isLoggable(System.Logger.Level.DEBUG)) {
                    LOG.log(System.Logger.Level.DEBUG, () -> "rank " + group.rank() + ": " + call + " on " + a.name() + explain(a, call.shape()));
                }
                return;
            }
            // an algorithm that found itself unable to serve (its start failed on some rank) says why
            if (chosenBySetting) throw declined(a, call, a.unfit(call.shape(), group.topology()));
            hostSeen |= a.declinedForHostMemory();
        }
        throw new IllegalStateException("every algorithm of the plan declined " + call);
    }

    /** What a mismatch's message starts with: the same on every rank that made this collective, whatever its size or root. */
    private static String mismatchPrefix(CollectiveCall call, Algorithm a) {
        return call.collective().label() + " on " + a.name();
    }

    /** True when every buffer of {@code call} on this rank is device memory (null buffers, insignificant here, count as such). */
    private static boolean allDevice(CollectiveCall call) {
        return (call.send() == null || call.send().kind().needsCuda()) && (call.recv() == null || call.recv().kind().needsCuda());
    }

    /** The forced algorithm {@code a} declined {@code call}: because of {@code unfit} where it says why, else some rank's buffers. */
    private InvalidSettingException declined(Algorithm a, CollectiveCall call, String unfit) {
        return new InvalidSettingException(CollectivesSettings.COLLECTIVES.key(), forcedText, CollectivesSettings.COLLECTIVES.key() + "='" + forcedText
                + "': " + a.name() + " cannot run this " + call + ": "
                + (unfit != null ? unfit : "the buffers of some rank do not suit it (" + a.description() + ")"));
    }

    private String explain(Algorithm a, Shape s) {
        double c = cost(a, s);
        if (Double.isNaN(c)) {
            return otherBackend(a) ? " (measured under backend " + setting.backend() + " only; by preference)" : " (no measured cost; by preference)";
        }
        return String.format(Locale.ROOT, " (%.1f us measured, table %s)", c, setting);
    }

    /** Notes {@code name} as this thread's last algorithm: a collective it enqueued on a stream. */
    static void ranOnStream(String name) {
        LAST.set(name);
        if (name != null) dev.ferry.flight.CurrentCall.algorithm(name);
    }

    /** The algorithm that ran this thread's last collective on any communicator, or null. */
    public static String lastAlgorithm() {
        return LAST.get();
    }

    /**
     * The plan of every collective for {@code sizes}, one line per collective: what runs at each
     * size when every rank passes device memory, for {@code ferry doctor}.
     */
    public List<String> describe(long[] sizes, dev.ferry.DataType type) {
        List<String> out = new ArrayList<>();
        out.add("topology: " + group.topology().describe() + "; costs: " + (setting == null ? "no measured table for this placement (by preference)"
                : setting + " (" + table.origin(setting) + ")" + (!timedUnderOtherBackend() ? ""
                        : ", of which this backend (" + backend + ") takes the times of CUDA IPC and NCCL only"))
                + (forcedText != null ? "; ferry.collectives=" + forcedText : ""));
        for (Collective c : Collective.values()) {
            if (c.vector()) continue;
            StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%-14s", c.label()));
            for (long b : sizes) {
                Shape s = new Shape(c, type, c.reduces() ? dev.ferry.ReduceOp.SUM : null, b, 0);
                String name;
                try {
                    name = plan(s)[0].name();
                } catch (RuntimeException e) {
                    name = "(" + e.getClass().getSimpleName() + ")";
                }
                sb.append(' ').append(Sizes.label(b)).append(':').append(name);
            }
            out.add(sb.toString());
        }
        return out;
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (Algorithm a : algorithms) {
            try {
                a.close();
            } catch (RuntimeException e) {
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }
}
