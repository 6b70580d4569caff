package dev.ferry.tools;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.SelectionReport;
import dev.ferry.spi.DeviceSupport;

/**
 * {@code ferry doctor}: what Ferry sees on this machine. Prints the provider table (every backend,
 * available or not and why, with MPI library, version and CUDA-awareness), the CUDA driver and
 * devices, and peer access between GPUs. With {@code --open}, also opens the selected backend and
 * prints the line Ferry logs at startup; exits 2 when no backend can be opened.
 */
public final class Doctor {
    private Doctor() {
    }

    public static void main(String[] args) {
        boolean open = args.length > 0 && args[0].equals("--open");
        DeviceSupport devices = DeviceSupport.get();
        System.out.println("CUDA: " + devices.describe());
        devices.details().forEach(System.out::println);
        if (open) {
            try (Communicator c = Ferry.open()) {
                System.out.println(Ferry.lastReport().table());
                System.out.println("opened " + c.backend() + ": rank " + c.rank() + " of " + c.size()
                        + ", device buffers " + (c.supportsDeviceBuffers() ? "yes" : "no"));
            } catch (BackendUnavailableException e) {
                System.err.println(e.getMessage());
                System.exit(2);
            }
        } else {
            SelectionReport r = Ferry.report();
            System.out.println(r.table());
        }
    }
}
