// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* The Open MPI smcuda crash of issue #14 (SIGSEGV in mca_rcache_rgpusm_register inside MPI_Wait),
 * looked for in C, without Ferry: two ranks on one GPU (CUDA MPS), CUDA-aware Open MPI.
 *
 *   smcuda-probe realloc    device buffers allocated and freed around every exchange (addresses
 *                           repeat, sizes vary 8 B .. 1 MiB), 400 iterations, every byte checked
 *   smcuda-probe truncate   a device message received with a shorter count (MPI_ERR_TRUNCATE,
 *                           errors returned), then 200 small device exchanges as in the report
 *
 *   smcuda-probe ctx-own    the exchanges of "realloc" with a context of the program's own
 *                           (cuCtxCreate) current, the buffers allocated in it
 *   smcuda-probe ctx-other  the same context current, the buffers in the device's primary context
 *   smcuda-probe free-pending  what Ferry did before buffer lifetimes: the sender's device buffer
 *                           freed while its MPI_Isend is pending (the receiver posts late), then
 *                           small exchanges
 *   smcuda-probe irecv-truncate [BYTES]   the sequence of device receives that crashed a Java rank,
 *                           as it reached MPI: a longer device message received by MPI_Mprobe and
 *                           MPI_Mrecv into host memory, a longer one received by MPI_Irecv into a
 *                           shorter device buffer (MPI_ERR_TRUNCATE), then a 7-byte message by
 *                           MPI_Mprobe and MPI_Mrecv into device memory; each followed by small
 *                           device exchanges (BYTES: the long messages, default 100003)
 *   smcuda-probe mrecv-truncate [BYTES]   the same, but the second long message is matched first
 *                           (MPI_Mprobe) and received whole into host memory, as Ferry does now
 *   smcuda-probe PHASE cuda-first   the same with the CUDA context made current before MPI_Init
 *                           (as a Java rank with Ferry's device support does)
 *
 * Build: mpicc -O2 -I$CUDA/include smcuda-probe.c -L$CUDA/lib64 -lcudart -ldl -o smcuda-probe
 * Each phase ends with "PHASE ok" or "PHASE FAIL ..." on rank 0; a phase that does not finish in
 * 30 s prints "PHASE HANG at STEP" and exits 3. */
#include <mpi.h>
#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *phase = "?";
static volatile const char *step = "start";
static int rank;
static CUresult (*cuCtxSetCurrent_fn)(CUcontext);
#define cuCtxSetCurrent(c) cuCtxSetCurrent_fn(c)

static void on_alarm(int sig) {
    (void) sig;
    char msg[256];
    int n = snprintf(msg, sizeof msg, "rank %d: %s HANG at %s\n", rank, phase, step);
    write(2, msg, n);
    _exit(3);
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #x, cudaGetErrorString(e_), step); exit(2); } } while (0)

static void fill(unsigned char *h, size_t n, int seed) { for (size_t i = 0; i < n; i++) h[i] = (unsigned char) (i * 131 + seed * 7); }

/* rank 0 sends n bytes of pattern seed to rank 1, rank 1 checks: returns wrong bytes (rank 1) */
static long exchange(size_t n, int seed, unsigned char *host) {
    void *d;
    long bad = 0;
    step = "cudaMalloc"; CK(cudaMalloc(&d, n));
    MPI_Request r;
    if (rank == 0) {
        fill(host, n, seed);
        step = "cudaMemcpy H2D"; CK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
        step = "MPI_Isend"; MPI_Isend(d, (int) n, MPI_BYTE, 1, seed, MPI_COMM_WORLD, &r);
        step = "MPI_Wait send"; MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        step = "cudaMemset"; CK(cudaMemset(d, 0xEE, n));
        step = "MPI_Irecv"; MPI_Irecv(d, (int) n, MPI_BYTE, 0, seed, MPI_COMM_WORLD, &r);
        step = "MPI_Wait recv"; MPI_Wait(&r, MPI_STATUS_IGNORE);
        step = "cudaMemcpy D2H"; CK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
        unsigned char *want = malloc(n);
        fill(want, n, seed);
        for (size_t i = 0; i < n; i++) bad += host[i] != want[i];
        free(want);
    }
    step = "cudaFree"; CK(cudaFree(d));
    return bad;
}

/* rank 0 sends n bytes of device memory with MPI_Send; rank 1 matches with MPI_Mprobe and receives with
 * MPI_Mrecv into device memory of room bytes, or, when the message is longer, whole into host memory
 * (as Ferry's blocking receive does); returns wrong bytes (rank 1) */
static long matched_exchange(size_t n, size_t room, int tag, unsigned char *host) {
    void *d;
    long bad = 0;
    step = "cudaMalloc"; CK(cudaMalloc(&d, n > room ? n : room));
    if (rank == 0) {
        fill(host, n, tag);
        step = "cudaMemcpy H2D"; CK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
        step = "MPI_Send (matched)"; MPI_Send(d, (int) n, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
    } else {
        MPI_Message m;
        MPI_Status st;
        int got;
        step = "MPI_Mprobe"; MPI_Mprobe(0, tag, MPI_COMM_WORLD, &m, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        if ((size_t) got > room) {
            unsigned char *whole = malloc(got);
            step = "MPI_Mrecv into host"; MPI_Mrecv(whole, got, MPI_BYTE, &m, MPI_STATUS_IGNORE);
            CK(cudaMemcpy(d, whole, room, cudaMemcpyHostToDevice));
            free(whole);
        } else {
            step = "MPI_Mrecv into device"; MPI_Mrecv(d, got, MPI_BYTE, &m, MPI_STATUS_IGNORE);
        }
        step = "cudaMemcpy D2H"; CK(cudaMemcpy(host, d, got < (int) room ? got : room, cudaMemcpyDeviceToHost));
        unsigned char *want = malloc(n);
        fill(want, n, tag);
        for (size_t i = 0; i < (got < (int) room ? got : room); i++) bad += host[i] != want[i];
        free(want);
    }
    step = "cudaFree"; CK(cudaFree(d));
    return bad;
}

int main(int argc, char **argv) {
    phase = argc > 1 ? argv[1] : "realloc";
    signal(SIGALRM, on_alarm);
    alarm(30);
    int cuda_first = argc > 2 && strcmp(argv[2], "cuda-first") == 0;
    if (cuda_first) {
        step = "cudaFree(0) before MPI_Init"; CK(cudaSetDevice(0)); CK(cudaFree(0));
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CK(cudaSetDevice(0));
    unsigned char *host = malloc(1 << 20);
    long bad = 0;
    if (strcmp(phase, "realloc") == 0) {
        for (int it = 0; it < 400; it++) bad += exchange((size_t) 8 << (it % 18), it, host);
    } else if (strcmp(phase, "free-pending") == 0) {
        for (int it = 0; it < 20; it++) {
            size_t n = it % 2 ? 400 : 100003;
            void *d;
            MPI_Request r;
            step = "cudaMalloc"; CK(cudaMalloc(&d, n));
            if (rank == 0) {
                step = "MPI_Isend then cudaFree";
                MPI_Isend(d, (int) n, MPI_BYTE, 1, 1000 + it, MPI_COMM_WORLD, &r);
                CK(cudaFree(d));
                step = "MPI_Wait on freed memory";
                int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) printf("rank 0: MPI_Wait on freed memory returned %d at %d\n", rc, it);
            } else {
                usleep(20000);
                step = "MPI_Recv of freed memory";
                MPI_Recv(d, (int) n, MPI_BYTE, 0, 1000 + it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CK(cudaFree(d));
            }
            bad += exchange(400, it, host);
        }
    } else if (strcmp(phase, "irecv-truncate") == 0 || strcmp(phase, "mrecv-truncate") == 0) {
        size_t big = argc > 3 ? (size_t) atol(argv[3]) : 100003, room = big / 2;
        unsigned char *scratch = malloc(big > (1 << 20) ? big : (1 << 20));
        step = "1: a longer device message, Mprobe + Mrecv into host";
        bad += matched_exchange(big, room, 11, scratch);
        for (int it = 0; it < 5; it++) bad += matched_exchange(64, 64, 100 + it, scratch);
        if (strcmp(phase, "irecv-truncate") == 0) {
            void *d;
            /* the receiver's buffer is exactly as long as its receive count, as a Java rank's is */
            step = "cudaMalloc 2"; CK(cudaMalloc(&d, rank == 0 ? big : room));
            if (rank == 0) {
                step = "2: MPI_Send of the longer device message";
                MPI_Send(d, (int) big, MPI_BYTE, 1, 12, MPI_COMM_WORLD);
            } else {
                MPI_Request r;
                step = "2: MPI_Irecv of a shorter device buffer";
                MPI_Irecv(d, (int) room, MPI_BYTE, 0, 12, MPI_COMM_WORLD, &r);
                int rc = MPI_Wait(&r, MPI_STATUS_IGNORE), cls;
                MPI_Error_class(rc, &cls);
                printf("rank 1: truncated MPI_Irecv returned class %d (MPI_ERR_TRUNCATE=%d)\n", cls, MPI_ERR_TRUNCATE);
                fflush(stdout);
            }
            step = "cudaFree 2"; CK(cudaFree(d));
        } else {
            step = "2: a longer device message, Mprobe + Mrecv into host";
            bad += matched_exchange(big, room, 12, scratch);
        }
        for (int it = 0; it < 5; it++) bad += matched_exchange(64, 64, 200 + it, scratch);
        step = "3: a 7-byte device message into 16 bytes, Mprobe + Mrecv into device";
        bad += matched_exchange(7, 16, 13, scratch);
        for (int it = 0; it < 50; it++) bad += matched_exchange(it % 2 ? 64 : big, big, 300 + it, scratch);
        free(scratch);
    } else if (strncmp(phase, "ctx-", 4) == 0) {
        /* a context of the program's own, current during the MPI calls: with ctx-own the buffers are
         * allocated in it (exchange() runs with it current), with ctx-other in the primary context */
        /* the driver API through dlsym: no libcuda.so to link against on the build machine */
        void *cu = dlopen("libcuda.so.1", RTLD_NOW);
        if (!cu) { fprintf(stderr, "rank %d: dlopen libcuda.so.1: %s\n", rank, dlerror()); exit(2); }
        CUresult (*deviceGet)(CUdevice *, int) = (CUresult (*)(CUdevice *, int)) dlsym(cu, "cuDeviceGet");
        CUresult (*retain)(CUcontext *, CUdevice) = (CUresult (*)(CUcontext *, CUdevice)) dlsym(cu, "cuDevicePrimaryCtxRetain");
        CUresult (*create)(CUcontext *, unsigned, CUdevice) = (CUresult (*)(CUcontext *, unsigned, CUdevice)) dlsym(cu, "cuCtxCreate_v2");
        cuCtxSetCurrent_fn = (CUresult (*)(CUcontext)) dlsym(cu, "cuCtxSetCurrent");
        CUdevice dev;
        CUcontext mine, primary;
        step = "cuDeviceGet"; if (deviceGet(&dev, 0) != CUDA_SUCCESS) { fprintf(stderr, "cuDeviceGet failed\n"); exit(2); }
        step = "cuDevicePrimaryCtxRetain"; retain(&primary, dev);
        step = "cuCtxCreate";
        CUresult cr = create(&mine, 0, dev);
        if (cr != CUDA_SUCCESS) { fprintf(stderr, "rank %d: cuCtxCreate failed: %d\n", rank, (int) cr); exit(2); }
        int other = strcmp(phase, "ctx-other") == 0;
        for (int it = 0; it < 200; it++) {
            size_t n = it % 2 ? 400 : (size_t) 8 << (it % 18);
            if (other) {
                void *d;
                cuCtxSetCurrent(primary);
                step = "cudaMalloc (primary)"; CK(cudaMalloc(&d, n));
                if (rank == 0) { fill(host, n, it); CK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice)); } else CK(cudaMemset(d, 0xEE, n));
                CK(cudaDeviceSynchronize());
                cuCtxSetCurrent(mine);
                MPI_Request r;
                step = rank == 0 ? "MPI_Isend (own context current)" : "MPI_Irecv (own context current)";
                if (rank == 0) MPI_Isend(d, (int) n, MPI_BYTE, 1, it, MPI_COMM_WORLD, &r); else MPI_Irecv(d, (int) n, MPI_BYTE, 0, it, MPI_COMM_WORLD, &r);
                int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) { fprintf(stderr, "rank %d: MPI_Wait returned %d at %d\n", rank, rc, it); bad++; }
                cuCtxSetCurrent(primary);
                if (rank == 1) {
                    CK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
                    unsigned char *want = malloc(n); fill(want, n, it);
                    for (size_t i = 0; i < n; i++) bad += host[i] != want[i];
                    free(want);
                }
                CK(cudaFree(d));
            } else {
                cuCtxSetCurrent(mine);
                bad += exchange(n, it, host);
            }
        }
        cuCtxSetCurrent(primary);
    } else {
        void *d;
        size_t n = 100003;
        step = "cudaMalloc big"; CK(cudaMalloc(&d, n));
        int rc = MPI_SUCCESS;
        MPI_Request r;
        if (rank == 0) {
            step = "MPI_Isend 100003";
            MPI_Isend(d, (int) n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r);
            /* the send may never complete after the receiver's truncation: poll 5 s, then go on */
            int done = 0;
            double t0 = MPI_Wtime();
            step = "MPI_Test truncated send";
            while (!done && MPI_Wtime() - t0 < 5) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            printf("rank 0: the truncated send %s\n", done ? "completed" : "did not complete within 5 s");
        } else {
            step = "MPI_Recv 50001";
            rc = MPI_Recv(d, 50001, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int cls; MPI_Error_class(rc, &cls);
            printf("rank 1: truncated receive returned class %d (MPI_ERR_TRUNCATE=%d)\n", cls, MPI_ERR_TRUNCATE);
        }
        fflush(stdout);
        for (int it = 0; it < 200; it++) bad += exchange(400, it, host);
    }
    long total = 0;
    step = "MPI_Reduce";
    MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s%s %s (%ld wrong bytes)\n", phase, cuda_first ? " cuda-first" : "", total == 0 ? "ok" : "FAIL", total);
    step = "MPI_Finalize";
    MPI_Finalize();
    return 0;
}
