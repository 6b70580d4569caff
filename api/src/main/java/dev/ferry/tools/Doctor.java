package dev.ferry.tools;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.SelectionReport;
import dev.ferry.spi.CollectivePlanning;
import dev.ferry.spi.DeviceSupport;
import java.util.ServiceLoader;

/**
 * {@code ferry doctor}: what Ferry sees on this machine. Prints the provider table (every backend,
 * available or not and why, with MPI library, version and CUDA-awareness), the CUDA driver and
 * devices, peer access between GPUs, and the collectives planner's measured cost tables. With
 * {@code --open} (under the launcher), also opens the selected backend and prints, on rank 0, the
 * planner's choice per collective at a ladder of sizes; exits 2 when no backend can be opened.
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
                for (CollectivePlanning p : ServiceLoader.load(CollectivePlanning.class, Doctor.class.getClassLoader())) {
                    if (c.rank() == 0) {
                        System.out.println("collectives (the planner's choice when every rank passes device memory, FLOAT):");
                        p.describe(c).forEach(l -> System.out.println("  " + l));
                    }
                }
            } catch (BackendUnavailableException e) {
                System.err.println(e.getMessage());
                System.exit(2);
            }
        } else {
            SelectionReport r = Ferry.report();
            System.out.println(r.table());
            for (CollectivePlanning p : ServiceLoader.load(CollectivePlanning.class, Doctor.class.getClassLoader())) {
                System.out.println("collective cost tables (ferry doctor --open under the launcher shows the plan of a communicator):");
                p.describeTables().forEach(l -> System.out.println("  " + l));
            }
        }
    }
}
