// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The real libnccl.so.2 of the wheel that scripts/install-nccl.sh unpacked into .ferry/wheels
 * (the build installs it first and fails when it cannot): it loads on a machine without a GPU,
 * its version matches its header, and its error strings are read. Never skipped.
 */
class NcclLibraryTest {

    /** The wheel's include folder (the build passes ferry.nccl.wheels). */
    static Path include() {
        String w = System.getProperty("ferry.nccl.wheels");
        assertTrue(w != null, "the build sets -Dferry.nccl.wheels (backend-nccl/pom.xml)");
        Path inc = Path.of(w, "nccl", "nvidia", "nccl", "include");
        assertTrue(Files.isRegularFile(inc.resolve("nccl.h")), "scripts/install-nccl.sh must have unpacked the NCCL wheel: " + inc + "/nccl.h is missing");
        return inc;
    }

    static int headerDefine(String name) throws Exception {
        for (String line : Files.readAllLines(include().resolve("nccl.h"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 3 && f[0].equals("#define") && f[1].equals(name)) {
                return Integer.parseInt(f[2]);
            }
        }
        throw new AssertionError(name + " is not defined in nccl.h");
    }

    @Test
    void theWheelsLibraryLoadsWithoutAGpu() {
        assertNull(Nccl.unavailabilityCause(), () -> "NCCL did not load: " + Nccl.unavailabilityCause());
        assertTrue(Nccl.isAvailable());
        assertTrue(Nccl.library().toString().endsWith("nvidia/nccl/lib/libnccl.so.2"), Nccl.library().toString());
        assertTrue(Nccl.foundBy().contains("wheel"), Nccl.foundBy());
    }

    @Test
    void versionMatchesTheHeader() throws Exception {
        String expected = headerDefine("NCCL_MAJOR") + "." + headerDefine("NCCL_MINOR") + "." + headerDefine("NCCL_PATCH");
        assertEquals(expected, Nccl.version());
        assertEquals(headerDefine("NCCL_VERSION_CODE"), Nccl.versionCode());
        assertEquals(Nccl.versionCode() >= NcclTypes.versionCode(2, 18, 0), Nccl.hasCommSplit());
    }

    @Test
    void errorStringsAreNcclsOwn() {
        assertEquals("no error", Nccl.errorString(NcclTypes.SUCCESS));
        for (int r = 1; r < NcclTypes.RESULT_NAMES.size(); r++) {
            String s = Nccl.errorString(r);
            assertFalse(s.isBlank(), "ncclGetErrorString(" + r + ")");
            assertFalse(s.equals(Nccl.errorString(NcclTypes.SUCCESS)), "result " + r + ": " + s);
        }
        assertTrue(Nccl.errorString(NcclTypes.INVALID_USAGE).toLowerCase().contains("usage"), Nccl.errorString(NcclTypes.INVALID_USAGE));
        assertTrue(Nccl.errorString(NcclTypes.UNHANDLED_CUDA_ERROR).toLowerCase().contains("cuda"), Nccl.errorString(NcclTypes.UNHANDLED_CUDA_ERROR));
    }

    @Test
    void aFailedCallIsAnExceptionNamingTheCallNcclsTextAndWhatToDo() {
        NcclException e = assertThrows(NcclException.class, () -> Nccl.check("ncclAllReduce(4 INT, SUM)", NcclTypes.INVALID_ARGUMENT, 0));
        assertEquals(NcclTypes.INVALID_ARGUMENT, e.result());
        assertTrue(e.getMessage().startsWith("ncclAllReduce(4 INT, SUM) failed: ncclInvalidArgument (4)"), e.getMessage());
        assertTrue(e.getMessage().contains(Nccl.errorString(NcclTypes.INVALID_ARGUMENT)), e.getMessage());
        assertTrue(e.getMessage().contains("refused"), "says what to do: " + e.getMessage());
        Nccl.check("ncclGroupStart", NcclTypes.SUCCESS, 0); // no exception
    }

    @Test
    void ncclGetLastErrorIsReadWithoutACommunicator() {
        // NCCL >= 2.13 has it; with no communicator it returns the process's last error text (empty here)
        assertTrue(NcclAbi.hasLastError() == (Nccl.versionCode() >= NcclTypes.versionCode(2, 13, 0)));
        NcclAbi.lastError(0); // must not crash
    }

    @Test
    void getUniqueIdWithoutAGpuIsAnAnswerNotACrash() {
        // ncclGetUniqueId needs no GPU (bootstrap network only); on a machine without a network interface
        // NCCL may refuse, which must come back as a result code
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            var id = a.allocate(NcclAbi.UNIQUE_ID);
            int rc = NcclAbi.getUniqueId(id);
            assertTrue(rc >= 0 && rc < NcclTypes.RESULT_NAMES.size(), "ncclGetUniqueId returned " + rc);
            if (rc == NcclTypes.SUCCESS) {
                boolean nonZero = false;
                for (long i = 0; i < NcclTypes.UNIQUE_ID_BYTES; i++) nonZero |= id.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != 0;
                assertTrue(nonZero, "a unique id has content");
            }
        }
    }

    @Test
    void environmentListsOnlyNcclVariables() {
        Map<String, String> e = Nccl.environment(Map.of("NCCL_DEBUG", "WARN", "PATH", "/bin", "NCCL_IB_DISABLE", "1"));
        assertEquals(Map.of("NCCL_DEBUG", "WARN", "NCCL_IB_DISABLE", "1"), e);
        assertEquals("[NCCL_DEBUG, NCCL_IB_DISABLE]", e.keySet().toString(), "sorted");
    }
}
