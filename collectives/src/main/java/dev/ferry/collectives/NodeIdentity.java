// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import dev.ferry.Settings;
import dev.ferry.spi.Launch;
import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;

/**
 * The node a process runs on: a hash of the host name and the boot id, equal for the processes of
 * one machine. For tests on one machine, {@code ferry.staged.test.nodeGroup=N} makes each group of N
 * consecutive world ranks a node of its own.
 */
public final class NodeIdentity {
    /** This machine's node id. */
    public static final long HOST = hostId();

    private NodeIdentity() {
    }

    /** The node id this process publishes under {@code settings}. */
    public static long of(Settings settings) {
        int group = pretendedGroup(settings);
        if (group <= 0) {
            return HOST;
        }
        long g = Math.max(0, Launch.detect().rank()) / group;
        return HOST ^ ((g + 1) * 0x9E3779B97F4A7C15L);
    }

    @SuppressWarnings("unchecked")
    private static int pretendedGroup(Settings settings) {
        Optional<Setting<?>> s = SettingsCatalog.find("ferry.staged.test.nodeGroup");
        if (s.isEmpty()) return 0;
        Object v = settings.get(s.get());
        return v instanceof Integer i ? i : 0;
    }

    private static long hostId() {
        String host;
        try {
            host = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (Exception e) {
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (Exception e2) {
                host = System.getenv().getOrDefault("HOSTNAME", "?");
            }
        }
        String boot;
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (Exception e) {
            boot = "";
        }
        UUID u = UUID.nameUUIDFromBytes((host + "/" + boot).getBytes(StandardCharsets.UTF_8));
        return u.getMostSignificantBits() ^ u.getLeastSignificantBits();
    }
}
