package dev.ferry.mvapich;

import dev.ferry.Ferry;
import java.util.Locale;

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
 * <p>Here the receive is posted first as well; if posting it fails, the send half is still made
 * (a blocking {@code MPI_Send}) before the receive's error is thrown, so the peer always gets its
 * message, as {@code MPI_Sendrecv} promises. {@code -Dferry.mvapich.splitSendRecv=auto|true|false}
 * (default auto: on for the ch3 device).
 */
final class SplitSendRecv {
    private SplitSendRecv() {
    }

    /** Why sendRecv is split for this library (for the probe's workarounds), or null. */
    static String decide(LibraryVersion version) {
        String setting = Ferry.setting("ferry.mvapich.splitSendRecv", "auto").toLowerCase(Locale.ROOT);
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

    /**
     * Receives {@code recvBytes} bytes and sends {@code sendBytes} bytes at once; returns this
     * thread's scratch with the receive's status in it. {@code what} names the call in errors.
     */
    static MpichAbi.Scratch sendRecv(long sendBuf, int sendBytes, int dest, int sendTag,
                                     long recvBuf, int recvBytes, int source, int recvTag, int comm, String what) {
        MpichAbi.Scratch s = MpichAbi.scratch();
        int rc = MpichAbi.irecv(recvBuf, recvBytes, MpichConstants.MPI_BYTE, source, recvTag, comm, s.request);
        if (rc != MpichConstants.MPI_SUCCESS) {
            // the receive failed on posting (ch3: a waiting message that does not fit): still send
            RuntimeException failure = MvapichRuntime.error(what + ": MPI_Irecv", rc);
            int sent = MpichAbi.send(sendBuf, sendBytes, MpichConstants.MPI_BYTE, dest, sendTag, comm);
            if (sent != MpichConstants.MPI_SUCCESS) {
                failure.addSuppressed(MvapichRuntime.error(what + ": MPI_Send", sent));
            }
            throw failure;
        }
        int recvRequest = s.request();
        rc = MpichAbi.isend(sendBuf, sendBytes, MpichConstants.MPI_BYTE, dest, sendTag, comm, s.request);
        if (rc != MpichConstants.MPI_SUCCESS) {
            // not reached with checked arguments; the posted receive stays posted, as in MPI_Sendrecv
            throw MvapichRuntime.error(what + ": MPI_Isend", rc);
        }
        int rcSend = MpichAbi.await(s.request, s.status);
        s.request(recvRequest);
        int rcRecv = MpichAbi.await(s.request, s.status);
        if (rcRecv != MpichConstants.MPI_SUCCESS) {
            RuntimeException failure = MvapichRuntime.error(what + ": MPI_Wait (receive)", rcRecv);
            if (rcSend != MpichConstants.MPI_SUCCESS) {
                failure.addSuppressed(MvapichRuntime.error(what + ": MPI_Wait (send)", rcSend));
            }
            throw failure;
        }
        if (rcSend != MpichConstants.MPI_SUCCESS) {
            throw MvapichRuntime.error(what + ": MPI_Wait (send)", rcSend);
        }
        return s;
    }
}
