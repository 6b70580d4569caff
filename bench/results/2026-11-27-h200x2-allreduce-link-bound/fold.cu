// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors
//
// The bound on a two-GPU allReduce of 256 MiB of doubles (bench/results/2026-11-27-h200x2-allreduce-link-bound.md).
//   ./fold variants    the fold kernel's variants (unrolling, blocks, read-only loads, contiguous chunks) reading the
//                      peer across NVLink, against copies by the copy engines and by the cores, and the split of one
//                      slice between a copy-engine pull and a remote fold (run 1)
//   ./fold pipelines   copy-engine pulls in pieces, each folded locally as it lands, with the pushes back after, per
//                      piece or interleaved, against ipc-sliced's fold-then-push; ends with a check of one pipeline's
//                      sums (runs 2 and 3)
// One process drives both GPUs (peer access on), each GPU doing rank d's half as ipc-sliced does; time = host wall
// clock from launch to both streams done, median of 15 after 3 warm-ups.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o fold fold.cu      (a node with two GPUs joined by NVLink)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s line %d\n", #x, cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

union G { uint4 v; double e[2]; };

template <int U, int NC>
__global__ void fold(double* out, const double* a, const double* b, long long n) {
    const long long groups = n / 2;
    const long long stride = (long long) blockDim.x * gridDim.x;
    long long g = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    for (; g + (U - 1) * stride < groups; g += U * stride) {
        G x[U], y[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (NC) { x[u].v = __ldg((const uint4*) a + g + u * stride); y[u].v = __ldg((const uint4*) b + g + u * stride); }
            else { x[u].v = ((const uint4*) a)[g + u * stride]; y[u].v = ((const uint4*) b)[g + u * stride]; }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            x[u].e[0] = __dadd_rn(x[u].e[0], y[u].e[0]); x[u].e[1] = __dadd_rn(x[u].e[1], y[u].e[1]);
            ((uint4*) out)[g + u * stride] = x[u].v;
        }
    }
    for (; g < groups; g += stride) {
        G x, y; x.v = ((const uint4*) a)[g]; y.v = ((const uint4*) b)[g];
        x.e[0] = __dadd_rn(x.e[0], y.e[0]); x.e[1] = __dadd_rn(x.e[1], y.e[1]);
        ((uint4*) out)[g] = x.v;
    }
}

// contiguous-chunk variant: each block handles a contiguous chunk, threads stride within it, U loads in flight
template <int U>
__global__ void foldChunk(double* out, const double* a, const double* b, long long n) {
    const long long groups = n / 2;
    long long per = (groups + gridDim.x - 1) / gridDim.x;
    long long lo = blockIdx.x * per, hi = min(groups, lo + per);
    for (long long g = lo + threadIdx.x; g < hi; g += (long long) U * blockDim.x) {
        G x[U], y[U];
#pragma unroll
        for (int u = 0; u < U; u++) { long long k = g + u * blockDim.x; if (k < hi) { x[u].v = ((const uint4*) a)[k]; y[u].v = ((const uint4*) b)[k]; } }
#pragma unroll
        for (int u = 0; u < U; u++) { long long k = g + u * blockDim.x; if (k < hi) {
            x[u].e[0] = __dadd_rn(x[u].e[0], y[u].e[0]); x[u].e[1] = __dadd_rn(x[u].e[1], y[u].e[1]);
            ((uint4*) out)[k] = x[u].v; } }
    }
}

__global__ void copyk(uint4* out, const uint4* in, long long groups) {
    long long stride = (long long) blockDim.x * gridDim.x;
    for (long long g = (long long) blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) out[g] = in[g];
}

static const long long BYTES = 256LL << 20, HALF = BYTES / 2, N = HALF / 8;
double* in[2]; double* outb[2]; double* scr[2];
cudaStream_t st[2], st2[2];
int sms;

template <typename F> double timeit(const char* name, F f, int reps = 15) {
    std::vector<double> t;
    for (int i = 0; i < reps + 3; i++) {
        for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
        auto t0 = std::chrono::steady_clock::now();
        f();
        for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaStreamSynchronize(st[d])); CK(cudaStreamSynchronize(st2[d])); }
        auto t1 = std::chrono::steady_clock::now();
        if (i >= 3) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(t.begin(), t.end());
    printf("%-48s median %8.1f us  min %8.1f  max %8.1f\n", name, t[t.size() / 2], t[0], t.back());
    fflush(stdout);
    return t[t.size() / 2];
}

template <int U, int NC> void runFold(int blocksPerSm, int threads, bool both) {
    char name[128]; snprintf(name, sizeof name, "fold U=%d nc=%d %dxSM x%d %s", U, NC, blocksPerSm, threads, both ? "both" : "one");
    timeit(name, [&] { for (int d = 0; d < (both ? 2 : 1); d++) { CK(cudaSetDevice(d)); int p = 1 - d;
        // rank d folds slice d: local in[d]+d*N, remote in[p]+d*N
        fold<U, NC><<<blocksPerSm * sms, threads, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N); CK(cudaGetLastError()); } });
}

static void variants() {
    // baselines
    timeit("CE peer copy 256 MiB one way (0<-1)", [&] { CK(cudaSetDevice(0)); CK(cudaMemcpyAsync(scr[0], in[1], BYTES, cudaMemcpyDefault, st[0])); });
    timeit("CE pull 128 MiB both ways", [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMemcpyAsync(scr[d], in[1 - d], HALF, cudaMemcpyDefault, st[d])); } });
    timeit("CE push 128 MiB both ways", [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMemcpyAsync(outb[1 - d] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d])); } });
    timeit("SM pull copy 128 MiB both ways 8xSM", [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); copyk<<<8 * sms, 256, 0, st[d]>>>((uint4*) scr[d], (const uint4*) in[1 - d], HALF / 16); } });
    timeit("SM push copy 128 MiB both ways 8xSM", [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); copyk<<<8 * sms, 256, 0, st[d]>>>((uint4*) scr[1 - d], (const uint4*) in[d], HALF / 16); } });
    runFold<1, 0>(8, 256, false);
    runFold<1, 0>(8, 256, true);
    runFold<2, 0>(8, 256, true);
    runFold<4, 0>(8, 256, true);
    runFold<8, 0>(4, 256, true);
    runFold<4, 0>(4, 256, true);
    runFold<4, 0>(2, 512, true);
    runFold<2, 0>(4, 512, true);
    runFold<1, 1>(8, 256, true);
    runFold<4, 1>(8, 256, true);
    runFold<4, 0>(16, 256, true);
    runFold<1, 0>(32, 256, true);
    for (int U : {1, 2, 4}) for (int bps : {4, 8, 16}) {
        char name[128]; snprintf(name, sizeof name, "foldChunk U=%d %dxSM x256 both", U, bps);
        timeit(name, [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
            if (U == 1) foldChunk<1><<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N);
            else if (U == 2) foldChunk<2><<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N);
            else foldChunk<4><<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N); } });
    }
    // whole sliced allReduce: fold then CE push, each GPU on its stream (no barrier needed: push writes peer's out)
    auto sliced = [&](auto kern, int bps) { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
        kern<<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N);
        CK(cudaMemcpyAsync(outb[p] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d])); } };
    timeit("sliced: fold U1 8xSM + CE push", [&] { sliced(fold<1, 0>, 8); });
    timeit("sliced: fold U4 8xSM + CE push", [&] { sliced(fold<4, 0>, 8); });
    timeit("sliced: fold U2 8xSM + CE push", [&] { sliced(fold<2, 0>, 8); });
    // split: CE pulls fraction f of peer slice into scratch while kernel folds the rest remotely; then local fold of the pulled part
    for (int pct : {25, 40, 50}) {
        long long nf = (N * pct / 100) & ~1LL, nr = N - nf;
        char name[128]; snprintf(name, sizeof name, "split fold: CE pulls %d%% + remote fold rest", pct);
        cudaEvent_t ev[2]; for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaEventCreateWithFlags(&ev[d], cudaEventDisableTiming)); }
        timeit(name, [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
            CK(cudaMemcpyAsync(scr[d], in[p] + d * N + nr, nf * 8, cudaMemcpyDefault, st2[d])); CK(cudaEventRecord(ev[d], st2[d]));
            fold<1, 0><<<8 * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, nr);
            CK(cudaStreamWaitEvent(st[d], ev[d], 0));
            fold<1, 0><<<8 * sms, 256, 0, st[d]>>>(outb[d] + d * N + nr, in[d] + d * N + nr, scr[d], nf); } });
    }
}

static void pipelines() {
    timeit("CE push 128 MiB both ways", [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMemcpyAsync(outb[1 - d] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d])); } });
    auto sliced = [&](auto kern, int bps) { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
        kern<<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N, in[d] + d * N, in[p] + d * N, N);
        CK(cudaMemcpyAsync(outb[p] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d])); } };
    timeit("sliced: fold U1 8xSM + CE push", [&] { sliced(fold<1, 0>, 8); });
    const int MAXC = 64;
    cudaEvent_t evc[2][MAXC], evf[2];
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); for (int i = 0; i < MAXC; i++) CK(cudaEventCreateWithFlags(&evc[d][i], cudaEventDisableTiming)); CK(cudaEventCreateWithFlags(&evf[d], cudaEventDisableTiming)); }
    // mode 0: pipelined CE pull + local fold, then whole CE push after; mode 1: push each chunk after its fold (on fold stream)
    // mode 2: fold-only part (no push) to see phase 1
    for (int mode : {2, 0, 1}) for (int chunks : {2, 4, 8, 16, 32}) for (int bps : {2, 8}) {
        if (mode != 0 && bps != 2) continue;
        long long cn = N / chunks; // elements per chunk (N divisible)
        char name[128]; snprintf(name, sizeof name, "pull-pipe mode %d chunks %d fold %dxSM", mode, chunks, bps);
        timeit(name, [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
            for (int i = 0; i < chunks; i++) {
                CK(cudaMemcpyAsync(scr[d] + i * cn, in[p] + d * N + i * cn, cn * 8, cudaMemcpyDefault, st2[d]));
                CK(cudaEventRecord(evc[d][i], st2[d]));
            }
            for (int i = 0; i < chunks; i++) {
                CK(cudaStreamWaitEvent(st[d], evc[d][i], 0));
                fold<1, 0><<<bps * sms, 256, 0, st[d]>>>(outb[d] + d * N + i * cn, in[d] + d * N + i * cn, scr[d] + i * cn, cn);
                if (mode == 1) CK(cudaMemcpyAsync(outb[p] + d * N + i * cn, outb[d] + d * N + i * cn, cn * 8, cudaMemcpyDefault, st[d]));
            }
            if (mode == 0) CK(cudaMemcpyAsync(outb[p] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d]));
        } });
    }
    // mode 3: pulls chunks, fold; push-back of chunk i on the copy stream after fold i (copy stream interleaves pull i+k and push i)
    for (int chunks : {4, 8, 16}) {
        long long cn = N / chunks;
        char name[128]; snprintf(name, sizeof name, "pull-pipe interleaved pushes chunks %d", chunks);
        timeit(name, [&] { for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
            for (int i = 0; i < chunks; i++) {
                CK(cudaMemcpyAsync(scr[d] + i * cn, in[p] + d * N + i * cn, cn * 8, cudaMemcpyDefault, st2[d]));
                CK(cudaEventRecord(evc[d][i], st2[d]));
                CK(cudaStreamWaitEvent(st[d], evc[d][i], 0));
                fold<1, 0><<<2 * sms, 256, 0, st[d]>>>(outb[d] + d * N + i * cn, in[d] + d * N + i * cn, scr[d] + i * cn, cn);
                CK(cudaEventRecord(evc[d][MAXC / 2 + i], st[d]));
                if (i > 0) { CK(cudaStreamWaitEvent(st2[d], evc[d][MAXC / 2 + i - 1], 0));
                    CK(cudaMemcpyAsync(outb[p] + d * N + (i - 1) * cn, outb[d] + d * N + (i - 1) * cn, cn * 8, cudaMemcpyDefault, st2[d])); }
            }
            CK(cudaStreamWaitEvent(st2[d], evc[d][MAXC / 2 + chunks - 1], 0));
            CK(cudaMemcpyAsync(outb[p] + d * N + (chunks - 1) * cn, outb[d] + d * N + (chunks - 1) * cn, cn * 8, cudaMemcpyDefault, st2[d]));
        } });
    }
    timeit("sliced: fold U1 8xSM + CE push (again)", [&] { sliced(fold<1, 0>, 8); });
    timeit("CE peer copy 256 MiB one way (0<-1)", [&] { CK(cudaSetDevice(0)); CK(cudaMemcpyAsync(scr[0], in[1], BYTES, cudaMemcpyDefault, st[0])); });
    // correctness check of mode 0 with 8 chunks: fill inputs with rank+1, expect 3
    {
        for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); std::vector<double> h(2 * N, d + 1.0); CK(cudaMemcpy(in[d], h.data(), BYTES, cudaMemcpyDefault)); CK(cudaMemset(outb[d], 0, BYTES)); }
        int chunks = 8; long long cn = N / chunks;
        for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); int p = 1 - d;
            for (int i = 0; i < chunks; i++) { CK(cudaMemcpyAsync(scr[d] + i * cn, in[p] + d * N + i * cn, cn * 8, cudaMemcpyDefault, st2[d])); CK(cudaEventRecord(evc[d][i], st2[d])); }
            for (int i = 0; i < chunks; i++) { CK(cudaStreamWaitEvent(st[d], evc[d][i], 0));
                fold<1, 0><<<2 * sms, 256, 0, st[d]>>>(outb[d] + d * N + i * cn, in[d] + d * N + i * cn, scr[d] + i * cn, cn); }
            CK(cudaMemcpyAsync(outb[p] + d * N, outb[d] + d * N, HALF, cudaMemcpyDefault, st[d])); }
        for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
        long long bad = 0; for (int d = 0; d < 2; d++) { std::vector<double> h(2 * N); CK(cudaSetDevice(d)); CK(cudaMemcpy(h.data(), outb[d], BYTES, cudaMemcpyDefault)); for (auto v : h) bad += v != 3.0; }
        printf("check: %lld wrong elements\n", bad);
    }
}

int main(int argc, char** argv) {
    const char* what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "variants") != 0 && strcmp(what, "pipelines") != 0) { printf("usage: fold variants|pipelines\n"); return 2; }
    int n; CK(cudaGetDeviceCount(&n)); if (n < 2) { printf("need 2 GPUs\n"); return 1; }
    cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0)); sms = pr.multiProcessorCount;
    printf("%s, %d SMs\n", pr.name, sms);
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d)); CK(cudaDeviceEnablePeerAccess(1 - d, 0));
        CK(cudaMalloc(&in[d], BYTES)); CK(cudaMalloc(&outb[d], BYTES)); CK(cudaMalloc(&scr[d], BYTES));
        CK(cudaMemset(in[d], 0, BYTES)); CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&st2[d], cudaStreamNonBlocking));
    }

    if (strcmp(what, "variants") == 0) variants(); else pipelines();
    return 0;
}
