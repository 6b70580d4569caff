// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

// ferry_reduce.cu built for the host: the kernels' logic (element types, operators, the vector and
// element paths, the fold over sources in launches of up to 8, as DeviceReduction launches them)
// run on the CPU, so that DeviceReductionTest can compare it with HostReduction without a GPU. The
// CUDA built-ins are stand-ins; binary16 conversions are the compiler's _Float16 (IEEE 754,
// round to nearest even, as cvt.rn.f16.f32 on the GPU). The grid is run thread by thread.
//
//   ferry_reduce_host ENTRY ELEMENT_BYTES COUNT VECTOR SOURCES IN_FILE... OUT_FILE
//   (OUT_FILE gets ENTRY's fold of the inputs, in place in source 0's memory)
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
struct dim3h { unsigned x, y, z; };
static dim3h blockIdx, threadIdx, blockDim, gridDim;
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline float f16_to_f32(uint16_t h) { _Float16 x; memcpy(&x, &h, 2); return (float) x; }
static inline uint16_t f32_to_f16(float f) { _Float16 x = (_Float16) f; uint16_t h; memcpy(&h, &x, 2); return h; }
#define FERRY_HOST_EMULATION 1
#define FERRY_ALL 1
#include "ferry_reduce.cu"

struct Sources;
typedef void (*K)(void*, Sources, int, long long, int);
int main(int argc, char** argv) {
    const char* name = argv[1]; int size = atoi(argv[2]); long long n = atoll(argv[3]); int vec = atoi(argv[4]); int ns = atoi(argv[5]);
    K k = (K) dlsym(RTLD_DEFAULT, name);
    if (!k) { fprintf(stderr, "no %s\n", name); return 2; }
    std::vector<void*> bufs;
    for (int s = 0; s < ns; s++) {
        void* p = aligned_alloc(16, n * size + 16); FILE* f = fopen(argv[6 + s], "rb"); fread(p, size, n, f); fclose(f); bufs.push_back(p);
    }
    void* out = bufs[0];
    // fold in launches of up to 8 sources, as DeviceReduction does
    int at = ns < 8 ? ns : 8;
    auto launch = [&](std::vector<void*> src) {
        Sources S; memset(&S, 0, sizeof S); for (size_t i = 0; i < src.size(); i++) S.p[i] = src[i];
        blockDim.x = 4; gridDim.x = 3;
        // grid-stride: run threads in an order where every element is touched once; serial is fine
        for (unsigned b = 0; b < gridDim.x; b++) for (unsigned t = 0; t < blockDim.x; t++) { blockIdx.x = b; threadIdx.x = t; k(out, S, (int) src.size(), n, vec); }
    };
    launch(std::vector<void*>(bufs.begin(), bufs.begin() + at));
    while (at < ns) { int m = ns - at < 7 ? ns - at : 7; std::vector<void*> nx; nx.push_back(out); for (int i = 0; i < m; i++) nx.push_back(bufs[at + i]); launch(nx); at += m; }
    FILE* f = fopen(argv[6 + ns], "wb"); fwrite(out, size, n, f); fclose(f);
    return 0;
}
