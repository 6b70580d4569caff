// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

/** Byte sizes as people read them: 8 B, 64 KiB, 256 MiB. */
final class Sizes {
    private Sizes() {
    }

    static String label(long b) {
        if (b >= (1L << 30) && b % (1L << 30) == 0) return (b >> 30) + "G";
        if (b >= (1L << 20) && b % (1L << 20) == 0) return (b >> 20) + "M";
        if (b >= (1L << 10) && b % (1L << 10) == 0) return (b >> 10) + "K";
        return b + "B";
    }
}
