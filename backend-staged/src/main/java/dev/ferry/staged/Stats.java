// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.staged;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counters of what the staged backend did in this process: which paths carried how many messages and chunks. */
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
    final LongAdder ipcCollectives = new LongAdder();
    /** IPC collectives that ended on the ranks' interprocess events (the others: a stream synchronize and a barrier). */
    final LongAdder ipcEventWaits = new LongAdder();
    /** Record rounds of IPC collectives on the node's shared-memory board (the others: an MPI allGather). */
    final LongAdder boardRounds = new LongAdder();
    /** Agreement rounds of IPC collectives (calls that mapped a pair of ranks not proven before). */
    final LongAdder ipcAgreements = new LongAdder();
    final LongAdder gpuReductions = new LongAdder();
    /** Short allReduces whose ranks met on the GPU ({@link ShortAllReduce}), and their launches that came back to wait again. */
    final LongAdder shortAllReduces = new LongAdder();
    final LongAdder shortAllReduceWaits = new LongAdder();
    final LongAdder chainReductions = new LongAdder();
    /** Reductions whose inputs were gathered and folded on the GPU ({@link GatheredReductions}): small ones across nodes, scans. */
    final LongAdder gatheredReductions = new LongAdder();
    /** Reductions across nodes run node by node ({@link HierarchicalReductions}). */
    final LongAdder hierarchicalReductions = new LongAdder();

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
        m.put("ipcCollectives", ipcCollectives.sum());
        m.put("ipcEventWaits", ipcEventWaits.sum());
        m.put("boardRounds", boardRounds.sum());
        m.put("ipcAgreements", ipcAgreements.sum());
        m.put("gpuReductions", gpuReductions.sum());
        m.put("shortAllReduces", shortAllReduces.sum());
        m.put("shortAllReduceWaits", shortAllReduceWaits.sum());
        m.put("chainReductions", chainReductions.sum());
        m.put("gatheredReductions", gatheredReductions.sum());
        m.put("hierarchicalReductions", hierarchicalReductions.sum());
        return m;
    }

    @Override
    public String toString() {
        return snapshot().toString();
    }
}
