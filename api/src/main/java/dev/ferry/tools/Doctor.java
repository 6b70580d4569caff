package dev.ferry.tools;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.SelectionReport;
import dev.ferry.cuda.Cuda;

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
        System.out.println("CUDA: " + Cuda.describe());
        if (Cuda.isAvailable() && Cuda.deviceCount() > 1) {
            StringBuilder sb = new StringBuilder("peer access (row can map column):\n       ");
            for (int j = 0; j < Cuda.deviceCount(); j++) sb.append(String.format("GPU%-3d", j));
            for (int i = 0; i < Cuda.deviceCount(); i++) {
                sb.append(String.format("%n  GPU%-2d", i));
                for (int j = 0; j < Cuda.deviceCount(); j++) sb.append(String.format("%-6s", i == j ? "-" : Cuda.canAccessPeer(i, j) ? "yes" : "no"));
            }
            System.out.println(sb);
        }
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
