// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.testing.TestWorld;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Where the ranks of a multi-host job run: each rank's network namespace (inode of
 * /proc/self/ns/net) and host name, gathered on every rank. With {@code -Dferry.test.expectHosts=N}
 * the ranks must span N namespaces with N host names, one name per namespace, and none may run in
 * the namespace of the test JVM ({@code -Dferry.test.rootNetns}).
 */
public class HostIdentity {
    static long netns() throws IOException {
        String l = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString(); // net:[4026531840]
        return Long.parseLong(l.replaceAll("[^0-9]", ""));
    }

    static String hostname() throws IOException {
        return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
    }

    @Test
    void ranksRunOnDifferentHosts() throws IOException {
        Communicator world = TestWorld.world();
        int size = world.size(), rank = world.rank();
        long ns = netns();
        String host = hostname();
        long[] all = new long[2 * size];
        try (HostBuffer in = HostBuffer.allocate(16); HostBuffer out = HostBuffer.allocate(16L * size)) {
            in.segment().set(ValueLayout.JAVA_LONG, 0, ns);
            in.segment().set(ValueLayout.JAVA_LONG, 8, host.hashCode());
            world.allGather(in, out, 2, DataType.LONG);
            for (int i = 0; i < 2 * size; i++) all[i] = out.segment().getAtIndex(ValueLayout.JAVA_LONG, i);
        }
        System.out.println("[ferry-hosts] rank " + rank + " of " + size + ": host " + host + ", network namespace " + ns);
        Set<Long> namespaces = new HashSet<>();
        Set<Long> names = new HashSet<>();
        Map<Long, Long> nameOf = new HashMap<>();
        for (int r = 0; r < size; r++) {
            long n = all[2 * r], h = all[2 * r + 1];
            namespaces.add(n);
            names.add(h);
            Long before = nameOf.putIfAbsent(n, h);
            assertTrue(before == null || before == h, "ranks in one network namespace have one host name");
        }
        int expect = Integer.getInteger("ferry.test.expectHosts", 1);
        assertEquals(expect, namespaces.size(), "network namespaces of the ranks");
        assertEquals(expect, names.size(), "host names of the ranks");
        String root = System.getProperty("ferry.test.rootNetns");
        if (root != null) {
            assertNotEquals(Long.parseLong(root), ns, "rank " + rank + " runs in the test JVM's own network namespace");
        }
    }
}
