// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the nccl backend learned after its probe, for reports: the GPU placement decided at open,
 * and each kind of call delegated to the inner backend (or failure), recorded once with its reason.
 */
final class NcclRuntime {
    private static final Map<String, String> EVENTS = Collections.synchronizedMap(new LinkedHashMap<>());
    private static volatile String placement = "not checked yet (checked when the backend opens)";

    private NcclRuntime() {
    }

    static void placement(String refusal) {
        placement = refusal == null ? "one GPU per rank (checked at open)" : "refused: " + refusal;
    }

    /** Records {@code reason} under {@code what} the first time only. */
    static void record(String what, String reason) {
        EVENTS.putIfAbsent(what, reason);
    }

    static Map<String, String> snapshot() {
        Map<String, String> out = new LinkedHashMap<>();
        out.put("gpu placement", placement);
        synchronized (EVENTS) {
            EVENTS.forEach((k, v) -> out.put("delegated/failed: " + k, v));
        }
        return out;
    }
}
