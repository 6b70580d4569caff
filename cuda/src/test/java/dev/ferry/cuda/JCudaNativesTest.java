// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JCudaNativesTest {
    @TempDir
    Path dir;

    private List<Path> libraries() throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("libJCuda")).sorted().toList();
        }
    }

    private static long resourceSize(Path p) throws Exception {
        try (var in = JCudaNatives.class.getResourceAsStream("/lib/" + p.getFileName())) {
            return in.transferTo(java.io.OutputStream.nullOutputStream());
        }
    }

    @Test
    void placesBothLibrariesWholeUnderJCudasNamesAndLeavesThemAloneAfterwards() throws Exception {
        assertEquals(2, JCudaNatives.prepare(dir), "the natives jar of this platform is on the test class path");
        List<Path> libs = libraries();
        assertEquals(2, libs.size(), libs::toString);
        for (Path p : libs) {
            assertTrue(p.getFileName().toString().matches("libJCuda(Driver|Runtime)-\\d+\\.\\d+\\.\\d+-linux-x86_64\\.so"), p.toString());
            assertEquals(resourceSize(p), Files.size(p));
        }
        assertEquals(0, JCudaNatives.prepare(dir), "whole files are not written again");
    }

    @Test
    void replacesAFileCutShort() throws Exception {
        JCudaNatives.prepare(dir);
        Path driver = libraries().get(0);
        long whole = Files.size(driver);
        Files.write(driver, new byte[100]);
        assertEquals(1, JCudaNatives.prepare(dir));
        assertEquals(whole, Files.size(driver));
    }

    @Test
    void concurrentStartsEachSeeOnlyWholeFilesAndLeaveNoPartsBehind() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<Integer>> starts = new ArrayList<>();
            for (int i = 0; i < 8; i++) starts.add(() -> JCudaNatives.prepare(dir));
            for (Future<Integer> f : pool.invokeAll(starts)) f.get();
        } finally {
            pool.shutdown();
        }
        for (Path p : libraries()) assertEquals(resourceSize(p), Files.size(p));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(2, s.count(), "no .part files left");
        }
    }

    @Test
    void replacesAFileOfTheRightSizeButOtherContent() throws Exception {
        JCudaNatives.prepare(dir);
        Path driver = libraries().get(0);
        byte[] whole = Files.readAllBytes(driver);
        byte[] other = whole.clone();
        other[other.length / 2] ^= 0x5A;
        Files.write(driver, other);
        assertEquals(1, JCudaNatives.prepare(dir), "a file of the same size with other bytes is replaced");
        assertTrue(java.util.Arrays.equals(whole, Files.readAllBytes(driver)));
    }

    @Test
    void privateFolderIsTheUsersAloneAndReusedByLaterStarts() throws Exception {
        Path first = JCudaNatives.privateDir(dir, "alice");
        assertEquals(dir.resolve("ferry-alice").resolve("jcuda"), first);
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(first)));
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(first.getParent())));
        assertEquals(first, JCudaNatives.privateDir(dir, "alice"), "the same folder next time");
    }

    @Test
    void aFolderOthersMayWriteIsNeverUsed() throws Exception {
        Path shared = Files.createDirectories(dir.resolve("ferry-bob").resolve("jcuda"));
        Files.setPosixFilePermissions(shared.getParent(), java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        Path got = JCudaNatives.privateDir(dir, "bob");
        assertTrue(!got.startsWith(dir.resolve("ferry-bob")), "a world-writable folder is not used: " + got);
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(got)));
        Files.delete(got);
    }
}
