// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import org.junit.jupiter.api.Test;

/** Variables set for native libraries: set once where unset, never over the process's own, listed with their reason. */
class ProcessEnvironmentTest {

    @Test
    void setsAnUnsetVariableOnceAndListsIt() throws Throwable {
        String name = "FERRY_PROCESS_ENVIRONMENT_TEST";
        assertTrue(ProcessEnvironment.setIfUnset(name, "42", "a test"), "an unset variable is set");
        assertEquals("42", nativeGetenv(name), "what a native library reads");
        assertFalse(ProcessEnvironment.setIfUnset(name, "43", "a test"), "set once");
        assertEquals("42", nativeGetenv(name));
        assertTrue(ProcessEnvironment.changes().contains(name + "=42 (a test)"), ProcessEnvironment.changes().toString());
    }

    @Test
    void neverChangesAVariableTheProcessStartedWith() throws Throwable {
        String name = "PATH"; // set in every test run
        String before = nativeGetenv(name);
        assertFalse(ProcessEnvironment.setIfUnset(name, "/nowhere", "a test"));
        assertEquals(before, nativeGetenv(name));
    }

    @SuppressWarnings("restricted")
    private static String nativeGetenv(String name) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle getenv = linker.downcallHandle(linker.defaultLookup().find("getenv").orElseThrow(), FunctionDescriptor.of(ADDRESS, ADDRESS));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = (MemorySegment) getenv.invokeExact(a.allocateFrom(name));
            return v.equals(MemorySegment.NULL) ? null : v.reinterpret(Long.MAX_VALUE).getString(0);
        }
    }
}
