// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Buffer;
import dev.ferry.DeviceBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.DeviceSupport;
import java.util.List;
import java.util.Locale;

/**
 * What the device ordering contract adds to every call on device memory: one
 * {@link DeviceSupport#enter} and close with nothing queued on the GPU (the contexts found and
 * synchronized, the caller's context restored), timed in batches; medians and spread. Run on a
 * GPU machine with {@code java -cp ... dev.ferry.bench.OrderingCost [BATCHES]}.
 */
public final class OrderingCost {
    private OrderingCost() {
    }

    public static void main(String[] args) {
        int batches = args.length > 0 ? Integer.parseInt(args[0]) : 25;
        Cuda.ensureAvailability();
        DeviceSupport device = DeviceSupport.get();
        try (DeviceBuffer b = Cuda.allocate(8)) {
            List<Buffer> one = List.of(b);
            int per = 2000;
            for (int i = 0; i < 20_000; i++) { // warm-up: JIT and driver
                device.enter(one).close();
            }
            double[] enter = new double[batches];
            double[] preserve = new double[batches];
            for (int k = 0; k < batches; k++) {
                long t = System.nanoTime();
                for (int i = 0; i < per; i++) device.enter(one).close();
                enter[k] = (System.nanoTime() - t) / 1e3 / per;
                t = System.nanoTime();
                for (int i = 0; i < per; i++) device.preserveContext().close();
                preserve[k] = (System.nanoTime() - t) / 1e3 / per;
            }
            System.out.println("device: " + Cuda.describe());
            System.out.println(line("enter + close (context synchronize, nothing queued), one device buffer", enter));
            System.out.println(line("preserveContext + close (waits and tests)", preserve));
        }
    }

    private static String line(String what, double[] us) {
        Stats s = Stats.of(us);
        return String.format(Locale.ROOT, "%s: median %.2f us, min %.2f, max %.2f (%d batches of 2000)", what, s.median(), s.min(), s.max(), s.n());
    }
}
