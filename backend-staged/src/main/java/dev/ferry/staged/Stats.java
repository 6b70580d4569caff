// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counters of what the staged backend did in this process: which paths carried how many messages and chunks (the collectives' counters are the planner's: {@code CollectivesDiagnostics.counters()}). */
final class Stats {
    final LongAdder eagerSends = new LongAdder();
    final LongAdder framedSends = new LongAdder();
    final LongAdder stagedChunksOut = new LongAdder();
    final LongAdder straightChunksOut = new LongAdder();
    final LongAdder stagedChunksIn = new LongAdder();
    final LongAdder straightChunksIn = new LongAdder();
    final LongAdder ipcOffers = new LongAdder();
    final LongAdder ipcCopies = new LongAdder();
    final LongAdder ipcRefused = new LongAdder();
    final LongAdder truncated = new LongAdder();
    final LongAdder collectiveSteps = new LongAdder();
    final LongAdder collectivesByMessages = new LongAdder();

    /** Every counter by name. */
    Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("eagerSends", eagerSends.sum());
        m.put("framedSends", framedSends.sum());
        m.put("stagedChunksOut", stagedChunksOut.sum());
        m.put("straightChunksOut", straightChunksOut.sum());
        m.put("stagedChunksIn", stagedChunksIn.sum());
        m.put("straightChunksIn", straightChunksIn.sum());
        m.put("ipcOffers", ipcOffers.sum());
        m.put("ipcCopies", ipcCopies.sum());
        m.put("ipcRefused", ipcRefused.sum());
        m.put("truncated", truncated.sum());
        m.put("collectiveSteps", collectiveSteps.sum());
        m.put("collectivesByMessages", collectivesByMessages.sum());
        return m;
    }

    @Override
    public String toString() {
        return snapshot().toString();
    }
}
