// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jcuda.driver.CUdeviceptr;
import org.junit.jupiter.api.Test;

/**
 * The kernels cannot run without a GPU; what can be checked here is that the PTX is there, is
 * text the driver can JIT for H100/H200 (sm_80 or lower target), and declares exactly the entries
 * and parameter types that {@link Kernels} launches with.
 */
class KernelsTest {
    private static final Path CHECKED_IN = Path.of("src/main/resources/dev/ferry/examples/ferry_examples.ptx");
    private static final Path SOURCE = Path.of("src/main/cuda/ferry_examples.cu");

    @Test
    void ptxOnTheClassPathDeclaresEveryEntryWithTheLaunchedParameters() {
        checkPtx(Kernels.ptx());
    }

    @Test
    void checkedInPtxDeclaresEveryEntryWithTheLaunchedParameters() throws IOException {
        checkPtx(Files.readString(CHECKED_IN));
    }

    @Test
    void originSaysWhereThePtxCameFrom() {
        String origin = Kernels.origin();
        assertTrue(origin.startsWith("nvcc ") || origin.startsWith("checked-in copy"), origin);
        assertTrue(Kernels.describe().contains("sm_80"), Kernels.describe());
    }

    @Test
    void cudaSourceDefinesTheSameEntries() throws IOException {
        String cu = Files.readString(SOURCE);
        List<String> names = new ArrayList<>();
        Matcher m = Pattern.compile("extern \"C\" __global__ void (\\w+)\\(").matcher(cu);
        while (m.find()) {
            names.add(m.group(1));
        }
        assertEquals(Kernels.SIGNATURES.keySet().stream().sorted().toList(), names.stream().sorted().toList());
    }

    @Test
    void launchArgumentsMapToPtxTypes() {
        assertEquals("u64", Kernels.ptxType(new CUdeviceptr()));
        assertEquals("u64", Kernels.ptxType(3L));
        assertEquals("u32", Kernels.ptxType(3));
        assertEquals("f32", Kernels.ptxType(3f));
        assertEquals("f64", Kernels.ptxType(3d));
        assertThrows(IllegalArgumentException.class, () -> Kernels.ptxType("x"));
    }

    private static void checkPtx(String ptx) {
        assertTrue(ptx.contains(".version "), "no .version directive");
        Matcher target = Pattern.compile("(?m)^\\.target sm_(\\d+)").matcher(ptx);
        assertTrue(target.find(), "no .target directive");
        int sm = Integer.parseInt(target.group(1));
        assertTrue(sm <= 80 && sm >= 75, "PTX for sm_" + sm + ": H100/H200 JIT it only from sm_90 or lower; CUDA 13 needs sm_75 or higher");
        assertTrue(ptx.contains(".address_size 64"));
        Map<String, List<String>> entries = entries(ptx);
        assertEquals(Kernels.SIGNATURES, entries, "PTX entries and their parameter types");
        // separately rounded double arithmetic in the Mandelbrot kernel, as in Java (no fused multiply-add)
        String mandelbrot = ptx.substring(ptx.indexOf(".entry mandelbrot"));
        assertFalse(mandelbrot.contains("fma.rn.f64"), "mandelbrot must not fuse multiply-adds: compile with -fmad=false");
        assertTrue(mandelbrot.contains("mul.rn.f64"), "expected mul.rn.f64 in mandelbrot");
    }

    /** {@code .entry name( .param .TYPE name_param_0, ... )} -> name: [TYPE, ...]. */
    static Map<String, List<String>> entries(String ptx) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        Matcher e = Pattern.compile("\\.entry (\\w+)\\(([^)]*)\\)").matcher(ptx);
        while (e.find()) {
            List<String> types = new ArrayList<>();
            Matcher p = Pattern.compile("\\.param \\.(\\w+) ").matcher(e.group(2));
            while (p.find()) {
                types.add(p.group(1));
            }
            out.put(e.group(1), types);
        }
        return out;
    }
}
