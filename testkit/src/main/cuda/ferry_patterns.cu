// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

// Kernels of the application-pattern suite (dev.ferry.testing.ApplicationPatterns): what an
// application's own kernels do to a buffer right before and after it hands the buffer to Ferry.
//
// Compiled to PTX by build-ptx.sh (nvcc -ptx -arch=compute_80 -O3); the PTX is checked in and the
// driver JIT-compiles it for the GPU it runs on. extern "C": plain entry names.

// The byte the pattern puts at index i for a seed.
__device__ __forceinline__ unsigned char pattern_byte(long long i, unsigned int seed)
{
    return (unsigned char) ((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
}

// Waits `spin` clock cycles (on the first thread of every block), then writes the pattern to
// dst[0, n): a kernel that is still running when a transfer that does not wait for it starts.
extern "C" __global__ void slow_fill(unsigned char* dst, long long n, unsigned int seed, long long spin)
{
    if (threadIdx.x == 0 && spin > 0) {
        long long t0 = clock64();
        while (clock64() - t0 < spin) {
        }
    }
    __syncthreads();
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        dst[i] = pattern_byte(i, seed);
    }
}

// Counts the bytes of src[0, n) that differ from the pattern into *bad.
extern "C" __global__ void count_mismatches(const unsigned char* src, long long n, unsigned int seed, unsigned long long* bad)
{
    unsigned long long mine = 0;
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (src[i] != pattern_byte(i, seed)) {
            mine++;
        }
    }
    if (mine != 0) {
        atomicAdd(bad, mine);
    }
}

// Adds `value` to every int of data[0, n) after `spin` cycles: the input of a reduction still being written.
extern "C" __global__ void slow_set_ints(int* data, long long n, int value, long long spin)
{
    if (threadIdx.x == 0 && spin > 0) {
        long long t0 = clock64();
        while (clock64() - t0 < spin) {
        }
    }
    __syncthreads();
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        data[i] = value + (int) (i % 1000);
    }
}
