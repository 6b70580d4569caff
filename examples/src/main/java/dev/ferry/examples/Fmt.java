// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import java.util.Locale;

/** Number formatting for result lines. */
final class Fmt {
    private Fmt() {
    }

    /** 1048576 -> "1M", 65536 -> "64K", 1000 -> "1000". */
    static String count(long n) {
        if (n >= 1L << 20 && n % (1L << 20) == 0) {
            return (n >> 20) + "M";
        }
        if (n >= 1L << 10 && n % (1L << 10) == 0) {
            return (n >> 10) + "K";
        }
        return Long.toString(n);
    }

    /** 8 -> "8 B", 65536 -> "64 KiB", 4194304 -> "4 MiB", 1000 -> "1000 B". */
    static String bytes(long n) {
        if (n >= 1L << 30 && n % (1L << 30) == 0) {
            return (n >> 30) + " GiB";
        }
        if (n >= 1L << 20 && n % (1L << 20) == 0) {
            return (n >> 20) + " MiB";
        }
        if (n >= 1L << 10 && n % (1L << 10) == 0) {
            return (n >> 10) + " KiB";
        }
        return n + " B";
    }

    /** Microseconds as "850 us", "12.3 ms" or "1.25 s". */
    static String millis(long micros) {
        if (micros < 1000) {
            return micros + " us";
        }
        if (micros < 1_000_000) {
            return String.format(Locale.ROOT, "%.1f ms", micros / 1e3);
        }
        return String.format(Locale.ROOT, "%.2f s", micros / 1e6);
    }

    /** Latency in microseconds, 3 significant digits: "1.92 us", "18.4 us", "153 us". */
    static String micros(double us) {
        if (us < 10) {
            return String.format(Locale.ROOT, "%.2f us", us);
        }
        if (us < 100) {
            return String.format(Locale.ROOT, "%.1f us", us);
        }
        return String.format(Locale.ROOT, "%.0f us", us);
    }

    /** Bytes per second as "5.73 GB/s", "812 MB/s" or "0.40 MB/s" (decimal units, as bandwidths are quoted). */
    static String rate(double bytesPerSecond) {
        if (bytesPerSecond >= 1e9) {
            return String.format(Locale.ROOT, "%.2f GB/s", bytesPerSecond / 1e9);
        }
        if (bytesPerSecond >= 1e7) {
            return String.format(Locale.ROOT, "%.0f MB/s", bytesPerSecond / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f MB/s", bytesPerSecond / 1e6);
    }
}
