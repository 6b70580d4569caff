// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which member of the MPICH family a library is, read from its {@code MPI_Get_library_version}
 * string. Examples of the first line:
 * <pre>
 * MPICH Version:      4.0.2                                   (MPICH)
 * MVAPICH2 Version      :  2.3.7                              (MVAPICH2; MVAPICH 3.x says "MVAPICH Version")
 * MVAPICH2-GDR Version  :  2.3.7                              (MVAPICH2-GDR: "GDR" in the name)
 * Intel(R) MPI Library 2021.6 for Linux* OS                   (Intel MPI)
 * MPI VERSION    : CRAY MPICH version 8.1.23 (ANL base 3.4a2) (Cray MPICH)
 * </pre>
 *
 * @param flavor  the family member
 * @param name    short name with version, e.g. "MPICH 4.0.2"
 * @param device  the MPICH device line ("ch4:ucx", "ch3:mrail"), or "" when the string has none
 * @param cudaBuild true when the string shows a CUDA build (GDR, or {@code --enable-cuda}/{@code --with-cuda} in the configure line)
 * @param full    the whole string
 */
record LibraryVersion(Flavor flavor, String name, String device, boolean cudaBuild, String full) {

    /** Members of the MPICH ABI family. */
    enum Flavor {
        MVAPICH2_GDR("MVAPICH2-GDR"),
        MVAPICH("MVAPICH"),
        INTEL_MPI("Intel MPI"),
        CRAY_MPICH("Cray MPICH"),
        MPICH("MPICH"),
        /** Exports the MPICH ABI but says something else. */
        OTHER("MPICH ABI");

        private final String label;

        Flavor(String label) {
            this.label = label;
        }

        /** Human name of the family member. */
        String label() {
            return label;
        }

        /** MVAPICH2-GDR or MVAPICH2/MVAPICH: CUDA switched on with MV2_USE_CUDA=1. */
        boolean isMvapich() {
            return this == MVAPICH2_GDR || this == MVAPICH;
        }
    }

    private static final Pattern KEY_VERSION = Pattern.compile("^([A-Za-z][A-Za-z0-9_ -]*?)\\s*Version\\s*:\\s*(\\S+)", Pattern.MULTILINE);
    private static final Pattern INTEL = Pattern.compile("Intel\\(R\\) MPI Library ([0-9][^\\n]*?)(?: for |\\n|$)");
    private static final Pattern CRAY = Pattern.compile("CRAY MPICH version (\\S+)");
    private static final Pattern DEVICE = Pattern.compile("^\\S+ Device\\s*:\\s*(\\S+)", Pattern.MULTILINE);
    private static final Pattern CONFIGURE = Pattern.compile("^\\S+ configure\\s*:\\s*([^\\n]*)", Pattern.MULTILINE);

    /** Parses a version string (never fails: unknown strings are {@link Flavor#OTHER}). */
    static LibraryVersion parse(String s) {
        String full = s == null ? "" : s.strip();
        String device = find(DEVICE, full, "");
        String configure = find(CONFIGURE, full, "");
        boolean cudaConfigured = configure.contains("--enable-cuda") || configure.matches(".*--with-cuda(=\\S*)?(\\s.*|$)");
        Matcher cray = CRAY.matcher(full);
        if (cray.find()) {
            return new LibraryVersion(Flavor.CRAY_MPICH, "Cray MPICH " + cray.group(1), device, cudaConfigured, full);
        }
        Matcher intel = INTEL.matcher(full);
        if (intel.find()) {
            return new LibraryVersion(Flavor.INTEL_MPI, "Intel MPI " + intel.group(1).strip(), device, cudaConfigured, full);
        }
        Matcher kv = KEY_VERSION.matcher(full);
        if (kv.find()) {
            String product = kv.group(1).strip();
            String version = kv.group(2);
            String upper = product.toUpperCase(Locale.ROOT);
            if (upper.startsWith("MVAPICH")) {
                boolean gdr = upper.contains("GDR");
                return new LibraryVersion(gdr ? Flavor.MVAPICH2_GDR : Flavor.MVAPICH, product + " " + version, device, gdr || cudaConfigured, full);
            }
            if (upper.equals("MPICH")) {
                return new LibraryVersion(Flavor.MPICH, "MPICH " + version, device, cudaConfigured, full);
            }
            return new LibraryVersion(Flavor.OTHER, product + " " + version, device, cudaConfigured, full);
        }
        String first = full.lines().findFirst().orElse("unknown MPICH-ABI library").strip();
        return new LibraryVersion(Flavor.OTHER, first.length() > 80 ? first.substring(0, 80) : first, device, cudaConfigured, full);
    }

    private static String find(Pattern p, String s, String fallback) {
        Matcher m = p.matcher(s);
        return m.find() ? m.group(1).strip() : fallback;
    }
}
