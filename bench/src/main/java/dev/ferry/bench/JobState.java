// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import dev.ferry.Communicator;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * The parameters every benchmark shares, and the communicator and memory kind they select. The
 * benchmarks' {@code @State} classes extend it and call {@link #open()} from their own
 * {@code @Setup}. {@link BenchMain} sets each parameter to exactly one value per JMH run, so that
 * every rank runs the same sequence.
 */
@State(Scope.Benchmark)
public abstract class JobState {
    /** Backend name, as for {@code Ferry.open(name)}. */
    @Param("ompi")
    public String backend;

    /** Memory kind of the buffers: {@code pageable}, {@code pinned} or {@code device}. */
    @Param("pageable")
    public String mem;

    /** Message size in bytes. */
    @Param("8")
    public long size;

    /** Ranks in the job (a check, and a column of the results). */
    @Param("2")
    public int ranks;

    /** The measured communicator. */
    protected Communicator comm;

    /** The memory kind of {@link #mem}. */
    protected Memory memory;

    /** Looks up the communicator and prepares the calling thread for the memory kind. */
    protected void open() {
        comm = Lockstep.communicator(backend, ranks);
        memory = Memory.parse(mem);
        memory.prepareThread();
    }
}
