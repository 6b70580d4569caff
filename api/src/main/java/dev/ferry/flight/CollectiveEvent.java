// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event {@code dev.ferry.Collective}: one collective call of this rank, from its start to its
 * return (for a non-blocking collective: its start). Recorded whenever a JFR recording enables it
 * ({@code -XX:StartFlightRecording} enables every Ferry event); without stack traces unless the
 * recording asks for them ({@code dev.ferry.Collective#stackTrace=true}).
 */
@Name("dev.ferry.Collective")
@Label("Ferry Collective")
@Category({"Ferry"})
@Description("A collective operation of this rank on one communicator")
@StackTrace(false)
final class CollectiveEvent extends jdk.jfr.Event {
    @Label("Rank")
    @Description("World rank of this process")
    int rank;

    @Label("Communicator")
    @Description("The id every rank gives the communicator: 0 for the world, parent.N for one made by collective N of its parent")
    String communicator;

    @Label("Collective Number")
    @Description("The collective's number on its communicator, from 1: the same on every rank for the same collective")
    long sequence;

    @Label("Operation")
    String operation;

    @Label("Bytes")
    @DataAmount
    long bytes;

    @Label("Count")
    long count;

    @Label("Datatype")
    String datatype;

    @Label("Root")
    @Description("The root of a rooted collective, else -1")
    int root;

    @Label("Memory Kind")
    String memory;

    @Label("Algorithm")
    @Description("The algorithm or path that carried the call, as the transport named it; else the backend")
    String algorithm;
}
