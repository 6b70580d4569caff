// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Buffer;
import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.cuda.Cuda;

/**
 * What the ranks of a flight-recorder job run (see {@code FlightRecorderIT}; with device buffers,
 * {@code scripts/device-run.sh hang}): {@code HangProgram CASE [host|device]}, on 3 ranks, with
 * {@code -Dferry.timeout}; {@code device} puts both buffers in GPU memory. Every rank prints {@code ferry-hang: rank R pid P};
 * rank 0 prints {@code ferry-hang: the hang begins at <epoch ms>} just before the call that hangs.
 *
 * <p>First the ranks make communicators in different numbers (the world split in halves, and a
 * duplicate of the even half on the even ranks only), so that a process-local count of
 * communicators differs between ranks; then {@code work}, a duplicate of the world (collective #2
 * of the world: communicator {@code 0.2} on every rank), carries 6 collectives (#1 to #6: three
 * pairs of allReduce and barrier) and then the case, at collective #7:
 * <ul>
 *   <li>{@code skip}: ranks 0 and 1 call allReduce; rank 2 does not, and returns from main (MPI_Finalize);</li>
 *   <li>{@code order}: ranks 0 and 2 call allReduce then barrier; rank 1 barrier then allReduce;</li>
 *   <li>{@code count}: a broadcast of 131072 longs from rank 0, of 65536 on rank 1 (the MPI fails it there: truncation);</li>
 *   <li>{@code root}: a broadcast of 1 MiB from root 0, from root 1 on rank 1;</li>
 *   <li>{@code send}: rank 0 sends 4 MiB to rank 1 (tag 5), which calls barrier instead, as rank 2 does;</li>
 *   <li>{@code dead}: rank 2 halts (exit code 7) where it would call allReduce; ranks 0 and 1 call it.</li>
 * </ul>
 * A backend unavailable in this launch prints {@code ferry-hang: SKIP reason} and exits 0.
 */
public final class HangProgram {
    private HangProgram() {
    }

    static void say(String s) {
        System.out.println("ferry-hang: " + s);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Communicator world;
        try {
            world = Ferry.open();
        } catch (BackendUnavailableException e) {
            say("SKIP " + e.getMessage().lines().findFirst().orElse(""));
            System.exit(0);
            return;
        }
        int rank = world.rank();
        say("rank " + rank + " pid " + ProcessHandle.current().pid());
        Communicator half = world.split(rank % 2, rank);                    // world collective #1
        Communicator evenOnly = rank % 2 == 0 ? half.duplicate() : null;     // only the even ranks make this one
        Communicator work = world.duplicate();                               // world collective #2: "0.2" everywhere
        long big = 1 << 17; // longs: 1 MiB, past every library's eager limit
        boolean device = args.length > 1 && args[1].equals("device");
        Buffer a = device ? Cuda.allocate(4 << 20) : HostBuffer.allocate(4 << 20);
        Buffer b = device ? Cuda.allocate(4 << 20) : HostBuffer.allocate(4 << 20);
        try (AutoCloseable freeA = (AutoCloseable) a; AutoCloseable freeB = (AutoCloseable) b) {
            for (int i = 0; i < 3; i++) {
                work.allReduce(a, b, 8, DataType.LONG, ReduceOp.SUM);
                work.barrier();
            }
            if (evenOnly != null) evenOnly.barrier();
            if (rank == 0) say("the hang begins at " + System.currentTimeMillis());
            switch (args[0]) {
                case "skip" -> {
                    if (rank == 2) return; // MPI_Finalize at exit, while the others wait in allReduce #7
                    work.allReduce(a, b, 8, DataType.LONG, ReduceOp.SUM);
                }
                case "order" -> {
                    if (rank == 1) {
                        work.barrier();
                        work.allReduce(a, b, 8, DataType.LONG, ReduceOp.SUM);
                    } else {
                        work.allReduce(a, b, 8, DataType.LONG, ReduceOp.SUM);
                        work.barrier();
                    }
                }
                case "count" -> work.broadcast(a, rank == 1 ? big / 2 : big, DataType.LONG, 0);
                case "root" -> work.broadcast(a, 1 << 20, DataType.BYTE, rank == 1 ? 1 : 0);
                case "send" -> {
                    if (rank == 0) work.send(a, 4 * big, DataType.LONG, 1, 5);
                    work.barrier();
                }
                case "dead" -> {
                    if (rank == 2) Runtime.getRuntime().halt(7);
                    work.allReduce(a, b, 8, DataType.LONG, ReduceOp.SUM);
                }
                default -> throw new IllegalArgumentException("unknown case " + args[0]);
            }
            work.barrier();
            say("rank " + rank + ": the case '" + args[0] + "' did not hang");
        }
    }
}
