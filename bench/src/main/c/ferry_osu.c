// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/*
 * ferry-osu: the native C reference for Ferry's benchmarks (OSU-style loops).
 *
 * Same questions, sizes and iteration policy as the Java suite (dev.ferry.bench.Suite and
 * Question): every measurement is a batch of `reps` invocations timed as one, after a barrier;
 * `warmup` batches are thrown away (for the first size of a series, if at most 64 KiB, enough for
 * 100000 invocations, at most 400: Suite.warmup), `iterations` are kept; the time per operation is the batch
 * time / (reps * ops per invocation). Ops per invocation: 2 for the ping-pong (so the result is the
 * one-way latency, half the round trip), 1 otherwise. Point-to-point results are rank 0's time (rank
 * i pairs with rank i + size/2); collectives report the slowest rank's time per batch.
 * Sizes: bcast and allreduce move `size` bytes (allreduce: size/8 doubles); alltoall sends `size`
 * bytes to every rank; reducescatter sends `size` bytes per rank (size/8/ranks doubles received);
 * allgather receives `size` bytes per rank (size/ranks from every rank). Sizes too small to give
 * every rank one element of reducescatter or allgather are not run (a '#' line says so), as in the
 * Java suite (Question.block).
 *
 *   reps   = clamp(batch_bytes / bytes_per_invocation, min_reps, max_reps)
 *   window = clamp(window_bytes / size, 1, max_window)
 *
 * Memory kinds: pageable (aligned_alloc), pinned (cuMemHostAlloc) and device (cuMemAlloc). The
 * CUDA driver is loaded with dlopen("libcuda.so.1"), so no CUDA header or library is needed to
 * build; without a driver, pinned and device are skipped with the reason. Device buffers are given
 * to MPI only when the library says it is CUDA-aware (MPIX_Query_cuda_support of Open MPI,
 * MPIX_GPU_query_support of MPICH; FERRY_BENCH_FORCE_DEVICE=1 skips the check). The GPU is the
 * node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MV2_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID) modulo the device count, or FERRY_DEVICE.
 *
 * Output (rank 0, CSV on stdout or --out FILE; lines starting with '#' are comments):
 *   impl,bench,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us
 * Quantiles interpolate linearly between order statistics (position q * (n - 1)), as Stats.java.
 *
 * Thread level: MPI_THREAD_SINGLE; FERRY_OSU_THREAD=multiple asks for MPI_THREAD_MULTIPLE, the level
 * Ferry's backends ask for, to tell the library's cost of that level from Ferry's own (a '#' line
 * names the level given).
 *
 * Build: mpicc -O2 -o ferry-osu ferry_osu.c -ldl -lm   (bench/src/main/c/build.sh does it)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the few CUDA driver declarations we need -------------------------------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
#define CU_MEMHOSTALLOC_PORTABLE 0x01

static struct {
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);      /* cuMemAlloc_v2 */
    CUresult (*cuMemFree)(CUdeviceptr);                 /* cuMemFree_v2 */
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned int);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t); /* cuMemsetD8_v2 */
    CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);     /* cuMemcpy (unified addressing) */
    CUresult (*cuGetErrorString)(CUresult, const char **);
} cu;

static int cuda_ok;               /* driver loaded, device context current */
static char cuda_why[512] = "";   /* why not */
static int gpu = -1;

static int world_rank, world_size;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ferry-osu: rank %d: ", world_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void cu_check(CUresult r, const char *what) {
    if (r != 0) {
        const char *s = "?";
        if (cu.cuGetErrorString) cu.cuGetErrorString(r, &s);
        die("%s failed: CUDA error %d (%s)", what, r, s);
    }
}

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static int local_rank(void) {
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        int v = env_int(names[i], -1);
        if (v >= 0) return v;
    }
    return 0;
}

/* Loads the driver and makes the local rank's GPU current; called before MPI_Init, as CUDA-aware MPIs prefer. */
static void cuda_init(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(cuda_why, sizeof cuda_why, "no CUDA driver (libcuda.so.1 not loadable: %s)", dlerror());
        return;
    }
#define SYM(field, name)                                                                   \
    do {                                                                                   \
        *(void **)(&cu.field) = dlsym(h, name);                                            \
        if (!cu.field) {                                                                   \
            snprintf(cuda_why, sizeof cuda_why, "libcuda.so.1 lacks %s", name);            \
            return;                                                                        \
        }                                                                                  \
    } while (0)
    SYM(cuInit, "cuInit");
    SYM(cuDeviceGetCount, "cuDeviceGetCount");
    SYM(cuDeviceGet, "cuDeviceGet");
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    SYM(cuMemAlloc, "cuMemAlloc_v2");
    SYM(cuMemFree, "cuMemFree_v2");
    SYM(cuMemHostAlloc, "cuMemHostAlloc");
    SYM(cuMemFreeHost, "cuMemFreeHost");
    SYM(cuMemsetD8, "cuMemsetD8_v2");
    SYM(cuMemcpy, "cuMemcpy");
    SYM(cuGetErrorString, "cuGetErrorString");
#undef SYM
    CUresult r = cu.cuInit(0);
    if (r != 0) {
        const char *s = "?";
        cu.cuGetErrorString(r, &s);
        snprintf(cuda_why, sizeof cuda_why, "cuInit failed: CUDA error %d (%s)", r, s);
        return;
    }
    int n = 0;
    if (cu.cuDeviceGetCount(&n) != 0 || n == 0) {
        snprintf(cuda_why, sizeof cuda_why, "CUDA driver present but no device visible");
        return;
    }
    gpu = env_int("FERRY_DEVICE", local_rank() % n);
    CUdevice d;
    CUcontext ctx;
    if (cu.cuDeviceGet(&d, gpu) != 0 || cu.cuDevicePrimaryCtxRetain(&ctx, d) != 0 || cu.cuCtxSetCurrent(ctx) != 0) {
        snprintf(cuda_why, sizeof cuda_why, "cannot make GPU %d current", gpu);
        return;
    }
    cuda_ok = 1;
}

/* Whether the MPI library takes device pointers, and why not. */
static int mpi_cuda_aware(char *why, size_t n) {
    if (env_int("FERRY_BENCH_FORCE_DEVICE", 0)) return 1;
    int (*ompi)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support");
    if (ompi) {
        if (ompi()) return 1;
        snprintf(why, n, "the MPI library is not CUDA-aware (MPIX_Query_cuda_support() = 0)");
        return 0;
    }
    int (*mpich)(int, int *) = (int (*)(int, int *))dlsym(RTLD_DEFAULT, "MPIX_GPU_query_support");
    if (mpich) {
        int yes = 0;
        mpich(0 /* MPIX_GPU_SUPPORT_CUDA */, &yes);
        if (yes) return 1;
        snprintf(why, n, "the MPI library is not CUDA-aware (MPIX_GPU_query_support(CUDA) = 0)");
        return 0;
    }
    snprintf(why, n, "the MPI library has no CUDA-support query (not CUDA-aware as far as we can tell; FERRY_BENCH_FORCE_DEVICE=1 to try)");
    return 0;
}

/* ---- memory ------------------------------------------------------------------------------ */
enum mem { PAGEABLE, PINNED, DEVICE };
static const char *mem_names[] = {"pageable", "pinned", "device"};

static void *mem_alloc(enum mem m, size_t bytes) {
    if (bytes == 0) bytes = 1;
    void *p = NULL;
    switch (m) {
    case PAGEABLE:
        p = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) die("out of memory (%zu bytes)", bytes);
        memset(p, 0, bytes);
        return p;
    case PINNED:
        cu_check(cu.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
        memset(p, 0, bytes);
        return p;
    case DEVICE: {
        CUdeviceptr d;
        cu_check(cu.cuMemAlloc(&d, bytes), "cuMemAlloc");
        cu_check(cu.cuMemsetD8(d, 0, bytes), "cuMemsetD8");
        return (void *)(uintptr_t)d;
    }
    }
    return NULL;
}

static void mem_free(enum mem m, void *p) {
    switch (m) {
    case PAGEABLE: free(p); break;
    case PINNED: cu.cuMemFreeHost(p); break;
    case DEVICE: cu.cuMemFree((CUdeviceptr)(uintptr_t)p); break;
    }
}

/* ---- the questions ------------------------------------------------------------------------- */
enum bench { LATENCY, BW, BIBW, BCAST, ALLREDUCE, REDUCESCATTER, ALLGATHER, ALLTOALL, NBENCH };
static const char *bench_names[] = {"latency", "bw", "bibw", "bcast", "allreduce", "reducescatter", "allgather", "alltoall"};

static int is_collective(enum bench b) { return b >= BCAST; }
static int has_window(enum bench b) { return b == BW || b == BIBW; }
static int ops_per_invocation(enum bench b) { return b == LATENCY ? 2 : 1; }

static long long bytes_per_invocation(enum bench b, long long size, int window, int ranks) {
    switch (b) {
    case LATENCY: return 2 * size;
    case BW: return (long long)window * size;
    case BIBW: return 2LL * window * size;
    case BCAST: case ALLREDUCE: case REDUCESCATTER: case ALLGATHER: return size;
    case ALLTOALL: return size * ranks;
    default: return size;
    }
}

/* Elements of each rank's block for the collectives that split `size` over the ranks (rounded down;
 * 0: too small, the size is not run), 1 for the others: Question.block. Reduce-scatter: size is
 * what each rank sends, size/8/ranks doubles per block; all-gather: size is what each rank receives,
 * size/ranks bytes per block. */
static long long block_of(enum bench b, long long size, int ranks) {
    switch (b) {
    case REDUCESCATTER: return size / 8 / ranks;
    case ALLGATHER: return size / ranks;
    default: return 1;
    }
}

struct policy {
    long long sizes[64];
    int nsizes, warmup, iterations, min_reps, max_reps, max_window;
    long long batch_bytes, window_bytes;
};

static int window_of(const struct policy *p, long long size) {
    long long w = p->window_bytes / (size > 0 ? size : 1);
    if (w > p->max_window) w = p->max_window;
    return w < 1 ? 1 : (int)w;
}

static int reps_of(const struct policy *p, enum bench b, long long size, int ranks) {
    long long per = bytes_per_invocation(b, size, has_window(b) ? window_of(p, size) : 1, ranks);
    long long r = p->batch_bytes / (per > 0 ? per : 1);
    if (r > p->max_reps) r = p->max_reps;
    if (r < p->min_reps) r = p->min_reps;
    return (int)r;
}

struct job {
    enum bench b;
    long long size;
    int window, peer, initiator;
    void *s, *r;          /* send and receive buffers (the same one for latency, bw, bcast) */
    char *ack;            /* host acknowledgement byte for bw */
    MPI_Request *req;
};

static void invoke(struct job *j) {
    int n = (int)j->size;
    switch (j->b) {
    case LATENCY:
        if (j->peer < 0) return;
        if (j->initiator) {
            MPI_Send(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD);
            MPI_Recv(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD);
        }
        return;
    case BW:
        if (j->peer < 0) return;
        if (j->initiator) {
            for (int i = 0; i < j->window; i++) MPI_Isend(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, &j->req[i]);
            MPI_Waitall(j->window, j->req, MPI_STATUSES_IGNORE);
            MPI_Recv(j->ack, 1, MPI_BYTE, j->peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < j->window; i++) MPI_Irecv(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, &j->req[i]);
            MPI_Waitall(j->window, j->req, MPI_STATUSES_IGNORE);
            MPI_Send(j->ack, 1, MPI_BYTE, j->peer, 2, MPI_COMM_WORLD);
        }
        return;
    case BIBW:
        if (j->peer < 0) return;
        for (int i = 0; i < j->window; i++) MPI_Irecv(j->r, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, &j->req[i]);
        for (int i = 0; i < j->window; i++) MPI_Isend(j->s, n, MPI_BYTE, j->peer, 1, MPI_COMM_WORLD, &j->req[j->window + i]);
        MPI_Waitall(2 * j->window, j->req, MPI_STATUSES_IGNORE);
        return;
    case BCAST:
        MPI_Bcast(j->s, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        return;
    case ALLREDUCE: {
        int count = (int)(j->size / 8 > 0 ? j->size / 8 : 1);
        MPI_Allreduce(j->s, j->r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return;
    }
    case REDUCESCATTER:
        MPI_Reduce_scatter_block(j->s, j->r, (int)block_of(j->b, j->size, world_size), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return;
    case ALLGATHER: {
        int block = (int)block_of(j->b, j->size, world_size);
        MPI_Allgather(j->s, block, MPI_BYTE, j->r, block, MPI_BYTE, MPI_COMM_WORLD);
        return;
    }
    case ALLTOALL:
        MPI_Alltoall(j->s, n, MPI_BYTE, j->r, n, MPI_BYTE, MPI_COMM_WORLD);
        return;
    default:
        return;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q) {
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : n - 1;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/* Warmup batches: the policy's, and for the first size of a series, when at most 64 KiB, enough for
 * 100000 invocations (at most 400), as Suite.warmup. */
static int warmup_of(const struct policy *p, long long size, int reps, int first) {
    if (!first || size > 64 * 1024) return p->warmup;
    int need = (100000 + reps - 1) / reps;
    if (need > 400) need = 400;
    return need > p->warmup ? need : p->warmup;
}

/* One run: warmup + measured batches; rank 0 prints the CSV line. */
static void run(FILE *out, const struct policy *p, enum bench b, enum mem m, long long size, int first) {
    struct job j = {0};
    j.b = b;
    j.size = size;
    j.window = has_window(b) ? window_of(p, size) : 1;
    int half = world_size / 2;
    j.peer = -1;
    if (world_rank < half) { j.peer = world_rank + half; j.initiator = 1; }
    else if (world_rank < 2 * half) { j.peer = world_rank - half; }
    size_t bytes = (size_t)size;
    if (b == ALLREDUCE) bytes = (size_t)(size / 8 > 0 ? size / 8 : 1) * 8;
    if (b == ALLTOALL) bytes = (size_t)size * world_size;
    size_t rbytes = bytes;
    long long block = block_of(b, size, world_size);
    if (b == REDUCESCATTER) { bytes = (size_t)block * 8 * world_size; rbytes = (size_t)block * 8; }
    if (b == ALLGATHER) { bytes = (size_t)block; rbytes = (size_t)block * world_size; }
    j.s = mem_alloc(m, bytes);
    j.r = (b == BIBW || b == ALLREDUCE || b == REDUCESCATTER || b == ALLGATHER || b == ALLTOALL) ? mem_alloc(m, rbytes) : j.s;
    j.ack = calloc(1, 8);
    j.req = calloc(2 * (size_t)j.window, sizeof(MPI_Request));
    int reps = reps_of(p, b, size, world_size);
    double *t = calloc((size_t)p->iterations, sizeof(double));
    for (int it = -warmup_of(p, size, reps, first); it < p->iterations; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++) invoke(&j);
        double per_op = (MPI_Wtime() - t0) * 1e6 / ((double)reps * ops_per_invocation(b));
        if (is_collective(b)) {
            double slowest;
            MPI_Allreduce(&per_op, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            per_op = slowest;
        }
        if (it >= 0) t[it] = per_op;
    }
    if (world_rank == 0) {
        qsort(t, (size_t)p->iterations, sizeof(double), cmp_double);
        int n = p->iterations;
        fprintf(out, "c,%s,%s,%lld,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", bench_names[b], mem_names[m], size, world_size, j.window,
                reps, n, quantile(t, n, 0.5), t[0], t[n - 1], quantile(t, n, 0.1), quantile(t, n, 0.9));
        fflush(out);
        fprintf(stderr, "[native] %s %s %lld B: %.3g us/op\n", bench_names[b], mem_names[m], size, quantile(t, n, 0.5));
    }
    free(t);
    free(j.req);
    free(j.ack);
    if (j.r != j.s) mem_free(m, j.r);
    mem_free(m, j.s);
}

static int parse_list(const char *s, const char **names, int nnames, int *chosen) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int i = 0; i < nnames; i++) {
            if (strcmp(tok, names[i]) == 0) { chosen[i] = 1; found = 1; }
        }
        if (!found) return -1;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: mpirun -np N ferry-osu [--bench latency,bw,bibw,bcast,allreduce,reducescatter,allgather,alltoall]\n"
            "       [--mem pageable,pinned,device]\n"
            "       [--sizes 8,32,...] [--warmup N] [--iterations N] [--batch-bytes N] [--min-reps N] [--max-reps N]\n"
            "       [--window-bytes N] [--max-window N] [--out FILE] [--time-limit SECONDS]\n"
            "The arguments for a Java suite: java -cp ... dev.ferry.bench.BenchMain --suite quick --print-native-args\n"
            "Environment: FERRY_OSU_THREAD=multiple initializes MPI with MPI_THREAD_MULTIPLE (default MPI_THREAD_SINGLE).\n");
}

int main(int argc, char **argv) {
    struct policy p = {.warmup = 3, .iterations = 10, .min_reps = 2, .max_reps = 1000, .max_window = 64,
                       .batch_bytes = 32LL << 20, .window_bytes = 64LL << 20};
    int benches[NBENCH] = {0}, mems[3] = {0};
    const char *out_path = NULL;
    double time_limit = 0;
    int any_bench = 0, any_mem = 0;
    const char *bad = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v && strncmp(a, "--", 2) == 0 && strcmp(a, "--help") != 0) { bad = a; break; }
        if (strcmp(a, "--sizes") == 0) {
            char buf[2048];
            snprintf(buf, sizeof buf, "%s", v);
            p.nsizes = 0;
            for (char *tok = strtok(buf, ","); tok && p.nsizes < 64; tok = strtok(NULL, ",")) p.sizes[p.nsizes++] = atoll(tok);
            i++;
        } else if (strcmp(a, "--warmup") == 0) { p.warmup = atoi(v); i++; }
        else if (strcmp(a, "--iterations") == 0) { p.iterations = atoi(v); i++; }
        else if (strcmp(a, "--batch-bytes") == 0) { p.batch_bytes = atoll(v); i++; }
        else if (strcmp(a, "--min-reps") == 0) { p.min_reps = atoi(v); i++; }
        else if (strcmp(a, "--max-reps") == 0) { p.max_reps = atoi(v); i++; }
        else if (strcmp(a, "--window-bytes") == 0) { p.window_bytes = atoll(v); i++; }
        else if (strcmp(a, "--max-window") == 0) { p.max_window = atoi(v); i++; }
        else if (strcmp(a, "--out") == 0) { out_path = v; i++; }
        else if (strcmp(a, "--time-limit") == 0) { time_limit = atof(v); i++; }
        else if (strcmp(a, "--bench") == 0) {
            if (parse_list(v, bench_names, NBENCH, benches) != 0) { bad = v; break; }
            any_bench = 1;
            i++;
        } else if (strcmp(a, "--mem") == 0) {
            if (parse_list(v, mem_names, 3, mems) != 0) { bad = v; break; }
            any_mem = 1;
            i++;
        } else { bad = a; break; }
    }
    if (bad || p.iterations < 1 || p.warmup < 0 || p.min_reps < 1 || p.max_reps < p.min_reps) {
        if (bad) fprintf(stderr, "ferry-osu: bad argument '%s'\n", bad);
        usage();
        return 2;
    }
    if (p.nsizes == 0) {
        long long def[] = {8, 128, 2048, 32768, 524288, 8388608};
        for (int i = 0; i < 6; i++) p.sizes[p.nsizes++] = def[i];
    }
    if (!any_bench) for (int i = 0; i < NBENCH; i++) benches[i] = 1;
    if (!any_mem) for (int i = 0; i < 3; i++) mems[i] = 1;

    cuda_init();
    int provided;
    const char *thread = getenv("FERRY_OSU_THREAD");
    int multiple = thread != NULL && strcmp(thread, "multiple") == 0;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    /* which memory kinds every rank can do */
    char why[3][512] = {"", "", ""};
    int ok[3] = {1, cuda_ok, cuda_ok};
    if (!cuda_ok) {
        snprintf(why[PINNED], sizeof why[PINNED], "%s", cuda_why);
        snprintf(why[DEVICE], sizeof why[DEVICE], "%s", cuda_why);
    } else if (!mpi_cuda_aware(why[DEVICE], sizeof why[DEVICE])) {
        ok[DEVICE] = 0;
    }
    int agreed[3];
    MPI_Allreduce(ok, agreed, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    FILE *out = stdout;
    if (world_rank == 0) {
        if (out_path && !(out = fopen(out_path, "w"))) die("cannot write %s", out_path);
        char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int len = 0;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl) *nl = 0;
        char *comma = strchr(lib, ',');
        if (comma) *comma = 0;
        time_t now = time(NULL);
        char date[64];
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
        fprintf(out, "# ferry-osu: %s; %d ranks; %s; %s\n", lib, world_size,
                cuda_ok ? "CUDA driver loaded" : cuda_why, date);
        fprintf(out, "# thread level asked %s, given %s\n", multiple ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SINGLE",
                provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                : provided == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE");
        for (int m = 0; m < 3; m++) {
            if (mems[m] && !agreed[m]) {
                fprintf(out, "# skip %s: %s\n", mem_names[m], why[m][0] ? why[m] : "unavailable on another rank");
                fprintf(stderr, "[native] skip %s: %s\n", mem_names[m], why[m][0] ? why[m] : "unavailable on another rank");
            }
        }
        fprintf(out, "impl,bench,mem,size,ranks,window,reps,iterations,median_us,min_us,max_us,p10_us,p90_us\n");
        fflush(out);
    }
    double start = MPI_Wtime();
    int done = 0, stop = 0;
    for (int b = 0; b < NBENCH && !stop; b++) {
        if (!benches[b]) continue;
        if (!is_collective(b) && world_size < 2) continue;
        for (int m = 0; m < 3 && !stop; m++) {
            if (!mems[m] || !agreed[m]) continue;
            int first = 1;
            for (int s = 0; s < p.nsizes; s++) {
                if (block_of((enum bench)b, p.sizes[s], world_size) < 1) {
                    /* too small to give every rank one element: not run, as in the Java suite */
                    if (world_rank == 0) {
                        fprintf(out, "# skip %s %s %lld B: too small to give each of %d ranks one element\n", bench_names[b], mem_names[m],
                                p.sizes[s], world_size);
                    }
                    continue;
                }
                /* rank 0's clock decides, so that every rank stops before the same run */
                stop = world_rank == 0 && time_limit > 0 && MPI_Wtime() - start >= time_limit;
                MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
                if (stop) {
                    if (world_rank == 0) {
                        fprintf(out, "# stopped: time limit of %g s reached after %d runs\n", time_limit, done);
                        fprintf(stderr, "[native] time limit of %g s reached after %d runs; stopping here\n", time_limit, done);
                    }
                    break;
                }
                run(out, &p, (enum bench)b, (enum mem)m, p.sizes[s], first);
                first = 0;
                done++;
            }
        }
    }
    if (world_rank == 0 && out != stdout) fclose(out);
    MPI_Finalize();
    return 0;
}
