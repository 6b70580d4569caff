// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;

import dev.ferry.CudaException;
import dev.ferry.DeviceBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaDevice;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;

/**
 * The examples' GPU kernels, launched through JCuda's driver API: the PTX of
 * {@code src/main/cuda/ferry_examples.cu} is loaded once per device with {@code cuModuleLoadData}
 * (the driver JIT-compiles it for the GPU at hand) and each kernel is started with
 * {@code cuLaunchKernel} on the device of its buffer, then waited for.
 *
 * <p>The PTX comes from the class path ({@value #PTX_RESOURCE}): compiled by nvcc at build time
 * when nvcc is present, else the copy checked in under {@code src/main/resources}.
 */
public final class Kernels {
    /** Class-path resource of the PTX, relative to this class. */
    public static final String PTX_RESOURCE = "ferry_examples.ptx";
    /** Resource naming where the PTX came from (written by build-ptx.sh). */
    static final String ORIGIN_RESOURCE = "ferry_examples.ptx.origin";

    /**
     * Each kernel's parameters as PTX declares them (u64 for pointers and long long, u32 for int,
     * f32, f64). Launches are checked against it, and the unit test checks it against the PTX.
     */
    static final Map<String, List<String>> SIGNATURES = Map.of(
            "shift_floats", List.of("u64", "u64", "f32"),
            "add_ints", List.of("u64", "u64", "u32"),
            "mandelbrot", List.of("u64", "u32", "u32", "u32", "u32", "f64", "f64", "f64", "f64", "u32"),
            "gradient", List.of("u64", "u64", "u32", "u32"));

    private static final int THREADS = 256;
    private static final Map<Integer, Map<String, CUfunction>> LOADED = new ConcurrentHashMap<>();

    private Kernels() {
    }

    /** {@code data[i] += delta} for the first {@code n} floats of {@code data}, on its device. */
    public static void shiftFloats(DeviceBuffer data, long n, float delta) {
        checkSize(data, n, 4);
        launch(data.device(), "shift_floats", blocks(n), 1, THREADS, 1, Cuda.pointer(data), n, delta);
    }

    /** {@code data[i] += value} for the first {@code n} ints of {@code data}, on its device. */
    public static void addInts(DeviceBuffer data, long n, int value) {
        checkSize(data, n, 4);
        launch(data.device(), "add_ints", blocks(n), 1, THREADS, 1, Cuda.pointer(data), n, value);
    }

    /**
     * Escape-time counts of rows {@code [firstRow, firstRow + rows)} into {@code iters}
     * ({@code rows * width} ints, row-major); rows at or past {@code height} get 0. Same arithmetic
     * as {@link Mandelbrot#escapeTime}.
     */
    public static void mandelbrot(DeviceBuffer iters, int width, int height, int firstRow, int rows,
                                  double x0, double y0, double dx, double dy, int maxIter) {
        checkSize(iters, (long) width * rows, 4);
        int bx = 32;
        int by = 8;
        launch(iters.device(), "mandelbrot", (width + bx - 1) / bx, (rows + by - 1) / by, bx, by,
                Cuda.pointer(iters), width, height, firstRow, rows, x0, y0, dx, dy, maxIter);
    }

    /**
     * Enqueues {@code g[i] = (i * 7 + seed) mod 1000} for the first {@code n} floats of {@code g}
     * on {@code stream}, after {@code work} rounds of arithmetic per element that only make it take
     * time (DataParallel's stand-in for a layer's backward pass); returns without waiting.
     */
    public static void gradient(DeviceBuffer g, long n, int seed, int work, dev.ferry.cuda.CudaStream stream) {
        checkSize(g, n, 4);
        launchOn(stream, g.device(), "gradient", blocks(n), 1, THREADS, 1, Cuda.pointer(g), n, seed, work);
    }

    /** The PTX text from the class path. */
    public static String ptx() {
        try (InputStream in = Kernels.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("PTX resource " + PTX_RESOURCE + " is not on the class path next to " + Kernels.class.getName());
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Where the PTX came from: "nvcc 13.0.88 at build time" or "checked-in copy (no nvcc at build time)". */
    public static String origin() {
        try (InputStream in = Kernels.class.getResourceAsStream(ORIGIN_RESOURCE)) {
            return in == null ? "unknown origin" : new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "unknown origin (" + e.getMessage() + ")";
        }
    }

    /** One line for the demo: entries, target and origin of the PTX. */
    public static String describe() {
        String ptx = ptx();
        String target = ptx.lines().filter(l -> l.startsWith(".target")).findFirst().orElse(".target ?").substring(8).trim();
        return "PTX " + target + " with " + String.join(", ", SIGNATURES.keySet().stream().sorted().toList()) + " (" + origin() + ")";
    }

    private static int blocks(long n) {
        return (int) Math.max(1, Math.min((n + THREADS - 1) / THREADS, 8192)); // grid-stride loops cover the rest
    }

    private static void checkSize(DeviceBuffer b, long count, int elementSize) {
        b.checkAlive();
        if (count < 0 || count > b.byteSize() / elementSize) {
            throw new IllegalArgumentException(count + " elements do not fit in " + b);
        }
    }

    private static void launch(int device, String entry, int gridX, int gridY, int blockX, int blockY, Object... args) {
        launchOn(null, device, entry, gridX, gridY, blockX, blockY, args);
        check(cuCtxSynchronize(), "kernel " + entry + " on GPU " + device);
    }

    /** Launches {@code entry} on {@code stream} (null: the legacy default stream) and returns without waiting. */
    private static void launchOn(dev.ferry.cuda.CudaStream stream, int device, String entry, int gridX, int gridY, int blockX, int blockY, Object... args) {
        List<String> expected = SIGNATURES.get(entry);
        if (!expected.equals(Arrays.stream(args).map(Kernels::ptxType).toList())) {
            throw new IllegalArgumentException(entry + " takes (" + expected + "), not " + Arrays.stream(args).map(Kernels::ptxType).toList());
        }
        CudaDevice d = Cuda.device(device);
        d.makeCurrent();
        CUfunction f = function(d, entry);
        NativePointerObject[] params = new NativePointerObject[args.length];
        for (int i = 0; i < args.length; i++) {
            params[i] = switch (args[i]) {
                case CUdeviceptr p -> Pointer.to(p);
                case Long v -> Pointer.to(new long[] {v});
                case Integer v -> Pointer.to(new int[] {v});
                case Float v -> Pointer.to(new float[] {v});
                case Double v -> Pointer.to(new double[] {v});
                default -> throw new IllegalArgumentException("kernel argument " + args[i]);
            };
        }
        check(cuLaunchKernel(f, gridX, gridY, 1, blockX, blockY, 1, 0, stream == null ? null : stream.handle(), Pointer.to(params), null),
                "cuLaunchKernel(" + entry + ") on GPU " + device);
    }

    /** PTX parameter type of a launch argument. */
    static String ptxType(Object arg) {
        return switch (arg) {
            case CUdeviceptr p -> "u64";
            case Long v -> "u64";
            case Integer v -> "u32";
            case Float v -> "f32";
            case Double v -> "f64";
            default -> throw new IllegalArgumentException("unsupported kernel argument " + arg);
        };
    }

    private static CUfunction function(CudaDevice d, String entry) {
        Map<String, CUfunction> fs = LOADED.computeIfAbsent(d.ordinal(), o -> {
            byte[] text = ptx().getBytes(StandardCharsets.US_ASCII);
            byte[] image = Arrays.copyOf(text, text.length + 1); // NUL-terminated, as cuModuleLoadData wants
            CUmodule module = new CUmodule();
            check(cuModuleLoadData(module, image), "cuModuleLoadData(" + PTX_RESOURCE + ") on GPU " + o
                    + " (the driver JIT-compiles the PTX; an old driver rejects a newer PTX ISA)");
            Map<String, CUfunction> m = new ConcurrentHashMap<>();
            for (String name : SIGNATURES.keySet()) {
                CUfunction fn = new CUfunction();
                check(cuModuleGetFunction(fn, module, name), "cuModuleGetFunction(" + name + ")");
                m.put(name, fn);
            }
            return m;
        });
        return fs.get(entry);
    }

    /** Throws {@link CudaException} naming {@code what} unless {@code result} is CUDA_SUCCESS. */
    static void check(int result, String what) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new CudaException(what + " failed: " + CUresult.stringFor(result) + " (" + result + ")", result);
        }
    }
}
