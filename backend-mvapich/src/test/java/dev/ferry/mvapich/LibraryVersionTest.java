// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mvapich;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.mvapich.LibraryVersion.Flavor;
import org.junit.jupiter.api.Test;

/** The family member and version read from MPI_Get_library_version strings of each member. */
class LibraryVersionTest {

    @Test
    void mpich() {
        LibraryVersion v = LibraryVersion.parse("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n"
                + "MPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--prefix=/usr --with-device=ch4:ucx --without-yaksa\n");
        assertEquals(Flavor.MPICH, v.flavor());
        assertEquals("MPICH 4.0.2", v.name());
        assertEquals("ch4:ucx", v.device());
        assertFalse(v.cudaBuild());
    }

    @Test
    void mpichBuiltWithCuda() {
        LibraryVersion v = LibraryVersion.parse("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\n"
                + "MPICH configure:\t--prefix=/opt/mpich-cuda --with-cuda=/usr/local/cuda --with-cuda-sm=90\n");
        assertEquals(Flavor.MPICH, v.flavor());
        assertTrue(v.cudaBuild());
    }

    @Test
    void mvapich2() {
        LibraryVersion v = LibraryVersion.parse("MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022\n"
                + "MVAPICH2 Device       :\tch3:mrail\nMVAPICH2 configure    :\t--prefix=/opt/mvapich2 --enable-threads=multiple\n");
        assertEquals(Flavor.MVAPICH, v.flavor());
        assertEquals("MVAPICH2 2.3.7", v.name());
        assertEquals("ch3:mrail", v.device());
        assertFalse(v.cudaBuild());
        assertTrue(v.flavor().isMvapich());
    }

    @Test
    void mvapich2WithCuda() {
        LibraryVersion v = LibraryVersion.parse("MVAPICH2 Version      :\t2.3.7\nMVAPICH2 configure    :\t--prefix=/opt/mv2 --enable-cuda --with-cuda=/usr/local/cuda\n");
        assertEquals(Flavor.MVAPICH, v.flavor());
        assertTrue(v.cudaBuild());
    }

    @Test
    void mvapich2Gdr() {
        LibraryVersion v = LibraryVersion.parse("MVAPICH2-GDR Version  :\t2.3.7\nMVAPICH2-GDR Release date :\tThu Jul 14 22:00:00 EST 2022\n"
                + "MVAPICH2-GDR Device   :\tch3:mrail\n");
        assertEquals(Flavor.MVAPICH2_GDR, v.flavor());
        assertEquals("MVAPICH2-GDR 2.3.7", v.name());
        assertTrue(v.cudaBuild());
        assertEquals("MVAPICH2-GDR", v.flavor().label());
    }

    @Test
    void mvapich3() {
        LibraryVersion v = LibraryVersion.parse("MVAPICH Version:\t3.0\nMVAPICH Release date:\t2024\nMVAPICH Device:\tch4:ofi\n");
        assertEquals(Flavor.MVAPICH, v.flavor());
        assertEquals("MVAPICH 3.0", v.name());
    }

    @Test
    void intelMpi() {
        assertEquals("Intel MPI 2021.6", LibraryVersion.parse("Intel(R) MPI Library 2021.6 for Linux* OS\n").name());
        LibraryVersion old = LibraryVersion.parse("Intel(R) MPI Library 2019 Update 4 for Linux* OS\n");
        assertEquals(Flavor.INTEL_MPI, old.flavor());
        assertEquals("Intel MPI 2019 Update 4", old.name());
    }

    @Test
    void crayMpich() {
        LibraryVersion v = LibraryVersion.parse("MPI VERSION    : CRAY MPICH version 8.1.23.3 (ANL base 3.4a2)\nMPI BUILD INFO : Built Tue Nov 29 2022\n");
        assertEquals(Flavor.CRAY_MPICH, v.flavor());
        assertEquals("Cray MPICH 8.1.23.3", v.name());
    }

    @Test
    void somethingElse() {
        LibraryVersion v = LibraryVersion.parse("Some MPI 1.0, built yesterday");
        assertEquals(Flavor.OTHER, v.flavor());
        assertEquals("Some MPI 1.0, built yesterday", v.name());
        assertEquals(Flavor.OTHER, LibraryVersion.parse(null).flavor());
    }
}
