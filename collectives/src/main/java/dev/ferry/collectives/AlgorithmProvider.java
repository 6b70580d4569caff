// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives;

import java.util.List;

/**
 * Makes the algorithms of one module for a communicator, found with {@link java.util.ServiceLoader}
 * ({@code META-INF/services/dev.ferry.collectives.AlgorithmProvider}): this module's own, and those
 * of modules that bring a library of their own (NCCL). Adding an algorithm is its class, its line in
 * a provider, its rows in the cost tables and its tests.
 */
public interface AlgorithmProvider {
    /** The algorithms for the communicator of {@code group} (called when it is made, on every rank alike). */
    List<Algorithm> algorithms(Group group);
}
