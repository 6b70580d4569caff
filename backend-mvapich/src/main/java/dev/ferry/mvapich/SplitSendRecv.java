// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Settings;

/**
 * {@code sendRecv} as {@code MPI_Irecv} + {@code MPI_Isend} + two {@code MPI_Wait}s, for libraries
 * whose {@code MPI_Sendrecv} can return without sending.
 *
 * <p>In the ch3 device (MVAPICH2 2.3.7, and MPICH 3.x), {@code MPI_Sendrecv} first posts its
 * receive with {@code MPID_Irecv}. When a complete eager message that matches is already waiting
 * (it arrived before the call) and it is longer than the receive buffer, {@code MPID_Irecv}
 * returns {@code MPI_ERR_TRUNCATE} at once, and {@code MPI_Sendrecv} jumps to its error exit:
 * its send half is never posted. Under {@code MPI_ERRORS_RETURN} the caller gets the truncation
 * error, and the peer waits forever for the message (found by the bad-input matrix's
 * mismatched-sizes property under MVAPICH2's mpiexec with 4 ranks on 2 cores, where the message
 * often arrives first: the peer's watchdog fired in its {@code sendRecv}, or in the next
 * {@code allReduce}; with 2 ranks the receiver is usually waiting already, so it passed). MPICH
 * 4's ch4 device does not fail the receive early.
 *
 * <p>{@link MvapichTransport} then posts the receive first as well; if posting it fails, the
 * send half is still made (a blocking {@code MPI_Send}) before the receive's error is thrown, so
 * the peer always gets its message, as {@code MPI_Sendrecv} promises. {@code -Dferry.mvapich.splitSendRecv=auto|true|false}
 * (default auto: on for the ch3 device).
 */
final class SplitSendRecv {
    private SplitSendRecv() {
    }

    /** Why sendRecv is split for this library (for the probe's workarounds), or null. */
    static String decide(Settings settings, LibraryVersion version) {
        String setting = settings.get(MvapichSettings.SPLIT_SEND_RECV);
        if (setting.equals("false")) {
            return null;
        }
        if (setting.equals("true")) {
            return "sendRecv as MPI_Irecv + MPI_Isend (-Dferry.mvapich.splitSendRecv=true)";
        }
        if (version.device().startsWith("ch3")) {
            return "sendRecv as MPI_Irecv + MPI_Isend: " + version.name() + "'s MPI_Sendrecv (device " + version.device()
                    + ") returns a truncation without sending when the message was already there, and the peer hangs; "
                    + "-Dferry.mvapich.splitSendRecv=false to use MPI_Sendrecv";
        }
        return null;
    }
}
