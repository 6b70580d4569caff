// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import dev.ferry.Settings;
import java.util.Map;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which libraries get sendRecv as MPI_Irecv + MPI_Isend: the ch3 device (MVAPICH2, MPICH 3), not ch4. */
class SplitSendRecvTest {
    private static final Settings DEFAULTS = Settings.of(Map.of());
    private static final LibraryVersion MVAPICH2_NEMESIS = LibraryVersion.parse("MVAPICH2 Version:     \t2.3.7\n"
            + "MVAPICH2 Release date:\tWed March 02 22:00:00 EST 2022\nMVAPICH2 Device:      \tch3:nemesis\n"
            + "MVAPICH2 configure:   \t--with-device=ch3:nemesis --with-pm=hydra\n");

    @Test
    void ch3IsSplitAndTheProbeSaysWhy() {
        String why = SplitSendRecv.decide(DEFAULTS, MVAPICH2_NEMESIS);
        assertNotNull(why);
        assertTrue(why.contains("MVAPICH2 2.3.7") && why.contains("ch3:nemesis") && why.contains("ferry.mvapich.splitSendRecv=false"), why);
        assertNotNull(SplitSendRecv.decide(DEFAULTS, LibraryVersion.parse("MVAPICH2 Version       :\t2.3.7\nMVAPICH2 Device       :\tch3:mrail\n")));
    }

    @Test
    void ch4KeepsMpiSendrecv() {
        assertNull(SplitSendRecv.decide(DEFAULTS, LibraryVersion.parse("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\n")));
        assertNull(SplitSendRecv.decide(DEFAULTS, LibraryVersion.parse("Intel(R) MPI Library 2021.6 for Linux* OS\n")));
    }

    @Test
    void theSettingWins() {
        assertNull(SplitSendRecv.decide(Settings.of(Map.of("ferry.mvapich.splitSendRecv", "false")), MVAPICH2_NEMESIS));
        assertNotNull(SplitSendRecv.decide(Settings.of(Map.of(), Map.of("FERRY_MVAPICH_SPLITSENDRECV", "true")),
                LibraryVersion.parse("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\n")));
    }
}
