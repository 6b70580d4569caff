// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every field of {@link MpichConstants} against the installed MPICH's {@code mpi.h}, two ways: a C
 * program compiled with {@code mpicc.mpich} prints each macro, {@code sizeof} and {@code offsetof};
 * and the header's {@code #define}s are read as text. A field named {@code MPI_X} is compared with
 * the macro {@code MPI_X}; {@code SIZEOF_MPI_COMM} with {@code sizeof(MPI_Comm)};
 * {@code OFFSETOF_MPI_STATUS_MPI_TAG} with {@code offsetof(MPI_Status, MPI_TAG)}.
 *
 * <p>Settings: {@code ferry.test.mpicc} (compiler, default {@code mpicc.mpich} on the PATH) and
 * {@code ferry.test.mpih} (header, default {@code /usr/include/x86_64-linux-gnu/mpich/mpi.h}).
 */
class MpichConstantsTest {

    /** Field name to value, in declaration order. */
    static Map<String, Integer> constants() throws IllegalAccessException {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Field f : MpichConstants.class.getDeclaredFields()) {
            int m = f.getModifiers();
            if (Modifier.isStatic(m) && Modifier.isFinal(m) && f.getType() == int.class) {
                out.put(f.getName(), f.getInt(null));
            }
        }
        return out;
    }

    /** The C expression a field stands for. */
    static String cExpression(String field) {
        if (field.startsWith("SIZEOF_")) {
            return "sizeof(" + cType(field.substring("SIZEOF_".length())) + ")";
        }
        if (field.startsWith("OFFSETOF_MPI_STATUS_")) {
            return "offsetof(MPI_Status, " + field.substring("OFFSETOF_MPI_STATUS_".length()) + ")";
        }
        return field;
    }

    /** MPI_COMM -> MPI_Comm, MPI_ERRHANDLER -> MPI_Errhandler. */
    private static String cType(String upper) {
        String rest = upper.substring("MPI_".length()).toLowerCase(Locale.ROOT);
        return "MPI_" + Character.toUpperCase(rest.charAt(0)) + rest.substring(1);
    }

    @Test
    void everyConstantEqualsWhatMpiccCompiles(@TempDir Path dir) throws Exception {
        String mpicc = System.getProperty("ferry.test.mpicc", findOnPath("mpicc.mpich"));
        Assumptions.assumeTrue(mpicc != null, "mpicc.mpich is not installed (Debian: apt-get install libmpich-dev); "
                + "name a compiler of the MPICH ABI with -Dferry.test.mpicc");
        Map<String, Integer> java = constants();
        StringBuilder c = new StringBuilder("#include <mpi.h>\n#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n");
        for (String name : java.keySet()) {
            c.append("    printf(\"%s=%ld\\n\", \"").append(name).append("\", (long) (").append(cExpression(name)).append("));\n");
        }
        c.append("    return 0;\n}\n");
        Path src = dir.resolve("constants.c");
        Files.writeString(src, c);
        Path exe = dir.resolve("constants");
        run(List.of(mpicc, "-o", exe.toString(), src.toString()), "compiling with " + mpicc);
        String out = run(List.of(exe.toString()), "running the compiled program");
        Map<String, Long> native_ = new LinkedHashMap<>();
        for (String line : out.lines().toList()) {
            int eq = line.indexOf('=');
            native_.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1).trim()));
        }
        List<String> wrong = new ArrayList<>();
        java.forEach((name, value) -> {
            Long n = native_.get(name);
            if (n == null || n.longValue() != value.longValue()) {
                wrong.add(name + ": Java 0x" + Integer.toHexString(value) + " (" + value + "), " + cExpression(name) + " = "
                        + (n == null ? "missing" : "0x" + Long.toHexString(n) + " (" + n + ")"));
            }
        });
        assertTrue(wrong.isEmpty(), "MpichConstants disagrees with " + mpicc + "'s mpi.h:\n  " + String.join("\n  ", wrong));
        assertEquals(java.size(), native_.size());
    }

    @Test
    void everyMacroEqualsTheHeaderText() throws Exception {
        Path header = Path.of(System.getProperty("ferry.test.mpih", "/usr/include/x86_64-linux-gnu/mpich/mpi.h"));
        Assumptions.assumeTrue(Files.isRegularFile(header), header + " is not installed (Debian: apt-get install libmpich-dev)");
        Map<String, Long> defines = new LinkedHashMap<>();
        Pattern define = Pattern.compile("^\\s*#\\s*define\\s+(MPIX?_\\w+)\\s+(.*)$");
        Pattern number = Pattern.compile("(-?)(0x[0-9a-fA-F]+|\\d+)\\s*\\)*\\s*(/\\*.*)?$");
        for (String line : Files.readAllLines(header, StandardCharsets.ISO_8859_1)) {
            Matcher m = define.matcher(line);
            if (m.matches()) {
                Matcher v = number.matcher(m.group(2).trim());
                if (v.find()) {
                    long n = Long.decode(v.group(2));
                    defines.putIfAbsent(m.group(1), v.group(1).isEmpty() ? n : -n);
                }
            }
        }
        List<String> wrong = new ArrayList<>();
        constants().forEach((name, value) -> {
            if (name.startsWith("MPI")) {
                Long h = defines.get(name);
                if (h == null || h.intValue() != value) {
                    wrong.add(name + ": Java 0x" + Integer.toHexString(value) + ", header " + (h == null ? "has no such #define" : "0x" + Long.toHexString(h)));
                }
            }
        });
        assertTrue(wrong.isEmpty(), "MpichConstants disagrees with " + header + ":\n  " + String.join("\n  ", wrong));
    }

    private static String run(List<String> cmd, String what) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(what + " timed out: " + String.join(" ", cmd));
        }
        if (p.exitValue() != 0) {
            fail(what + " failed (exit " + p.exitValue() + "): " + String.join(" ", cmd) + "\n" + out);
        }
        return out;
    }

    private static String findOnPath(String name) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(d, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }
}
