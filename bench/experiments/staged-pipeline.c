// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* The staged pipeline in C, with nothing of Ferry in it: the native reference for what a host-staged
 * device transfer can reach on a machine, next to the plain pinned host-to-host MPI it rides on.
 *
 * Question: is the gap between Ferry's `staged` pipeline and native pinned host MPI (#3) Java's and
 * Ferry's, or does the same pipeline written in C, with no protocol at all, have it too?
 *
 * A config is MEM:CHUNK:DEPTH:RING[:RAMP]
 *   host    pinned host buffers straight to MPI (no copies); RING distinct message buffers, cycled
 *           (1 is osu_bw and osu_latency: one buffer); CHUNK and DEPTH ignored
 *   staged  device buffers: the message is cut in CHUNK-byte pieces ("auto": Ferry's rule, 0: one
 *           piece), each copied device-to-host on a stream into one of RING pinned staging buffers
 *           (used in turn) and sent as soon as its copy is done, at most DEPTH pieces in flight; the
 *           receiver receives into its RING buffers and copies each piece to the device as it lands;
 *           RAMP: the pieces grow from RAMP bytes (doubling) to CHUNK and shrink back at the end
 * Benches: pingpong (one-way GB/s from round trips, as osu_latency) and window (osu_bw: W = clamp(256 MiB
 * / size, 1, 64) messages, then a 1-byte acknowledgement). Every size: 2 batches of warm-up, ITERS
 * batches timed (each about 64 MiB or 200 invocations), then one transfer whose every byte is checked.
 *
 *   mpicc -O2 -o staged-pipeline staged-pipeline.c -ldl
 *   mpirun -np 2 ./staged-pipeline [--sizes 1m,4m,...] [--iters 10] [--bench pingpong,window] CONFIG...
 * Output (rank 0, CSV): bench,config,mem,chunk,depth,ring,size,window,median_GBps,min_GBps,max_GBps,check
 * (StagedCheck --native-staged FILE puts the first staged config next to Ferry's pipeline.)
 * The GPU is the node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID) modulo the GPUs visible, as ferry-osu. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long dptr;
static struct {
    int (*Init)(unsigned); int (*DeviceGet)(int *, int); int (*PrimaryCtxRetain)(void **, int); int (*CtxSetCurrent)(void *);
    int (*MemAlloc)(dptr *, size_t); int (*MemHostAlloc)(void **, size_t, unsigned); int (*MemsetD8)(dptr, unsigned char, size_t);
    int (*MemcpyDtoH)(void *, dptr, size_t); int (*MemcpyDtoHAsync)(void *, dptr, size_t, void *);
    int (*MemcpyHtoDAsync)(dptr, const void *, size_t, void *); int (*StreamCreate)(void **, unsigned);
    int (*EventCreate)(void **, unsigned); int (*EventRecord)(void *, void *); int (*EventQuery)(void *); int (*CtxSynchronize)(void);
    int (*MemFreeHost)(void *); int (*DeviceGetCount)(int *);
} cu;
static int rank;

static void check(int r, const char *what) {
    if (r) { fprintf(stderr, "staged-pipeline: rank %d: %s failed: CUDA error %d\n", rank, what, r); MPI_Abort(MPI_COMM_WORLD, 1); }
}

static void cuda_init(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) { fprintf(stderr, "staged-pipeline: no CUDA driver: %s\n", dlerror()); exit(2); }
    const char *names[] = {"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemHostAlloc",
        "cuMemsetD8_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2", "cuStreamCreate", "cuEventCreate",
        "cuEventRecord", "cuEventQuery", "cuCtxSynchronize", "cuMemFreeHost", "cuDeviceGetCount"};
    void **slots = (void **)&cu;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!(slots[i] = dlsym(h, names[i]))) { fprintf(stderr, "staged-pipeline: libcuda.so.1 lacks %s\n", names[i]); exit(2); }
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!lr) lr = getenv("MPI_LOCALRANKID");
    int dev, count = 0; void *ctx;
    check(cu.Init(0), "cuInit");
    check(cu.DeviceGetCount(&count), "cuDeviceGetCount");
    if (count < 1) { fprintf(stderr, "staged-pipeline: no GPU visible\n"); exit(2); }
    check(cu.DeviceGet(&dev, (lr ? atoi(lr) : 0) % count), "cuDeviceGet"); /* one GPU per rank, or shared when fewer */
    check(cu.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
}

#define MAXRING 64
struct config { int staged; long chunk; int depth, ring; long ramp; const char *text; }; /* chunk -1: auto; ramp 0: none */
static void *stage[MAXRING], *ev_out[MAXRING], *ev_in[MAXRING], *s_out, *s_in;
static void *host[MAXRING];
static dptr dsrc, ddst;
static int peer;

static long chunk_for(const struct config *c, long n) {
    if (c->chunk == 0) return n;
    if (c->chunk > 0) return c->chunk < n ? c->chunk : n;
    if (n <= (1L << 20)) return n; /* Ferry: threshold 1 MiB, then ~n/(2 x depth 4) within [1 MiB, 4 MiB], 64 KiB aligned */
    long want = (n + 7) / 8;
    want = (want + 65535) / 65536 * 65536;
    return want < (1L << 20) ? 1L << 20 : want > (4L << 20) ? 4L << 20 : want;
}

/* The pieces of one message: CHUNK-byte pieces, or with RAMP, pieces that grow from RAMP bytes,
 * doubling, up to CHUNK and shrink back to RAMP at the end (the first device-to-host copy and the
 * last host-to-device copy, which nothing overlaps, are then small). */
#define MAXPIECES 4096
static long poff[MAXPIECES], plen[MAXPIECES];
static long plan(const struct config *c, long n) {
    long ch = chunk_for(c, n), rest = n, up = 0, down = 0, downs[64];
    for (long s = c->ramp; c->ramp > 0 && s < ch && rest > 0; s *= 2) {
        long a = s < rest ? s : rest;
        plen[up++] = a; rest -= a;
        if (rest == 0) break;
        a = s < rest ? s : rest;
        downs[down++] = a; rest -= a;
    }
    long k = up;
    while (rest > 0) {
        if (k + down >= MAXPIECES) { fprintf(stderr, "staged-pipeline: too many pieces\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
        long a = ch < rest ? ch : rest;
        plen[k++] = a; rest -= a;
    }
    while (down > 0) plen[k++] = downs[--down];
    for (long i = 0, off = 0; i < k; off += plen[i], i++) poff[i] = off;
    return k;
}

/* Sends `msgs` messages of n bytes from device memory (all from dsrc, as osu reuses its buffer). */
static void staged_send(const struct config *c, long n, int msgs) {
    long per = plan(c, n), total = per * msgs, copy = 0, sent = 0, done = 0;
    MPI_Request req[MAXRING];
    while (done < total) {
        while (copy < total && copy - done < c->depth) {
            long off = poff[copy % per], len = plen[copy % per];
            check(cu.MemcpyDtoHAsync(stage[copy % c->ring], dsrc + off, len, s_out), "cuMemcpyDtoHAsync");
            check(cu.EventRecord(ev_out[copy % c->ring], s_out), "cuEventRecord");
            copy++;
        }
        while (sent < copy) {
            int q = cu.EventQuery(ev_out[sent % c->ring]);
            if (q == 600) break; /* CUDA_ERROR_NOT_READY */
            check(q, "cuEventQuery");
            long len = plen[sent % per];
            MPI_Isend(stage[sent % c->ring], (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[sent % c->ring]);
            sent++;
        }
        while (done < sent) {
            int flag;
            MPI_Test(&req[done % c->ring], &flag, MPI_STATUS_IGNORE);
            if (!flag) break;
            done++;
        }
    }
}

static void staged_recv(const struct config *c, long n, int msgs) {
    long per = plan(c, n), total = per * msgs, post = 0, land = 0, done = 0;
    MPI_Request req[MAXRING];
    while (done < total) {
        while (post < total && post - done < c->depth) {
            long len = plen[post % per];
            MPI_Irecv(stage[post % c->ring], (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[post % c->ring]);
            post++;
        }
        while (land < post) {
            int flag;
            MPI_Test(&req[land % c->ring], &flag, MPI_STATUS_IGNORE);
            if (!flag) break;
            long off = poff[land % per], len = plen[land % per];
            check(cu.MemcpyHtoDAsync(ddst + off, stage[land % c->ring], len, s_in), "cuMemcpyHtoDAsync");
            check(cu.EventRecord(ev_in[land % c->ring], s_in), "cuEventRecord");
            land++;
        }
        while (done < land) {
            int q = cu.EventQuery(ev_in[done % c->ring]);
            if (q == 600) break;
            check(q, "cuEventQuery");
            done++;
        }
    }
}

static void host_send(const struct config *c, long n, int msgs) {
    MPI_Request req[64];
    for (int m = 0; m < msgs; m++) MPI_Isend(host[m % c->ring], (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[m]);
    MPI_Waitall(msgs, req, MPI_STATUSES_IGNORE);
}

static void host_recv(const struct config *c, long n, int msgs) {
    MPI_Request req[64];
    for (int m = 0; m < msgs; m++) MPI_Irecv(host[m % c->ring], (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[m]);
    MPI_Waitall(msgs, req, MPI_STATUSES_IGNORE);
}

static void xsend(const struct config *c, long n, int msgs) { c->staged ? staged_send(c, n, msgs) : host_send(c, n, msgs); }
static void xrecv(const struct config *c, long n, int msgs) { c->staged ? staged_recv(c, n, msgs) : host_recv(c, n, msgs); }

/* One invocation: a round trip (pingpong) or a window and its acknowledgement. */
static void invoke(const struct config *c, int window_bench, long n, int w) {
    char ack = 0;
    if (!window_bench) {
        if (rank == 0) { xsend(c, n, 1); xrecv(c, n, 1); } else { xrecv(c, n, 1); xsend(c, n, 1); }
    } else if (rank == 0) {
        xsend(c, n, w);
        MPI_Recv(&ack, 1, MPI_BYTE, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        xrecv(c, n, w);
        MPI_Send(&ack, 1, MPI_BYTE, peer, 9, MPI_COMM_WORLD);
    }
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    cuda_init();
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) { if (!rank) fprintf(stderr, "staged-pipeline: run with 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    peer = 1 - rank;
    long sizes[32]; int nsizes = 0, iters = 10, benches = 3;
    struct config cfg[64]; int ncfg = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) { iters = atoi(argv[++i]); iters = iters < 1 ? 1 : iters > 64 ? 64 : iters; }
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc) { char *b = argv[++i]; benches = (strstr(b, "pingpong") ? 1 : 0) | (strstr(b, "window") ? 2 : 0); }
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            for (char *t = strtok(argv[++i], ","); t && nsizes < 32; t = strtok(NULL, ",")) {
                char *e; long v = strtol(t, &e, 10);
                sizes[nsizes++] = v << (*e == 'k' ? 10 : *e == 'm' ? 20 : 0);
            }
        } else if (ncfg < 64) {
            struct config *c = &cfg[ncfg++];
            char mem[16], chunk[16]; long mul = 1;
            c->text = argv[i]; c->depth = 4; c->ring = 8;
            char ramp[16] = "0";
            if (sscanf(argv[i], "%15[a-z]:%15[0-9a-z]:%d:%d:%15[0-9a-z]", mem, chunk, &c->depth, &c->ring, ramp) < 1) { if (!rank) fprintf(stderr, "bad config %s\n", argv[i]); MPI_Abort(MPI_COMM_WORLD, 2); }
            c->staged = !strcmp(mem, "staged");
            if (!strcmp(chunk, "auto")) c->chunk = -1;
            else { size_t l = strlen(chunk); if (chunk[l - 1] == 'k') mul = 1024; if (chunk[l - 1] == 'm') mul = 1 << 20; c->chunk = atol(chunk) * mul; }
            { size_t l = strlen(ramp); mul = ramp[l - 1] == 'k' ? 1024 : ramp[l - 1] == 'm' ? 1 << 20 : 1; c->ramp = atol(ramp) * mul; }
            if (c->ring < 1 || c->ring > MAXRING || c->depth < 1 || c->depth > c->ring) { if (!rank) fprintf(stderr, "config %s: need 1 <= depth <= ring <= %d\n", argv[i], MAXRING); MPI_Abort(MPI_COMM_WORLD, 2); }
        }
    }
    if (!nsizes) { for (long s = 1L << 20; s <= 256L << 20; s *= 2) sizes[nsizes++] = s; }
    long maxn = 0;
    for (int i = 0; i < nsizes; i++) if (sizes[i] > maxn) maxn = sizes[i];
    check(cu.MemAlloc(&dsrc, maxn), "cuMemAlloc"); check(cu.MemAlloc(&ddst, maxn), "cuMemAlloc");
    check(cu.StreamCreate(&s_out, 1), "cuStreamCreate"); check(cu.StreamCreate(&s_in, 1), "cuStreamCreate");
    for (int i = 0; i < MAXRING; i++) {
        check(cu.EventCreate(&ev_out[i], 2), "cuEventCreate"); check(cu.EventCreate(&ev_in[i], 2), "cuEventCreate"); /* CU_EVENT_DISABLE_TIMING */
    }
    if (!rank) {
        char model[256] = "?", line[512];
        FILE *f = fopen("/proc/cpuinfo", "r");
        while (f && fgets(line, sizeof line, f)) if (!strncmp(line, "model name", 10)) { snprintf(model, sizeof model, "%s", strchr(line, ':') + 2); model[strcspn(model, "\n")] = 0; break; }
        if (f) fclose(f);
        char v[MPI_MAX_LIBRARY_VERSION_STRING]; int l; MPI_Get_library_version(v, &l); v[strcspn(v, "\n,")] = 0;
        printf("# staged-pipeline: %s; CPU %s\n", v, model);
        printf("bench,config,mem,chunk,depth,ring,size,window,median_GBps,min_GBps,max_GBps,check\n");
        fflush(stdout);
    }
    for (int b = 0; b < 2; b++) {
        if (!(benches & (1 << b))) continue;
        for (int k = 0; k < ncfg; k++) {
            struct config *c = &cfg[k];
            /* this config's buffers (pinned): RING staging buffers of one chunk, or RING host messages */
            long bufbytes = !c->staged || c->chunk == 0 ? maxn : c->chunk > 0 ? c->chunk : 4L << 20;
            if (bufbytes > maxn) bufbytes = maxn;
            void **bufs = c->staged ? stage : host;
            for (int i = 0; i < c->ring; i++) { check(cu.MemHostAlloc(&bufs[i], bufbytes, 1), "cuMemHostAlloc"); memset(bufs[i], 0, bufbytes); }
            for (int si = 0; si < nsizes; si++) {
                long n = sizes[si];
                int w = b ? (int)((256L << 20) / n) : 1;
                if (w > 64) w = 64;
                if (w < 1) w = 1;
                long per = b ? n * w : 2 * n, reps = (64L << 20) / per;
                if (reps > 200) reps = 200;
                if (reps < 1) reps = 1;
                unsigned char v = (unsigned char)(1 + (n / 4096 + k * 31 + b * 7) % 250);
                check(cu.MemsetD8(dsrc, v, n), "cuMemsetD8");
                for (int i = 0; i < c->ring && !c->staged; i++) memset(host[i], v, n);
                check(cu.CtxSynchronize(), "cuCtxSynchronize");
                double t[64];
                for (int it = -2; it < iters && it < 64; it++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    for (long r = 0; r < reps; r++) invoke(c, b, n, w);
                    double dt = MPI_Wtime() - t0;
                    if (it >= 0) t[it] = b ? (double)n * w * reps / dt / 1e9 : (double)n * 2 * reps / dt / 1e9;
                }
                /* the check: the receiving side starts from zeros and must end with v everywhere */
                /* (host: rank 0 sends v, rank 1 starts from zeros; in a ping-pong it echoes what it got) */
                check(cu.MemsetD8(ddst, 0, n), "cuMemsetD8");
                for (int i = 0; i < c->ring && !c->staged; i++) memset(host[i], rank == 0 ? v : 0, n);
                check(cu.CtxSynchronize(), "cuCtxSynchronize");
                MPI_Barrier(MPI_COMM_WORLD);
                invoke(c, b, n, w);
                long bad = 0;
                if (!b || rank == 1) {
                    if (c->staged) {
                        unsigned char *h = malloc(n);
                        check(cu.MemcpyDtoH(h, ddst, n), "cuMemcpyDtoH");
                        for (long i = 0; i < n; i++) bad += h[i] != v;
                        free(h);
                    } else {
                        unsigned char *h = host[(w - 1) % c->ring];
                        for (long i = 0; i < n; i++) bad += h[i] != v;
                    }
                }
                long allbad = 0;
                MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
                if (!rank) {
                    qsort(t, iters, sizeof *t, cmp);
                    double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
                    printf("%s,%s,%s,%ld,%d,%d,%ld,%d,%.2f,%.2f,%.2f,%s\n", b ? "window" : "pingpong", c->text, c->staged ? "staged" : "host",
                           c->staged ? chunk_for(c, n) : 0, c->staged ? c->depth : 0, c->ring, n, w, med, t[0], t[iters - 1], allbad ? "WRONG" : "ok");
                    fflush(stdout);
                }
            }
            for (int i = 0; i < c->ring; i++) check(cu.MemFreeHost(bufs[i]), "cuMemFreeHost");
        }
    }
    MPI_Finalize();
    return 0;
}
