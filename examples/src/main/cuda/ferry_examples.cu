// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

// Kernels of Ferry's examples (package dev.ferry.examples).
//
// Compiled to PTX by build-ptx.sh (run by Maven when nvcc is present):
//   nvcc -ptx -arch=compute_80 -fmad=false -O3 ferry_examples.cu
// compute_80 PTX is JIT-compiled by the driver for the GPU it runs on (A100, H100, H200, ...).
// -fmad=false keeps every multiply and add separately rounded (mul.rn / add.rn in the PTX), as
// Java computes them, so that the Mandelbrot iteration counts of GPU and CPU agree exactly.
//
// extern "C": the entry names in the PTX are the plain names below, looked up by Kernels.java.

// ScatterShiftGather: data[i] += delta for i < n.
extern "C" __global__ void shift_floats(float* data, long long n, float delta)
{
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        data[i] = data[i] + delta;
    }
}

// IpcExchange: data[i] += value for i < n (run by the peer on memory it mapped by IPC handle).
extern "C" __global__ void add_ints(int* data, long long n, int value)
{
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        data[i] = data[i] + value;
    }
}

// Mandelbrot: escape-time iteration counts of rows [firstRow, firstRow + rows) of an image of
// `width` columns; pixel (col, row) is c = (x0 + col * dx, y0 + row * dy). Writes
// iters[(row - firstRow) * width + col] in [0, maxIter]; maxIter means "did not escape".
// Rows at or beyond `height` (padding of the last rank) are written as 0.
// The same arithmetic, in the same order, as Mandelbrot.escapeTime in Java.
extern "C" __global__ void mandelbrot(int* iters, int width, int height, int firstRow, int rows,
                                      double x0, double y0, double dx, double dy, int maxIter)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int local = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= width || local >= rows) {
        return;
    }
    int row = firstRow + local;
    if (row >= height) {
        iters[(long long) local * width + col] = 0;
        return;
    }
    double cx = x0 + col * dx;
    double cy = y0 + row * dy;
    int n;
    // main cardioid and period-2 bulb never escape: skip the iteration there
    double xq = cx - 0.25;
    double q = xq * xq + cy * cy;
    if (q * (q + xq) <= 0.25 * cy * cy || (cx + 1.0) * (cx + 1.0) + cy * cy <= 0.0625) {
        n = maxIter;
    } else {
        double zx = 0.0, zy = 0.0;
        n = 0;
        while (n < maxIter) {
            double zx2 = zx * zx;
            double zy2 = zy * zy;
            if (zx2 + zy2 > 4.0) {
                break;
            }
            zy = 2.0 * zx * zy + cy;
            zx = zx2 - zy2 + cx;
            n++;
        }
    }
    iters[(long long) local * width + col] = n;
}

// DataParallel: a stand-in for one layer's backward pass. Writes g[i] = ((i * 7 + seed) mod 1000),
// an exact float, after `work` rounds of arithmetic per element that only make the kernel take
// time (their result decides nothing: it is added as 0 unless it overflows, which it cannot).
extern "C" __global__ void gradient(float* g, long long n, int seed, int work)
{
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float acc = 0.0f;
        for (int k = 0; k < work; k++) {
            acc = acc * 0.5f + 1.0f; // stays below 2
        }
        float base = (float) ((i * 7 + seed) % 1000);
        g[i] = base + (acc > 4.0f ? 1.0f : 0.0f);
    }
}
