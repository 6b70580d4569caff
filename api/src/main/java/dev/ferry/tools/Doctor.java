// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.tools;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.Ferry;
import dev.ferry.FerrySettings;
import dev.ferry.SelectionReport;
import dev.ferry.Settings;
import dev.ferry.flight.HangReport;
import dev.ferry.spi.CollectivePlanning;
import dev.ferry.spi.DeviceSupport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * {@code ferry doctor}: what Ferry sees on this machine. Prints the provider table (every backend,
 * available or not and why, with MPI library, version and CUDA-awareness), the CUDA driver and
 * devices, peer access between GPUs, and the collectives planner's measured cost tables. With
 * {@code --open} (under the launcher), also opens the selected backend and prints, on rank 0, the
 * planner's choice per collective at a ladder of sizes; exits 2 when no backend can be opened.
 *
 * <p>{@code --hang [DIR]} (no MPI): asks every running Ferry job whose flight folder is DIR
 * (default {@code ferry.flight.dir}) for its ranks' flight-recorder dumps, and prints each job's
 * {@link HangReport}; exits 2 when no job answered within 10 s.
 */
public final class Doctor {
    private Doctor() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length > 0 && args[0].equals("--hang")) {
            hang(Path.of(args.length > 1 ? args[1] : Settings.process().get(FerrySettings.FLIGHT_DIR)));
            return;
        }
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

    private static void hang(Path dir) throws IOException {
        System.out.println("asking the Ferry jobs that watch " + dir.toAbsolutePath() + " for their flight-recorder dumps ...");
        Map<Path, String> reports = HangReport.ofRunningJobs(dir, 10_000);
        if (reports.isEmpty()) {
            System.err.println("no running Ferry job answered within 10 s (a job's ranks watch the flight folder of their working directory, "
                    + "-Dferry.flight.dir; SIGUSR1 to a rank, or to mpirun, which forwards it, asks one job)");
            System.exit(2);
        }
        reports.forEach((job, text) -> System.out.print("==== " + job + "\n" + text));
    }
}
