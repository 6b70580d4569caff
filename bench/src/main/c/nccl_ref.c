// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/*
 * nccl_ref: NCCL called directly from C, the native reference for Ferry's nccl backend.
 *
 * One process per GPU (the GPU is the node-local rank modulo the visible devices, or -device N),
 * the ncclUniqueId made on rank 0 and broadcast with MPI_Bcast, then for each operation and size
 * (8 B to 256 MiB by default, doubling) W warm-up and N timed iterations between two CUDA events
 * on one stream. Sizes are the total buffer size, as nccl-tests counts them: allreduce and
 * broadcast move S bytes per rank; allgather receives S bytes (S/size from each rank);
 * reducescatter reduces S bytes into S/size per rank. Float32 data (bytes for broadcast).
 * Prints, on rank 0, the slowest rank's time per call (us), the algorithm bandwidth S/t and the
 * bus bandwidth (nccl-tests' factors: allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n,
 * broadcast 1), and checks each result once (allreduce of ones gives n, etc.).
 * -blocking waits for the stream after every call and times with MPI_Wtime instead: what a
 * blocking Ferry call costs (compare with dev.ferry.nccl.NcclTiming, which prints the same table).
 * -inplace times the calls in place, as Ferry's broadcast calls NCCL (allreduce and broadcast: one
 * buffer; allgather: this rank's block of the receive buffer; reducescatter: its block of the send
 * buffer); the one checked call stays out of place. -barrier (with -blocking) ends every call with an
 * MPI_Barrier after the stream is synchronized: a call then lasts until every rank has its result, as
 * a Ferry call that agrees on its plan or meets its peers does; without it a rank starts its next call
 * while the last ranks of a broadcast's chain still receive the previous one.
 *
 * Build (bench/src/main/c/build-nccl.sh does this): any MPI C compiler, the NCCL wheel's nccl.h,
 * linked against libnccl.so.2; no CUDA toolkit needed: the driver (libcuda.so.1) is opened with
 * dlopen, and cuda-stub/ supplies the one type nccl.h takes from cuda_runtime.h. With a CUDA
 * toolkit (nvcc -ccbin mpicc, or mpicc -I$CUDA/include) leave out -Icuda-stub.
 *
 *   mpicc -O2 -std=c11 -Icuda-stub -I$NCCL/include -o nccl_ref nccl_ref.c $NCCL/lib/libnccl.so.2 -ldl
 *   mpirun -np 2 -x LD_LIBRARY_PATH=$NCCL/lib ./nccl_ref [-min 8] [-max 268435456] [-iters 20] [-warmup 5]
 *          [-ops allreduce,broadcast,allgather,reducescatter] [-device N] [-blocking] [-inplace] [-barrier]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

/* ---- the CUDA driver, through dlopen ------------------------------------------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGetCount)(int *);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent *, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);

static int rank_, size_;

static void die(const char *what, long code) {
    fprintf(stderr, "nccl_ref rank %d: %s failed (%ld)\n", rank_, what, code);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define CU(call) do { CUresult r_ = (call); if (r_ != 0) die(#call, r_); } while (0)
#define NC(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { \
    fprintf(stderr, "nccl_ref rank %d: %s: %s\n", rank_, #call, ncclGetErrorString(r_)); die(#call, r_); } } while (0)

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) die(name, -1);
    return p;
}

static void load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "nccl_ref: no CUDA driver (libcuda.so.1): %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    *(void **)&cuInit = sym(lib, "cuInit");
    *(void **)&cuDeviceGetCount = sym(lib, "cuDeviceGetCount");
    *(void **)&cuDeviceGet = sym(lib, "cuDeviceGet");
    *(void **)&cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent");
    *(void **)&cuMemAlloc = sym(lib, "cuMemAlloc_v2");
    *(void **)&cuMemFree = sym(lib, "cuMemFree_v2");
    *(void **)&cuMemsetD32 = sym(lib, "cuMemsetD32_v2");
    *(void **)&cuMemcpyDtoH = sym(lib, "cuMemcpyDtoH_v2");
    *(void **)&cuStreamCreate = sym(lib, "cuStreamCreate");
    *(void **)&cuStreamSynchronize = sym(lib, "cuStreamSynchronize");
    *(void **)&cuEventCreate = sym(lib, "cuEventCreate");
    *(void **)&cuEventRecord = sym(lib, "cuEventRecord");
    *(void **)&cuEventSynchronize = sym(lib, "cuEventSynchronize");
    *(void **)&cuEventElapsedTime = sym(lib, "cuEventElapsedTime");
}

/* ---- operations ------------------------------------------------------------------------------ */
enum { ALLREDUCE, BROADCAST, ALLGATHER, REDUCESCATTER, NOPS };
static const char *NAMES[NOPS] = {"allreduce", "broadcast", "allgather", "reducescatter"};

/* elements of the call for a total size of `bytes`, or 0 when the size does not fit the operation */
static size_t elements(int op, size_t bytes) {
    switch (op) {
        case BROADCAST: return bytes;
        case ALLREDUCE: return bytes / 4;
        default: return bytes / 4 / (size_t)size_;
    }
}

static int inplace, barrier;

static void run_op(int op, CUdeviceptr send, CUdeviceptr recv, size_t n, ncclComm_t comm, CUstream s) {
    cudaStream_t st = (cudaStream_t)s;
    if (inplace) {
        switch (op) {
            case ALLREDUCE: case BROADCAST: recv = send; break;
            case ALLGATHER: send = recv + 4 * n * (size_t)rank_; break;
            case REDUCESCATTER: recv = send + 4 * n * (size_t)rank_; break;
        }
    }
    switch (op) {
        case ALLREDUCE: NC(ncclAllReduce((void *)send, (void *)recv, n, ncclFloat32, ncclSum, comm, st)); break;
        case BROADCAST: NC(ncclBroadcast((void *)send, (void *)recv, n, ncclUint8, 0, comm, st)); break;
        case ALLGATHER: NC(ncclAllGather((void *)send, (void *)recv, n, ncclFloat32, comm, st)); break;
        case REDUCESCATTER: NC(ncclReduceScatter((void *)send, (void *)recv, n, ncclFloat32, ncclSum, comm, st)); break;
    }
}

static double bus_factor(int op) {
    double n = size_;
    switch (op) {
        case ALLREDUCE: return 2 * (n - 1) / n;
        case BROADCAST: return 1;
        default: return (n - 1) / n;
    }
}

/* one call on ones (rank r's broadcast data: r + 1), then the first floats of the result */
static int check(int op, CUdeviceptr send, CUdeviceptr recv, size_t bytes, ncclComm_t comm, CUstream s) {
    size_t n = elements(op, bytes);
    if (n == 0) return 1;
    CU(cuMemsetD32(send, op == BROADCAST ? 0x01010101u * (unsigned)(rank_ + 1) : 0x3f800000u, bytes / 4));
    CU(cuMemsetD32(recv, 0, bytes / 4));
    int was = inplace;
    inplace = 0;
    run_op(op, send, recv, n, comm, s);
    inplace = was;
    CU(cuStreamSynchronize(s));
    float got[4] = {0};
    unsigned char b[4] = {0};
    if (op == BROADCAST) {
        CU(cuMemcpyDtoH(b, recv, n < 4 ? n : 4));
        return b[0] == 1; /* root 0 sent (0 + 1) */
    }
    size_t outn = op == ALLREDUCE ? n : op == ALLGATHER ? n * (size_t)size_ : n;
    CU(cuMemcpyDtoH(got, recv, 4 * (outn < 4 ? outn : 4)));
    float want = op == ALLGATHER ? 1.0f : (float)size_;
    return got[0] == want;
}

int main(int argc, char **argv) {
    size_t minb = 8, maxb = 256u << 20;
    int iters = 20, warmup = 5, device = -1, ops[NOPS] = {1, 1, 1, 1}, blocking = 0;
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-min") && i + 1 < argc) minb = strtoull(argv[++i], 0, 0);
        else if (!strcmp(argv[i], "-max") && i + 1 < argc) maxb = strtoull(argv[++i], 0, 0);
        else if (!strcmp(argv[i], "-iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-device") && i + 1 < argc) device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-blocking")) blocking = 1;
        else if (!strcmp(argv[i], "-inplace")) inplace = 1;
        else if (!strcmp(argv[i], "-barrier")) barrier = blocking = 1;
        else if (!strcmp(argv[i], "-ops") && i + 1 < argc) {
            char *list = argv[++i];
            for (int o = 0; o < NOPS; o++) ops[o] = strstr(list, NAMES[o]) != NULL;
        } else {
            if (rank_ == 0) fprintf(stderr, "usage: nccl_ref [-min B] [-max B] [-iters N] [-warmup W] [-ops LIST] [-device N] [-blocking] [-inplace] [-barrier]\n");
            MPI_Finalize();
            return 2;
        }
    }
    /* node-local rank picks the GPU, as Ferry does */
    MPI_Comm node;
    int local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    load_driver();
    CU(cuInit(0));
    int ndev;
    CU(cuDeviceGetCount(&ndev));
    if (device < 0) device = local % ndev;
    CUdevice dev;
    CUcontext ctx;
    CU(cuDeviceGet(&dev, device));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    ncclUniqueId id;
    if (rank_ == 0) NC(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    NC(ncclCommInitRank(&comm, size_, id, rank_));
    int version;
    NC(ncclGetVersion(&version));

    CUstream s;
    CUevent e0, e1;
    CU(cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */));
    CU(cuEventCreate(&e0, 0));
    CU(cuEventCreate(&e1, 0));
    CUdeviceptr send, recv;
    CU(cuMemAlloc(&send, maxb));
    CU(cuMemAlloc(&recv, maxb));
    CU(cuMemsetD32(send, 0x3f800000u, maxb / 4));

    if (rank_ == 0) {
        printf("# nccl_ref: NCCL %d, %d ranks, GPU %d of rank 0, %d iterations after %d warm-up; time = slowest rank, per call (%s%s%s)\n",
               version, size_, device, iters, warmup, blocking ? "blocking: stream synchronized after each call, MPI_Wtime" : "back to back, CUDA events",
               inplace ? "; in place" : "", barrier ? "; a barrier after each call" : "");
        printf("%-14s %12s %12s %12s %12s %12s %s\n", "op", "bytes", "elements", "time_us", "algbw_GB/s", "busbw_GB/s", "check");
    }
    for (int op = 0; op < NOPS; op++) {
        if (!ops[op]) continue;
        int checked = 0;
        for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
            size_t n = elements(op, bytes);
            if (n == 0) continue;
            const char *ok = "";
            if (!checked && bytes >= 4 * (size_t)size_) {
                int good = check(op, send, recv, bytes, comm, s), all;
                MPI_Allreduce(&good, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
                ok = all ? "ok" : "WRONG";
                checked = 1;
            }
            for (int w = 0; w < warmup; w++) run_op(op, send, recv, n, comm, s);
            CU(cuStreamSynchronize(s));
            MPI_Barrier(MPI_COMM_WORLD);
            double us, slowest;
            if (blocking) {
                double t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    run_op(op, send, recv, n, comm, s);
                    CU(cuStreamSynchronize(s));
                    if (barrier) MPI_Barrier(MPI_COMM_WORLD);
                }
                us = 1e6 * (MPI_Wtime() - t0) / iters;
            } else {
                CU(cuEventRecord(e0, s));
                for (int i = 0; i < iters; i++) run_op(op, send, recv, n, comm, s);
                CU(cuEventRecord(e1, s));
                CU(cuEventSynchronize(e1));
                float ms;
                CU(cuEventElapsedTime(&ms, e0, e1));
                us = 1000.0 * ms / iters;
            }
            MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank_ == 0) {
                double alg = (double)bytes / (slowest * 1e-6) / 1e9;
                printf("%-14s %12zu %12zu %12.2f %12.3f %12.3f %s\n", NAMES[op], bytes, n, slowest, alg, alg * bus_factor(op), ok);
                fflush(stdout);
            }
        }
    }
    CU(cuMemFree(send));
    CU(cuMemFree(recv));
    NC(ncclCommDestroy(comm));
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
