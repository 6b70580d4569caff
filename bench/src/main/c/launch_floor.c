// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/*
 * launch_floor: what one GPU round trip costs a rank, every rank at once (one GPU under CUDA MPS,
 * or one GPU per rank). The floor under a short device collective: the host starts work on the
 * GPU, the work writes a word to pinned host memory, the host spins until it sees it.
 *
 *   mpirun -np 2 launch_floor [ITERATIONS]
 *
 * Rows (every rank runs the row at once, a barrier between batches; median (min-max) over
 * batches of the slowest rank's mean per round trip, µs):
 *   launch              cuLaunchKernel on a non-blocking stream, then spin on the word
 *   launch, priority    the same on a stream of the greatest priority
 *   ctxsync + launch    cuCtxSynchronize first (the device ordering of every Ferry call)
 *   graph               cuGraphLaunch of a captured one-kernel graph, then spin
 *   graph, set params   cuGraphExecKernelNodeSetParams (a new value) before each cuGraphLaunch
 *   ctxsync + graph     cuCtxSynchronize, set params, cuGraphLaunch
 *   ctxevent + graph    cuCtxRecordEvent of the context, cuStreamWaitEvent on the stream, set
 *                       params, cuGraphLaunch: the same order kept on the GPU (CUDA 12.5 drivers on)
 *   ctxsync             cuCtxSynchronize alone, the context idle
 *   ctxevent            cuCtxRecordEvent and cuStreamWaitEvent alone (one stream synchronize per batch)
 *   graph, host params  the graph's kernel reads its value from pinned host memory the host wrote
 *   write-value         cuStreamWriteValue32 (no kernel), then spin
 *   launch CPU only     cuLaunchKernel's own time (one stream synchronize per batch)
 * FLOOR_STREAMS=N makes N more streams of the context, each with one kernel run, first (a context
 * with a library's streams in it). The CUDA driver is loaded with dlopen: no CUDA headers or
 * libraries at build time.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUctx;
typedef void *CUmod;
typedef void *CUfn;
typedef void *CUstream;
typedef void *CUgraph;
typedef void *CUgraphExec;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUctx *, int);
static CUresult (*cuCtxSetCurrent)(CUctx);
static CUresult (*cuModuleLoadData)(CUmod *, const void *);
static CUresult (*cuModuleGetFunction)(CUfn *, CUmod, const char *);
static CUresult (*cuCtxGetStreamPriorityRange)(int *, int *);
static CUresult (*cuStreamCreateWithPriority)(CUstream *, unsigned, int);
static CUresult (*cuLaunchKernel)(CUfn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
static CUresult (*cuMemHostGetDevicePointer)(uint64_t *, void *, unsigned);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuStreamWriteValue32)(CUstream, uint64_t, uint32_t, unsigned);
static CUresult (*cuStreamBeginCapture)(CUstream, int);
static CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
static CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
static CUresult (*cuGraphGetNodes)(CUgraph, void **, size_t *);
static CUresult (*cuGraphKernelNodeGetParams)(void *, void *);
static CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, void *, void *);
static CUresult (*cuEventCreate)(void **, unsigned);
static CUresult (*cuStreamWaitEvent)(CUstream, void *, unsigned);
static CUresult (*cuCtxRecordEvent)(CUctx, void *); /* CUDA 12.5 on; NULL before */

/* CUDA_KERNEL_NODE_PARAMS (v2) */
typedef struct {
    void *func;
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    void **kernelParams;
    void **extra;
    void *kern;
    void *ctx;
} KernelNodeParams;

static int rank;

static void check(CUresult r, const char *what) {
    if (r != 0) {
        fprintf(stderr, "rank %d: %s failed: CUresult %d\n", rank, what, r);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "rank %d: %s not in libcuda.so.1\n", rank, name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* signal(word, value): one thread stores value to word (pinned host memory, mapped) */
static const char *PTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry signal(.param .u64 p, .param .u32 v) {\n"
    " .reg .u64 %rd<2>; .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p];\n ld.param.u32 %r1, [v];\n"
    " st.volatile.global.u32 [%rd1], %r1;\n ret;\n}\n"
    /* relay(word, value): stores *value (pinned host memory) to word */
    ".visible .entry relay(.param .u64 p, .param .u64 v) {\n"
    " .reg .u64 %rd<3>; .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p];\n ld.param.u64 %rd2, [v];\n"
    " ld.volatile.global.u32 %r1, [%rd2];\n"
    " st.volatile.global.u32 [%rd1], %r1;\n ret;\n}\n";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static volatile uint32_t *word;
static uint64_t wordDev;
static uint32_t seq;
static CUfn fn;
static CUstream plain, high;
static CUgraphExec graphExec, setExec, relayExec;
static void *setNode;
static KernelNodeParams setParams;
static uint64_t setP;
static uint32_t setV;
static volatile uint32_t *hostValue;

static void spin(uint32_t v) {
    while (*word != v) {
    }
}

static void launchOn(CUstream s) {
    uint64_t p = wordDev;
    uint32_t v = ++seq;
    void *params[] = {&p, &v};
    check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
    spin(v);
}

enum Row { LAUNCH, LAUNCH_HIGH, CTXSYNC_LAUNCH, GRAPH, GRAPH_SET, CTXSYNC_GRAPH, CTXEVENT_GRAPH, CTXSYNC, CTXEVENT, GRAPH_HOST, WRITE_VALUE,
           LAUNCH_CPU, ROWS };
static const char *NAMES[] = {"launch", "launch, priority", "ctxsync + launch", "graph", "graph, set params", "ctxsync + graph",
                              "ctxevent + graph", "ctxsync", "ctxevent", "graph, host params", "write-value", "launch CPU only"};
static CUctx context;
static void *contextEvent;

/* the context's work so far, waited for by the stream on the GPU */
static void contextOrder(void) {
    check(cuCtxRecordEvent(context, contextEvent), "cuCtxRecordEvent");
    check(cuStreamWaitEvent(plain, contextEvent, 0), "cuStreamWaitEvent");
}

static void graphWithNewValue(void) {
    setV = ++seq;
    check(cuGraphExecKernelNodeSetParams(setExec, setNode, &setParams), "cuGraphExecKernelNodeSetParams");
    check(cuGraphLaunch(setExec, plain), "cuGraphLaunch");
    spin(setV);
}

static void once(enum Row row) {
    switch (row) {
    case LAUNCH: launchOn(plain); break;
    case LAUNCH_HIGH: launchOn(high); break;
    case CTXSYNC_LAUNCH: check(cuCtxSynchronize(), "cuCtxSynchronize"); launchOn(plain); break;
    case GRAPH: {
        /* the graph's kernel writes seq+1 each launch: its parameter is a fixed value, so the word
           is reset first (a host store) and the graph writes 1 */
        *word = 0;
        check(cuGraphLaunch(graphExec, plain), "cuGraphLaunch");
        spin(1);
        break;
    }
    case GRAPH_SET: graphWithNewValue(); break;
    case CTXSYNC_GRAPH: check(cuCtxSynchronize(), "cuCtxSynchronize"); graphWithNewValue(); break;
    case CTXEVENT_GRAPH: contextOrder(); graphWithNewValue(); break;
    case CTXSYNC: check(cuCtxSynchronize(), "cuCtxSynchronize"); break;
    case CTXEVENT: contextOrder(); break;
    case GRAPH_HOST: {
        uint32_t v = ++seq;
        *hostValue = v;
        check(cuGraphLaunch(relayExec, plain), "cuGraphLaunch");
        spin(v);
        break;
    }
    case WRITE_VALUE: {
        uint32_t v = ++seq;
        check(cuStreamWriteValue32(plain, wordDev, v, 0), "cuStreamWriteValue32");
        spin(v);
        break;
    }
    case LAUNCH_CPU: {
        uint64_t p = wordDev;
        uint32_t v = ++seq;
        void *params[] = {&p, &v};
        check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, plain, params, NULL), "cuLaunchKernel");
        break;
    }
    default: break;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 2000;
    const int batches = 9;

    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "rank %d: libcuda.so.1: %s\n", rank, dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cuInit = sym(lib, "cuInit");
    cuDeviceGet = sym(lib, "cuDeviceGet");
    cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain");
    cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent");
    cuModuleLoadData = sym(lib, "cuModuleLoadData");
    cuModuleGetFunction = sym(lib, "cuModuleGetFunction");
    cuCtxGetStreamPriorityRange = sym(lib, "cuCtxGetStreamPriorityRange");
    cuStreamCreateWithPriority = sym(lib, "cuStreamCreateWithPriority");
    cuLaunchKernel = sym(lib, "cuLaunchKernel");
    cuMemHostAlloc = sym(lib, "cuMemHostAlloc");
    cuMemHostGetDevicePointer = sym(lib, "cuMemHostGetDevicePointer_v2");
    cuCtxSynchronize = sym(lib, "cuCtxSynchronize");
    cuStreamSynchronize = sym(lib, "cuStreamSynchronize");
    cuStreamWriteValue32 = sym(lib, "cuStreamWriteValue32_v2");
    cuStreamBeginCapture = sym(lib, "cuStreamBeginCapture_v2");
    cuStreamEndCapture = sym(lib, "cuStreamEndCapture");
    cuGraphInstantiateWithFlags = sym(lib, "cuGraphInstantiateWithFlags");
    cuGraphLaunch = sym(lib, "cuGraphLaunch");
    cuGraphGetNodes = sym(lib, "cuGraphGetNodes");
    cuGraphKernelNodeGetParams = sym(lib, "cuGraphKernelNodeGetParams_v2");
    cuGraphExecKernelNodeSetParams = sym(lib, "cuGraphExecKernelNodeSetParams_v2");
    cuEventCreate = sym(lib, "cuEventCreate");
    cuStreamWaitEvent = sym(lib, "cuStreamWaitEvent");
    cuCtxRecordEvent = dlsym(lib, "cuCtxRecordEvent");

    int dev;
    CUctx ctx;
    CUmod mod;
    const char *ordinal = getenv("FLOOR_DEVICE");
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, ordinal ? atoi(ordinal) : 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    context = ctx;
    check(cuEventCreate(&contextEvent, 0x2 /* DISABLE_TIMING */), "cuEventCreate");
    check(cuModuleLoadData(&mod, PTX), "cuModuleLoadData");
    check(cuModuleGetFunction(&fn, mod, "signal"), "cuModuleGetFunction");
    int least, greatest;
    check(cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange");
    check(cuStreamCreateWithPriority(&plain, 1 /* non-blocking */, 0), "cuStreamCreateWithPriority");
    check(cuStreamCreateWithPriority(&high, 1, greatest), "cuStreamCreateWithPriority (greatest)");
    void *host;
    check(cuMemHostAlloc(&host, 128, 0x2 /* DEVICEMAP */ | 0x1 /* PORTABLE */), "cuMemHostAlloc");
    word = host;
    check(cuMemHostGetDevicePointer(&wordDev, host, 0), "cuMemHostGetDevicePointer");
    *word = 0;
    const char *extra = getenv("FLOOR_STREAMS");
    for (int i = 0; extra && i < atoi(extra); i++) { /* streams with history, as a library's */
        CUstream s;
        check(cuStreamCreateWithPriority(&s, 1, 0), "cuStreamCreateWithPriority (FLOOR_STREAMS)");
        launchOn(s);
    }

    { /* the graph: one launch writing 1 */
        CUgraph g;
        uint64_t p = wordDev;
        uint32_t v = 1;
        void *params[] = {&p, &v};
        check(cuStreamBeginCapture(plain, 2 /* relaxed */), "cuStreamBeginCapture");
        check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, plain, params, NULL), "cuLaunchKernel (capture)");
        check(cuStreamEndCapture(plain, &g), "cuStreamEndCapture");
        check(cuGraphInstantiateWithFlags(&graphExec, g, 0), "cuGraphInstantiateWithFlags");
    }
    { /* the same graph whose value is set before each launch */
        CUgraph g;
        setP = wordDev;
        setV = 1;
        void *params[] = {&setP, &setV};
        check(cuStreamBeginCapture(plain, 2), "cuStreamBeginCapture");
        check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, plain, params, NULL), "cuLaunchKernel (capture)");
        check(cuStreamEndCapture(plain, &g), "cuStreamEndCapture");
        size_t n = 1;
        check(cuGraphGetNodes(g, &setNode, &n), "cuGraphGetNodes");
        check(cuGraphKernelNodeGetParams(setNode, &setParams), "cuGraphKernelNodeGetParams");
        static void *setArgs[2];
        setArgs[0] = &setP;
        setArgs[1] = &setV;
        setParams.kernelParams = setArgs;
        setParams.extra = NULL;
        check(cuGraphInstantiateWithFlags(&setExec, g, 0), "cuGraphInstantiateWithFlags");
    }
    { /* relay: the value comes from pinned host memory */
        CUgraph g;
        CUfn relay;
        check(cuModuleGetFunction(&relay, mod, "relay"), "cuModuleGetFunction (relay)");
        hostValue = (volatile uint32_t *)host + 16;
        uint64_t p = wordDev, v = wordDev + 64;
        void *params[] = {&p, &v};
        check(cuStreamBeginCapture(plain, 2), "cuStreamBeginCapture");
        check(cuLaunchKernel(relay, 1, 1, 1, 1, 1, 1, 0, plain, params, NULL), "cuLaunchKernel (capture relay)");
        check(cuStreamEndCapture(plain, &g), "cuStreamEndCapture");
        check(cuGraphInstantiateWithFlags(&relayExec, g, 0), "cuGraphInstantiateWithFlags");
    }

    if (rank == 0) {
        printf("launch_floor: %d ranks, %d round trips per batch, %d batches; stream priorities %d (least) .. %d (greatest); %s more streams\n",
               size, iterations, batches, least, greatest, extra ? extra : "no");
        printf("%-18s %-30s %s\n", "row", "all ranks at once, us", "rank 0 alone, us");
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int row = 0; row < ROWS; row++) {
            if ((row == CTXEVENT_GRAPH || row == CTXEVENT) && !cuCtxRecordEvent) {
                if (rank == 0 && pass == 1) printf("%-18s (the driver has no cuCtxRecordEvent)\n", NAMES[row]);
                continue;
            }
            double together[16], alone[16];
            for (int mode = 0; mode < 2; mode++) { /* 0: every rank; 1: rank 0 alone */
                double *out = mode == 0 ? together : alone;
                int active = mode == 0 || rank == 0;
                for (int i = 0; active && i < iterations / 4; i++) {
                    once(row); /* warm-up */
                }
                check(cuStreamSynchronize(plain), "cuStreamSynchronize");
                for (int b = 0; b < batches; b++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = now();
                    for (int i = 0; active && i < iterations; i++) {
                        once(row);
                    }
                    double mine = active ? (now() - t0) / iterations : 0, slowest;
                    check(cuStreamSynchronize(plain), "cuStreamSynchronize");
                    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                    out[b] = slowest;
                }
                qsort(out, batches, sizeof(double), cmp);
            }
            if (rank == 0 && pass == 1) { /* the second pass: after every row has warmed up */
                char a[64], b[64];
                snprintf(a, sizeof a, "%.2f (%.2f-%.2f)", together[batches / 2], together[0], together[batches - 1]);
                snprintf(b, sizeof b, "%.2f (%.2f-%.2f)", alone[batches / 2], alone[0], alone[batches - 1]);
                printf("%-18s %-30s %s\n", NAMES[row], a, b);
                fflush(stdout);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
