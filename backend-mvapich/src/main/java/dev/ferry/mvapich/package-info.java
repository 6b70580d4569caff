// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * Backend {@code mvapich}: the MPICH-ABI family of MPI libraries ({@code libmpi.so.12}:
 * MVAPICH2, MVAPICH2-GDR, MPICH, Intel MPI, Cray MPICH) bound directly with java.lang.foreign.
 * Users select it with {@code -Dferry.backend=mvapich} (or {@code auto} under an MPICH-family
 * launcher) and use {@link dev.ferry.Communicator}; {@link dev.ferry.mvapich.Mvapich} exchanges
 * raw {@code MPI_Comm} handles with native code. See the module's README for the library search
 * order, family and CUDA detection, and limits.
 */
package dev.ferry.mvapich;
