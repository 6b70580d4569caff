// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.Probe;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What backend selection saw: the request, the launch, every provider's probe, and the choice.
 * {@link #table()} is the text of {@code ferry doctor} and of {@link BackendUnavailableException}.
 *
 * @param requested the requested backend name ({@code auto} when none was given)
 * @param source    where the request came from ({@code -Dferry.backend}, {@code FERRY_BACKEND}, default)
 * @param launch    how the process was launched
 * @param probes    every provider's probe, in discovery order
 * @param chosen    the selected provider's name, or null when none could be
 * @param why       one line on why {@code chosen} was chosen (or why nothing was): how it was chosen,
 *                  then, after {@code "; "}, the chosen provider's {@link Probe#reason()}
 */
public record SelectionReport(String requested, String source, Launch launch, List<Probe> probes, String chosen, String why) {

    public SelectionReport {
        probes = List.copyOf(probes);
    }

    /** The probe of {@code provider}, or null. */
    public Probe probe(String provider) {
        return probes.stream().filter(p -> p.provider().equals(provider)).findFirst().orElse(null);
    }

    /**
     * The short line Ferry logs when it opens: the backend, how it was chosen and the library it
     * runs on, e.g. {@code ferry: backend ompi: auto: highest priority of the available backends
     * (host buffers only); Open MPI v4.1.4}. The provider's whole reason is in {@link #why()} and
     * {@link #table()}.
     */
    public String summary() {
        if (chosen == null) {
            return "ferry: no backend selected: " + why;
        }
        int end = why.indexOf("; ");
        StringBuilder sb = new StringBuilder("ferry: backend ").append(chosen).append(": ").append(end < 0 ? why : why.substring(0, end));
        Probe p = probe(chosen);
        // the "library" detail of the MPI and NCCL providers reads "NAME VERSION at PATH"
        String library = p == null ? null : p.details().get("library");
        if (library != null && library.contains(" at ")) {
            sb.append("; ").append(library, 0, library.indexOf(" at "));
        }
        return sb.toString();
    }

    /** A table of every provider: available or not, priority, capabilities, reason, details. */
    public String table() {
        StringBuilder sb = new StringBuilder();
        sb.append("Ferry backends (requested: ").append(requested).append(" via ").append(source)
          .append("; launch: ").append(launch.describe()).append(")\n");
        sb.append(String.format("  %-9s %-9s %-8s %-52s %s%n", "backend", "available", "priority", "capabilities", "reason"));
        for (Probe p : probes) {
            String caps = p.capabilities().stream().map(Capability::name).collect(Collectors.joining(","));
            sb.append(String.format("%s %-9s %-9s %-8s %-52s %s%n",
                    p.provider().equals(chosen) ? "*" : " ", p.provider(), p.isAvailable() ? "yes" : "no",
                    p.isAvailable() ? Integer.toString(p.priority()) : "-", caps.isEmpty() ? "-" : caps, p.reason()));
            for (Map.Entry<String, String> d : p.details().entrySet()) {
                sb.append(String.format("  %-9s   %s: %s%n", "", d.getKey(), d.getValue()));
            }
            if (!p.isAvailable() && p.unavailabilityCause() != null) {
                sb.append(String.format("  %-9s   cause: %s%n", "", p.unavailabilityCause()));
            }
        }
        sb.append(chosen == null ? "no backend selected: " : "selected " + chosen + ": ").append(why).append('\n');
        return sb.toString();
    }

    @Override
    public String toString() {
        return table();
    }
}
