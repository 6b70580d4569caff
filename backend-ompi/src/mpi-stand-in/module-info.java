// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/**
 * An empty module named as Open MPI's mpi.jar, for compiling module dev.ferry.ompi (which requires
 * it statically) without mpi.jar: never packaged, never on a run-time path.
 */
module mpi {
}
