// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.BackendUnavailableException;
import dev.ferry.Communicator;
import dev.ferry.CommunicatorClosedException;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.FerryException;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Request;
import java.util.ArrayList;
import java.util.List;

/**
 * What the ranks of a fault job run (see {@code FaultIT}): {@code FaultProgram MODE [ARGS]}. Every
 * rank prints {@code ferry-fault: rank R pid P} first and marks the moments the test measures with
 * {@code ferry-fault: ... at <epoch ms>}.
 *
 * <ul>
 *   <li>{@code lose-rank halt|sigkill|exit|exit-idle}: every rank loops over 8 MiB allReduces
 *       (exit-idle: the last rank's main sleeps between two of them instead); after a second
 *       the last rank leaves from another thread while its main thread is inside one: by
 *       {@code Runtime.halt(7)}, by SIGKILL, or by {@code System.exit(3)} (which runs Ferry's exit
 *       path: no MPI_Finalize while a call is in flight).</li>
 *   <li>{@code watchdog-recv}: rank 0 receives a message nobody sends (source 1, tag 77); with
 *       {@code -Dferry.timeout} the watchdog reports it and aborts the job.</li>
 *   <li>{@code finalize-wait}: rank 0 returns from main while the others stay busy for 20 s; with
 *       {@code -Dferry.timeout} rank 0's MPI_Finalize at exit is reported and the job aborted.</li>
 *   <li>{@code uncaught}: rank 1 throws from main while rank 0 waits for it: the job is aborted.</li>
 *   <li>{@code after-shutdown}: after {@code Ferry.shutdown()} every call is refused with
 *       {@link CommunicatorClosedException}, and the future of a receive pending at shutdown fails
 *       with it; prints {@code ferry-fault: OK}.</li>
 *   <li>{@code bad-setting}: run with a setting value Ferry does not accept: every rank's
 *       {@code Ferry.open()} throws {@link dev.ferry.InvalidSettingException}; prints
 *       {@code ferry-fault: OK} and its message.</li>
 *   <li>{@code exit-without-close}: communicators, buffers and requests left open at a normal end:
 *       MPI_Finalize at exit cleans up, exit 0; prints {@code ferry-fault: OK}.</li>
 * </ul>
 * A backend unavailable in this launch prints {@code ferry-fault: SKIP reason} and exits 0.
 */
public final class FaultProgram {
    private FaultProgram() {
    }

    static void say(String s) {
        System.out.println("ferry-fault: " + s);
        System.out.flush();
    }

    static long now() {
        return System.currentTimeMillis();
    }

    public static void main(String[] args) throws Exception {
        Communicator world;
        try {
            world = Ferry.open();
        } catch (dev.ferry.InvalidSettingException e) {
            if (args[0].equals("bad-setting")) {
                say("OK Ferry.open() refused a setting: " + e.getMessage());
                return;
            }
            throw e;
        } catch (BackendUnavailableException e) {
            say("SKIP " + e.getMessage().lines().findFirst().orElse(""));
            System.exit(0);
            return;
        }
        int rank = world.rank(), size = world.size();
        say("rank " + rank + " pid " + ProcessHandle.current().pid());
        world.barrier();
        switch (args[0]) {
            case "bad-setting" -> say("Ferry.open() accepted every setting: " + dev.ferry.Settings.process().text(dev.ferry.FerrySettings.TIMEOUT));
            case "lose-rank" -> loseRank(world, args[1]);
            case "watchdog-recv" -> {
                try (HostBuffer b = HostBuffer.allocate(16)) {
                    if (rank == 0) {
                        say("rank 0 enters recv(source 1, tag 77) at " + now());
                        world.recv(b, 16, DataType.BYTE, 1, 77);
                        say("rank 0: recv returned: the watchdog did not act");
                    } else {
                        Thread.sleep(2_000); // rank 0's timeout comes first
                        world.barrier();
                    }
                }
            }
            case "finalize-wait" -> {
                if (rank == 0) {
                    say("rank 0 returns from main (MPI_Finalize at exit) at " + now());
                    return;
                }
                Thread.sleep(20_000);
                say("rank " + rank + ": still running after 20 s: the watchdog did not act");
            }
            case "uncaught" -> {
                try (HostBuffer b = HostBuffer.allocate(16)) {
                    if (rank == 1) {
                        Thread.sleep(500);
                        say("rank 1 throws at " + now());
                        throw new IllegalStateException("deliberate failure on rank 1");
                    }
                    if (rank == 0) {
                        world.recv(b, 16, DataType.BYTE, 1, 78);
                    } else {
                        world.barrier();
                    }
                }
            }
            case "after-shutdown" -> afterShutdown(world);
            case "exit-without-close" -> {
                Communicator dup = world.duplicate();
                Communicator half = world.split(rank % 2, rank);
                HostBuffer in = HostBuffer.allocate(1 << 20), out = HostBuffer.allocate(1 << 20);
                dup.allReduce(in, out, 1 << 18, DataType.INT, ReduceOp.SUM);
                half.barrier();
                Request r = dup.irecv(out, 8, DataType.BYTE, (rank + size - 1) % size, 5);
                dup.isend(in, 8, DataType.BYTE, (rank + 1) % size, 5).waitFor();
                r.waitFor();
                world.barrier();
                say("OK rank " + rank + " leaves 2 communicators, 2 buffers open");
            }
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void loseRank(Communicator world, String how) throws Exception {
        int rank = world.rank(), size = world.size();
        int victim = size - 1;
        if (rank == victim) {
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(1_000);
                } catch (InterruptedException e) {
                    return;
                }
                say("rank " + rank + " leaves by " + how + " at " + now() + (how.equals("exit-idle") ? " while main sleeps between calls" : " while main is inside allReduce"));
                switch (how) {
                    case "halt" -> Runtime.getRuntime().halt(7);
                    case "exit", "exit-idle" -> System.exit(3);
                    default -> {
                        try {
                            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
                        } catch (Exception e) {
                            say("cannot SIGKILL myself: " + e);
                        }
                    }
                }
            }, "victim");
            t.setDaemon(true);
            t.start();
        }
        long start = now();
        try (HostBuffer a = HostBuffer.allocate(8 << 20); HostBuffer b = HostBuffer.allocate(8 << 20)) {
            int i = 0;
            while (now() - start < 120_000) {
                if (rank == victim && how.equals("exit-idle")) {
                    Thread.sleep(60_000); // main between two calls, as a program computing; the others wait in allReduce
                }
                world.allReduce(a, b, 2 << 20, DataType.INT, ReduceOp.SUM);
                i++;
            }
            say("rank " + rank + ": " + i + " allReduces and still running after 120 s: the loss of rank " + victim + " went unnoticed");
            System.exit(2);
        } catch (FerryException e) {
            say("rank " + rank + " got " + e + " at " + now());
            System.exit(1);
        }
    }

    private static void afterShutdown(Communicator world) {
        Communicator dup = world.duplicate();
        HostBuffer b = HostBuffer.allocate(64);
        HostBuffer never = HostBuffer.allocate(8);
        // the future of a receive still pending at shutdown (from itself: nothing comes) must end, not wait for ever
        java.util.concurrent.CompletableFuture<dev.ferry.Status> pending = world.threadLevel() == dev.ferry.ThreadLevel.MULTIPLE
                ? world.irecv(never, 8, DataType.BYTE, world.rank(), 99).future() : null;
        Ferry.shutdown();
        List<String> wrong = new ArrayList<>();
        if (pending != null) {
            try {
                pending.get(30, java.util.concurrent.TimeUnit.SECONDS);
                wrong.add("the future of a receive pending at shutdown completed normally");
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof CommunicatorClosedException)) {
                    wrong.add("the future of a receive pending at shutdown failed with " + e.getCause());
                }
            } catch (java.util.concurrent.TimeoutException | InterruptedException e) {
                wrong.add("the future of a receive pending at shutdown did not complete within 30 s");
            }
        }
        int peer = (world.rank() + 1) % world.size();
        expectClosed(wrong, "barrier", world::barrier);
        expectClosed(wrong, "send", () -> world.send(b, 1, DataType.BYTE, peer, 0));
        expectClosed(wrong, "isend", () -> world.isend(b, 1, DataType.BYTE, peer, 0));
        expectClosed(wrong, "recv", () -> world.recv(b, 1, DataType.BYTE, peer, 0));
        expectClosed(wrong, "allReduce on a duplicate", () -> dup.allReduce(b, b.slice(32), 1, DataType.INT, ReduceOp.SUM));
        expectClosed(wrong, "duplicate", world::duplicate);
        expectClosed(wrong, "split", () -> world.split(0, 0));
        try {
            dup.close();
            world.close();
            b.close();
            never.close(); // its receive was left pending at shutdown: the buffer is closed, its memory stays pinned
        } catch (RuntimeException e) {
            wrong.add("close after shutdown threw " + e);
        }
        if (wrong.isEmpty()) {
            say("OK rank " + world.rank() + ": every call after Ferry.shutdown() threw CommunicatorClosedException");
        } else {
            say("WRONG rank " + world.rank() + ": " + wrong);
            System.exit(1);
        }
    }

    private static void expectClosed(List<String> wrong, String what, Runnable call) {
        try {
            call.run();
            wrong.add(what + " returned normally");
        } catch (CommunicatorClosedException e) {
            // expected
        } catch (RuntimeException e) {
            wrong.add(what + " threw " + e);
        }
    }
}
