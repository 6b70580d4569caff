// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;

/** The settings of the collectives module. */
public final class CollectivesSettings implements SettingsCatalog {
    private static final String MODULE = "collectives";

    /**
     * {@code ferry.collectives}: the algorithm that runs collectives instead of the planner's choice:
     * {@code NAME} for every collective it carries, or {@code op:NAME,op:NAME} per collective
     * ({@code allReduce:ipc-short,broadcast:native}). Parsed into collective -> name; the key
     * {@code *} stands for every collective the algorithm carries.
     */
    public static final Setting<Map<String, String>> COLLECTIVES = Setting.of(MODULE, "ferry.collectives",
            new Setting.Parser<>("an algorithm's name, or op:NAME pairs separated by commas (op: broadcast, scatter, gather, allGather, allToAll, "
                    + "reduce, allReduce, reduceScatter, scan, exscan, scatterV, gatherV, allGatherV, allToAllV)", CollectivesSettings::parseChoice),
            null, "the algorithm that runs collectives instead of the planner's choice: `NAME` for every collective it carries, or "
                    + "`op:NAME,...` per collective (`ferry doctor` lists the names); one that cannot serve a call is an InvalidSettingException naming why");

    /** {@code ferry.collectives.table}: a cost table of the user's ({@code ferry bench --tune} writes one), read before the built-in ones. */
    public static final Setting<String> TABLE = Setting.of(MODULE, "ferry.collectives.table", Setting.STRING, null,
            "a cost table measured on this machine by `ferry bench --tune`, used before the tables that come with Ferry");

    static Map<String, String> parseChoice(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        String t = text.trim();
        if (!t.contains(":")) {
            if (t.isEmpty() || t.contains(",")) throw new IllegalArgumentException(text);
            out.put("*", t.toLowerCase(Locale.ROOT));
            return out;
        }
        for (String part : t.split(",")) {
            String[] kv = part.trim().split(":");
            if (kv.length != 2 || kv[1].isBlank()) throw new IllegalArgumentException(part);
            Collective c = Collective.byLabel(kv[0].trim());
            if (c == null) throw new IllegalArgumentException("unknown collective " + kv[0]);
            out.put(c.label(), kv[1].trim().toLowerCase(Locale.ROOT));
        }
        return out;
    }

    /**
     * {@code ferry.collectives.uniformBuffers}: the program promises that every rank passes the same
     * kind of memory to each collective, so the planner's per-call vote on buffers is skipped.
     */
    public static final Setting<Boolean> UNIFORM_BUFFERS = Setting.of(MODULE, "ferry.collectives.uniformBuffers", Setting.BOOLEAN, false,
            "every rank passes the same kind of memory (device memory of its GPU, or host memory) to each collective, as NCCL programs do: "
                    + "algorithms that need every rank's buffers on a GPU skip their vote (one small allReduce per call, which also compares "
                    + "the ranks' calls); a rank that breaks the promise gets wrong data or a hang");

    @Override
    public List<Setting<?>> settings() {
        return List.of(COLLECTIVES, TABLE, UNIFORM_BUFFERS);
    }
}
