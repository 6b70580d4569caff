// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.Ferry;
import java.util.function.BiFunction;

/** The main of every example: open the world, parse the options, run, print rank 0's result line, exit. */
final class Examples {
    private Examples() {
    }

    /** Exit code 0 when the check passed or was skipped, 1 when it failed, 2 for bad options. */
    static void main(String[] args, BiFunction<Communicator, Options, Outcome> example) {
        int code;
        try (Communicator world = Ferry.open()) {
            Options options = parse(args, world.rank());
            if (options == null) {
                code = 2;
            } else {
                Outcome outcome = example.apply(world, options);
                if (world.rank() == 0) {
                    System.out.println(outcome.line());
                }
                code = outcome.passed() ? 0 : 1;
            }
        }
        System.out.flush();
        System.exit(code);
    }

    /** The options, or null after rank 0 printed why they are wrong. */
    static Options parse(String[] args, int rank) {
        try {
            return Options.parse(args);
        } catch (IllegalArgumentException e) {
            if (rank == 0) {
                System.err.println(e.getMessage());
            }
            return null;
        }
    }
}
