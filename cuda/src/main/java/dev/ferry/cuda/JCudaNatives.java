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
 * one already there with the right size is left alone. When anything here fails, JCuda's own
 * loader does as before.
 */
final class JCudaNatives {
    /** The libraries JCuda's driver and runtime bindings load. */
    private static final String[] LIBRARIES = {"JCudaDriver", "JCudaRuntime"};

    private JCudaNatives() {
    }

    /** Into {@code java.io.tmpdir}, where JCuda looks. */
    static void prepare() {
        prepare(Path.of(System.getProperty("java.io.tmpdir")));
    }

    /** Places every JCuda library of this platform found on the class path into {@code dir}; returns how many it wrote. */
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

    /** Writes the resource {@code /lib/FILE} to {@code dir/FILE} by rename; false when absent or already whole. */
    private static boolean place(Path dir, String file) throws IOException {
        long size;
        try (InputStream in = JCudaNatives.class.getResourceAsStream("/lib/" + file)) {
            if (in == null) {
                return false;
            }
            size = in.transferTo(java.io.OutputStream.nullOutputStream());
        }
        Path target = dir.resolve(file);
        if (Files.isRegularFile(target) && Files.size(target) == size) {
            return false;
        }
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, file, ".part");
        try {
            try (InputStream in = JCudaNatives.class.getResourceAsStream("/lib/" + file)) {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return true;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The JCuda version of the class path (its Maven properties), or null. */
    private static String jcudaVersion() {
        try (InputStream in = JCudaNatives.class.getResourceAsStream("/META-INF/maven/org.jcuda/jcuda/pom.properties")) {
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
