// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Properties;

/**
 * Puts JCuda's native libraries where JCuda's own loader looks for them, atomically, before JCuda
 * is first used.
 *
 * <p>JCuda ({@code jcuda.LibUtils}) copies {@code lib/libJCudaDriver-VERSION-linux-ARCH.so} out of
 * the natives jar into {@code java.io.tmpdir} under that fixed name, unless a file of that name
 * exists, and then loads it. Two ranks starting together on a fresh node race there: one is still
 * writing the file while the other finds it present and maps it, and that JVM dies of SIGBUS in
 * the dynamic loader (seen on the GPU machine, rank 1 of 2, on the first start after boot). A file
 * cut short by a crash stays broken for every later start. Here each library is written to a
 * private temporary file and renamed into place, so the name only ever points at a whole library;
 * one already there with the same content is left alone.
 *
 * <p>Where: a folder of the user's own, {@code java.io.tmpdir/ferry-USER/jcuda}, made with mode
 * 0700 and used only when it belongs to this user and nobody else may write it, so that two users
 * of one node never load each other's copies (a file another user left under JCuda's fixed name in
 * a shared {@code /tmp} would otherwise be loaded as it is). JCuda is pointed at it by
 * {@code java.io.tmpdir} while its classes load ({@link #whileLoading}). When that folder cannot
 * be used, a fresh private temporary folder is.
 */
final class JCudaNatives {
    /** The libraries JCuda's driver and runtime bindings load. */
    private static final String[] LIBRARIES = {"JCudaDriver", "JCudaRuntime"};

    private JCudaNatives() {
    }

    /**
     * Places the libraries into this user's private folder and runs {@code load} (what first
     * touches JCuda) with {@code java.io.tmpdir} pointing there, so that JCuda's loader finds them.
     */
    static void whileLoading(Runnable load) {
        Path dir = null;
        try {
            dir = privateDir(Path.of(System.getProperty("java.io.tmpdir")), System.getProperty("user.name", "user"));
            prepare(dir);
        } catch (IOException | RuntimeException e) {
            dir = null; // JCuda's own loader does as before
        }
        String tmp = System.getProperty("java.io.tmpdir");
        if (dir != null) {
            System.setProperty("java.io.tmpdir", dir.toString());
        }
        try {
            load.run();
        } finally {
            System.setProperty("java.io.tmpdir", tmp);
        }
    }

    /** {@code base/ferry-USER/jcuda}, mode 0700 and owned by this user; else a new private temporary folder. */
    static Path privateDir(Path base, String user) throws IOException {
        java.nio.file.attribute.FileAttribute<?> owner = java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        Path top = base.resolve("ferry-" + user.replaceAll("[^A-Za-z0-9._-]", "_"));
        Path dir = top.resolve("jcuda");
        try {
            for (Path p : new Path[] {top, dir}) {
                if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    try {
                        Files.createDirectory(p, owner);
                    } catch (java.nio.file.FileAlreadyExistsException raced) {
                        // another rank of this user made it
                    }
                }
                if (!ours(p)) {
                    throw new IOException(p + " is not a folder of this user's alone");
                }
            }
            return dir;
        } catch (IOException | UnsupportedOperationException e) {
            return Files.createTempDirectory("ferry-jcuda-", owner);
        }
    }

    /** A real folder (no link), owned by this process's user, that nobody else may write or enter. */
    private static boolean ours(Path p) throws IOException {
        if (!Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        java.nio.file.attribute.PosixFileAttributes a = Files.readAttributes(p, java.nio.file.attribute.PosixFileAttributes.class,
                java.nio.file.LinkOption.NOFOLLOW_LINKS);
        String me = System.getProperty("user.name");
        return a.owner().getName().equals(me)
                && java.util.Collections.disjoint(a.permissions(), java.util.EnumSet.of(
                        java.nio.file.attribute.PosixFilePermission.GROUP_WRITE, java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE,
                        java.nio.file.attribute.PosixFilePermission.GROUP_EXECUTE, java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE));
    }

    /**
     * Places every JCuda library of this platform that the class loader finds (on the class path,
     * or in module jcuda.natives on the module path) into {@code dir}; returns how many it wrote.
     */
    static int prepare(Path dir) {
        String version = jcudaVersion();
        String arch = arch();
        if (version == null || arch == null || !System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            return 0;
        }
        int written = 0;
        for (String lib : LIBRARIES) {
            String file = "lib" + lib + "-" + version + "-linux-" + arch + ".so";
            try {
                if (place(dir, file)) {
                    written++;
                }
            } catch (IOException | RuntimeException e) {
                // JCuda's loader tries on its own
            }
        }
        return written;
    }

    /** Writes the resource {@code lib/FILE} to {@code dir/FILE} by rename; false when absent or already there with the same bytes. */
    private static boolean place(Path dir, String file) throws IOException {
        byte[] content;
        // through the class loader, which searches every jar: on the module path a class's own
        // getResourceAsStream searches only its module, and the natives are in jcuda-natives
        try (InputStream in = JCudaNatives.class.getClassLoader().getResourceAsStream("lib/" + file)) {
            if (in == null) {
                return false;
            }
            content = in.readAllBytes();
        }
        Path target = dir.resolve(file);
        if (Files.isRegularFile(target, java.nio.file.LinkOption.NOFOLLOW_LINKS) && Files.size(target) == content.length
                && java.util.Arrays.equals(Files.readAllBytes(target), content)) {
            return false;
        }
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, file, ".part");
        try {
            Files.write(tmp, content);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return true;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The JCuda version of the class or module path (its Maven properties), or null. */
    private static String jcudaVersion() {
        try (InputStream in = JCudaNatives.class.getClassLoader().getResourceAsStream("META-INF/maven/org.jcuda/jcuda/pom.properties")) {
            if (in == null) {
                return null;
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException e) {
            return null;
        }
    }

    /** The architecture as JCuda names it, or null for one this does not know. */
    private static String arch() {
        return switch (System.getProperty("os.arch", "").toLowerCase(Locale.ROOT)) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> null;
        };
    }
}
