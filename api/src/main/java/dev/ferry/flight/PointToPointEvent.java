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
 * JFR event {@code dev.ferry.PointToPoint}: one point-to-point call of this rank (send, receive,
 * sendRecv, probe, the start of isend or irecv, the receive of a matched message), from its start
 * to its return.
 */
@Name("dev.ferry.PointToPoint")
@Label("Ferry Point-to-Point")
@Category({"Ferry"})
@Description("A point-to-point operation of this rank on one communicator")
@StackTrace(false)
final class PointToPointEvent extends jdk.jfr.Event {
    @Label("Rank")
    @Description("World rank of this process")
    int rank;

    @Label("Communicator")
    @Description("The id every rank gives the communicator: 0 for the world, parent.N for one made by collective N of its parent")
    String communicator;

    @Label("Operation Number")
    @Description("The operation's number among this rank's operations on the communicator, from 1")
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

    @Label("Peer")
    @Description("Destination of a send, source of a receive or probe (-1: any source)")
    int peer;

    @Label("Tag")
    @Description("The message tag (-1: any tag)")
    int tag;

    @Label("Source")
    @Description("The source of a sendRecv's receive, else -2")
    int source;

    @Label("Receive Tag")
    @Description("The tag of a sendRecv's receive, else -2")
    int receiveTag;

    @Label("Memory Kind")
    String memory;

    @Label("Algorithm")
    @Description("The algorithm or path that carried the call, as the transport named it; else the backend")
    String algorithm;
}
