// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package com.example.consumer;

import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;
import java.lang.foreign.ValueLayout;

/**
 * Checks two results on every rank and says so: an allReduce (the sum of rank + 1 over all ranks
 * must be n(n+1)/2) and a token passed once around the ring of ranks (each rank must get its own
 * token back after n hops). On host buffers always, on device buffers too when this rank has a GPU.
 * Prints one line per check, "consumer: rank R of N: CHECK ok|FAILED ..."; exits 1 when a check failed.
 *
 * <pre>mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp "target/ferry-consumer-1.0.jar:target/lib/*" com.example.consumer.RingCheck</pre>
 */
public final class RingCheck {
    private RingCheck() {
    }

    public static void main(String[] args) {
        boolean ok;
        try (Communicator world = Ferry.open()) {
            try (HostBuffer a = HostBuffer.allocate(8); HostBuffer b = HostBuffer.allocate(8)) {
                ok = check(world, "host", a, b);
            }
            if (Cuda.isAvailable() && Cuda.deviceCount() > 0) {
                try (DeviceBuffer a = Cuda.allocate(8); DeviceBuffer b = Cuda.allocate(8)) {
                    ok &= check(world, "device", a, b);
                }
            } else if (world.rank() == 0) {
                System.out.println("consumer: no GPU here: device buffers not checked");
            }
        }
        System.out.flush();
        System.exit(ok ? 0 : 1);
    }

    private static boolean check(Communicator world, String kind, Buffer a, Buffer b) {
        int rank = world.rank();
        int n = world.size();
        put(a, rank + 1);
        world.allReduce(a, b, 1, DataType.LONG, ReduceOp.SUM);
        long sum = get(b);
        long expected = (long) n * (n + 1) / 2;
        boolean reduced = report(world, kind, "allReduce", sum == expected, "sum of rank + 1 = " + sum + ", expected " + expected);

        put(a, 1000L + rank);
        for (int hop = 0; hop < n; hop++) {
            world.sendRecv(a, 1, DataType.LONG, (rank + 1) % n, 7, b, 1, DataType.LONG, (rank + n - 1) % n, 7);
            put(a, get(b));
        }
        long back = get(a);
        boolean ring = report(world, kind, "ring", back == 1000L + rank, "token after " + n + " hops: " + back + ", expected " + (1000L + rank));
        return reduced && ring;
    }

    private static boolean report(Communicator world, String kind, String check, boolean ok, String detail) {
        System.out.println("consumer: rank " + world.rank() + " of " + world.size() + ": " + check + " on " + kind + " buffers via "
                + world.backend() + " " + (ok ? "ok" : "FAILED") + " (" + detail + ")");
        return ok;
    }

    private static void put(Buffer buffer, long value) {
        try (HostBuffer h = HostBuffer.allocate(8)) {
            h.segment().set(ValueLayout.JAVA_LONG, 0, value);
            copy(buffer, h);
        }
    }

    private static long get(Buffer buffer) {
        try (HostBuffer h = HostBuffer.allocate(8)) {
            copy(h, buffer);
            return h.segment().get(ValueLayout.JAVA_LONG, 0);
        }
    }

    private static void copy(Buffer dst, Buffer src) {
        if (dst instanceof DeviceBuffer || src instanceof DeviceBuffer) {
            Cuda.copy(dst, src, 8);
        } else {
            ((HostBuffer) dst).segment().copyFrom(((HostBuffer) src).segment());
        }
    }
}
