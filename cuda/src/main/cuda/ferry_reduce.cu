// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

// Reduction kernels of ferry-cuda (dev.ferry.cuda.DeviceReduction): one entry per data type and
// reduce operator that MPI defines, with the semantics of dev.ferry.spi.HostReduction, so that a
// reduction on the GPU gives the bytes the host reduction gives.
//
//   ferry_reduce_<type>_<op>(void* out, Sources src, int count, long long n, int vector)
//
// out[i] = op(...op(op(src.p[0][i], src.p[1][i]), src.p[2][i])..., src.p[count-1][i]) for i < n:
// the sources folded left to right, in the order given (1 <= count <= FERRY_MAX_SOURCES). out may
// be src.p[0] (acc = acc op in, in place) but must not overlap any other source. `vector` != 0
// promises that out and every source are 16-byte aligned: each thread then moves 16 bytes per
// load and store. Grid-stride loops: any grid size covers any n.
//
// Compiled to PTX by build-ptx.sh (nvcc -ptx -arch=compute_80 -O3 -ftz=false -prec-div=true
// -prec-sqrt=true -fmad=false), one module ferry_reduce_<type>.ptx per type; the PTX is checked in and the driver JIT-compiles it for the GPU it
// runs on. Exactness: float and double steps are single IEEE operations rounded to nearest even
// (__fadd_rn, __fmul_rn, ...; no fused multiply-add, no flush to zero), which is what the host's
// (float) (double a op double b) gives for float; FLOAT16 and BFLOAT16 compute each step in
// binary32 and round to the 16-bit type to nearest even, as HostReduction does.

#include <stdint.h>

#define FERRY_MAX_SOURCES 8

struct Sources {
    const void* p[FERRY_MAX_SOURCES];
};

// ---- element types --------------------------------------------------------------------------

struct f16 { uint16_t bits; };   // IEEE binary16
struct bf16 { uint16_t bits; };  // upper half of a binary32
// value/index pairs as MPI's C structs: value at 0, int index after it, padded
struct short_int { int16_t value; int16_t pad; int32_t index; };
struct int_int { int32_t value; int32_t index; };
struct float_int { float value; int32_t index; };
struct long_int { int64_t value; int32_t index; int32_t pad; };
struct double_int { double value; int32_t index; int32_t pad; };

// ---- scalar operators -----------------------------------------------------------------------

// Integers: arithmetic wraps (computed unsigned), comparisons in the type's own signedness
// (uint8_t for BYTE), logical operators give 0 or 1.
template <typename T, typename U> struct Int {
    __device__ static T sum(T a, T b) { return (T) ((U) a + (U) b); }
    __device__ static T prod(T a, T b) { return (T) ((U) a * (U) b); }
    __device__ static T max(T a, T b) { return a > b ? a : b; }
    __device__ static T min(T a, T b) { return a < b ? a : b; }
    __device__ static T land(T a, T b) { return (a != 0 && b != 0) ? 1 : 0; }
    __device__ static T lor(T a, T b) { return (a != 0 || b != 0) ? 1 : 0; }
    __device__ static T band(T a, T b) { return a & b; }
    __device__ static T bor(T a, T b) { return a | b; }
    __device__ static T bxor(T a, T b) { return a ^ b; }
};

// MAX/MIN of floating point as HostReduction: a >= b, or a is NaN: a; else b (so a NaN operand
// wins, -0 and +0 keep the first operand's sign).
__device__ __forceinline__ bool isnan_f(float a) { return a != a; }
__device__ __forceinline__ bool isnan_d(double a) { return a != a; }

struct F32 {
    __device__ static float sum(float a, float b) { return __fadd_rn(a, b); }
    __device__ static float prod(float a, float b) { return __fmul_rn(a, b); }
    __device__ static float max(float a, float b) { return (a >= b || isnan_f(a)) ? a : b; }
    __device__ static float min(float a, float b) { return (a <= b || isnan_f(a)) ? a : b; }
};

struct F64 {
    __device__ static double sum(double a, double b) { return __dadd_rn(a, b); }
    __device__ static double prod(double a, double b) { return __dmul_rn(a, b); }
    __device__ static double max(double a, double b) { return (a >= b || isnan_d(a)) ? a : b; }
    __device__ static double min(double a, double b) { return (a <= b || isnan_d(a)) ? a : b; }
};

// binary16 <-> binary32: exact widening; narrowing rounded to nearest even (cvt.rn handles
// subnormal results and overflow to infinity as IEEE 754 says).
// (Outside device compilation, FERRY_HOST_EMULATION supplies both: a host build of this file that
// checks the kernels' logic without a GPU.)
#if defined(__CUDA_ARCH__) || !defined(FERRY_HOST_EMULATION)
__device__ __forceinline__ float f16_to_f32(uint16_t h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ uint16_t f32_to_f16(float f)
{
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#endif

// bfloat16: HostReduction.fromBfloat16 / toBfloat16, bit for bit (NaN keeps its upper bits, made quiet).
__device__ __forceinline__ float bf16_to_f32(uint16_t h) { return __int_as_float(((uint32_t) h) << 16); }

__device__ __forceinline__ uint16_t f32_to_bf16(float f)
{
    uint32_t bits = (uint32_t) __float_as_int(f);
    if (isnan_f(f)) {
        return (uint16_t) ((bits >> 16) | 0x0040);
    }
    uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
    return (uint16_t) ((bits + rounding) >> 16);
}

// 16-bit floating types: each step in binary32, rounded back. MAX/MIN select an operand (its bits unchanged).
struct F16 {
    __device__ static f16 sum(f16 a, f16 b) { return f16{f32_to_f16(__fadd_rn(f16_to_f32(a.bits), f16_to_f32(b.bits)))}; }
    __device__ static f16 prod(f16 a, f16 b) { return f16{f32_to_f16(__fmul_rn(f16_to_f32(a.bits), f16_to_f32(b.bits)))}; }
    __device__ static f16 max(f16 a, f16 b) { float x = f16_to_f32(a.bits), y = f16_to_f32(b.bits); return (x >= y || isnan_f(x)) ? a : b; }
    __device__ static f16 min(f16 a, f16 b) { float x = f16_to_f32(a.bits), y = f16_to_f32(b.bits); return (x <= y || isnan_f(x)) ? a : b; }
};

struct BF16 {
    __device__ static bf16 sum(bf16 a, bf16 b) { return bf16{f32_to_bf16(__fadd_rn(bf16_to_f32(a.bits), bf16_to_f32(b.bits)))}; }
    __device__ static bf16 prod(bf16 a, bf16 b) { return bf16{f32_to_bf16(__fmul_rn(bf16_to_f32(a.bits), bf16_to_f32(b.bits)))}; }
    // the host rounds the selected binary32 back (a NaN becomes quiet): the same here
    __device__ static bf16 max(bf16 a, bf16 b) { return bf16{f32_to_bf16(F32::max(bf16_to_f32(a.bits), bf16_to_f32(b.bits)))}; }
    __device__ static bf16 min(bf16 a, bf16 b) { return bf16{f32_to_bf16(F32::min(bf16_to_f32(a.bits), bf16_to_f32(b.bits)))}; }
};

// ---- MINLOC / MAXLOC ------------------------------------------------------------------------

// Java's compare of the value type: for float and double Float.compare / Double.compare (-0 < +0,
// every NaN equal and above +infinity).
__device__ __forceinline__ int cmp(int16_t a, int16_t b) { return a < b ? -1 : (a > b ? 1 : 0); }
__device__ __forceinline__ int cmp(int32_t a, int32_t b) { return a < b ? -1 : (a > b ? 1 : 0); }
__device__ __forceinline__ int cmp(int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }
__device__ __forceinline__ int cmp(float a, float b)
{
    if (a < b) return -1;
    if (a > b) return 1;
    int32_t x = isnan_f(a) ? 0x7fc00000 : __float_as_int(a);
    int32_t y = isnan_f(b) ? 0x7fc00000 : __float_as_int(b);
    return x == y ? 0 : (x < y ? -1 : 1);
}
__device__ __forceinline__ int cmp(double a, double b)
{
    if (a < b) return -1;
    if (a > b) return 1;
    long long x = isnan_d(a) ? 0x7ff8000000000000LL : __double_as_longlong(a);
    long long y = isnan_d(b) ? 0x7ff8000000000000LL : __double_as_longlong(b);
    return x == y ? 0 : (x < y ? -1 : 1);
}

// HostReduction.pair: equal values keep acc's value (and bytes) with the smaller index; otherwise
// the winning element whole, padding included.
template <typename P> struct Loc {
    __device__ static P step(P acc, P in, bool minloc)
    {
        int c = cmp(acc.value, in.value);
        if (c == 0) {
            acc.index = acc.index < in.index ? acc.index : in.index;
            return acc;
        }
        return (minloc ? c > 0 : c < 0) ? in : acc;
    }
    __device__ static P minloc(P a, P b) { return step(a, b, true); }
    __device__ static P maxloc(P a, P b) { return step(a, b, false); }
};

// ---- the kernel -----------------------------------------------------------------------------

// K elements per 16 bytes (1 for 16-byte elements); with `vector`, each thread moves them at once.
template <typename T> struct Group {
    static const int K = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
    union {
        uint4 v;
        T e[K];
    };
};

template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ void reduce(void* out, const Sources& src, int count, long long n, int vector)
{
    typedef Group<T> G;
    const long long stride = (long long) blockDim.x * gridDim.x;
    const long long first = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    long long done = 0;
    if (vector) {
        const long long groups = n / G::K;
        for (long long g = first; g < groups; g += stride) {
            G acc, x;
            acc.v = ((const uint4*) src.p[0])[g];
#pragma unroll
            for (int s = 1; s < FERRY_MAX_SOURCES; s++) {
                if (s < count) {
                    x.v = ((const uint4*) src.p[s])[g];
#pragma unroll
                    for (int k = 0; k < G::K; k++) acc.e[k] = OP(acc.e[k], x.e[k]);
                }
            }
            ((uint4*) out)[g] = acc.v;
        }
        done = groups * G::K;
    }
    for (long long i = done + first; i < n; i += stride) {
        T acc = ((const T*) src.p[0])[i];
#pragma unroll
        for (int s = 1; s < FERRY_MAX_SOURCES; s++) {
            if (s < count) acc = OP(acc, ((const T*) src.p[s])[i]);
        }
        ((T*) out)[i] = acc;
    }
}

// ---- the short allReduce of the ranks of a node (DeviceReduction.allReduceShort, allReduceStream)
//
//   ferry_allreduce_short_<type>_<op>(void* out, const void* in, Scratches s, int me, int ranks,
//                                     long long n, long long slotBytes, int resume,
//                                     unsigned int* status, long long patience)
//   ferry_allreduce_stream_<type>_<op>(void* out, const void* in, Scratches s, int me, int ranks,
//                                      long long n, long long slotBytes, unsigned int* failed,
//                                      long long patience)
//
// One block per rank, every rank of the node running it at once (peers' GPUs, or one GPU shared
// under MPS). The ranks push instead of pulling, with no fence and no flag of their own: round
// `seq` of rank `me` stores its n elements of `in` into every peer's scratch as 8-byte words of
// 4 data bytes and the round's low 32 bits (one store each, which a peer sees whole or not at all:
// NCCL's LL protocol), and waits in its own scratch until every word of every peer carries the
// round; then it folds every rank's input in rank order into `out` (which may be `in`). A round
// costs one store's flight and no load from another GPU; pulling with flags and fences (the
// kernel's earlier form) cost several microseconds more per round between GPUs.
//
// Scratch (zeroed before the first round): a header of FERRY_SHORT_HEADER bytes (at 8 the round
// count: the last round the rank's kernels ran); slot k (seq & 1) at FERRY_SHORT_HEADER + k * FERRY_MAX_SOURCES * 2 * slotBytes,
// rank q's words at q * 2 * slotBytes in it; then, at FERRY_SHORT_HEADER + 2 * FERRY_MAX_SOURCES * 2 *
// slotBytes, the block's unpacked copy of every rank's input (q * slotBytes) that it folds.
// A rank writes slot k again two rounds later, which it starts only after it saw every peer's words
// of the round between, which each peer stores only after its kernel of this round (which read
// slot k) ended: so no word is overwritten before it was read, and a rank whose last round is done
// has every peer's last words: nothing more lands in its scratch, which it may then free.
//
// Both kernels count the rounds on the GPU, in the rank's own scratch header at 8 (u64, the last
// round its kernels ran; 1, 2, ... alike on every rank), so that their arguments stay the same from
// call to call (the host then launches a graph without setting its parameters again) and a CUDA
// graph replayed N times runs N rounds.
// The short kernel: a rank that waits longer than `patience` ns for a peer returns with *status = 1
// (having stored its own words); the host launches again with `resume` set, which runs the same
// round again, only waiting and folding. Otherwise *status = 0, written after the result with a
// GPU-scope fence (every reader of the result is a kernel or copy of this GPU).
// The stream kernel: one launch per round, no resume. A rank that waits longer than `patience` ns sets *failed (host memory, never cleared
// here) and ends its round without folding: its result is wrong and the host reports it.
// Not in the host build: it needs the GPU's block barrier, memory model and clock.
#if !defined(FERRY_HOST_EMULATION)
#define FERRY_SHORT_HEADER 128

struct Scratches {
    char* p[FERRY_MAX_SOURCES];
};

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void store_ll(char* p, unsigned int data, unsigned int flag)
{
    asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" : : "l"(p), "r"(data), "r"(flag) : "memory");
}

__device__ __forceinline__ void load_ll(const char* p, unsigned int& data, unsigned int& flag)
{
    asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(data), "=r"(flag) : "l"(p) : "memory");
}

// Bytes [4w, 4w + 4) of `in`, zero past `bytes`; `in` may be aligned to less than 4 (1- and 2-byte types).
__device__ __forceinline__ unsigned int input_word(const unsigned char* in, long long bytes, long long w, bool aligned)
{
    const long long at = 4 * w;
    if (aligned && at + 4 <= bytes) return *(const unsigned int*) (in + at);
    unsigned int v = 0;
    for (int b = 0; b < 4 && at + b < bytes; b++) v |= (unsigned int) in[at + b] << (8 * b);
    return v;
}

// The exchange of one round of rank `me` (see above): `push` stores this rank's `bytes` of `in` into
// every peer's scratch (false on a resumed launch); then it waits for every peer's words of round
// `seq` and unpacks every rank's bytes into the scratch's unpacked area (rank q's at q * slotBytes).
// Returns true when every rank's bytes are there, false when it waited `patience` ns for a peer.
__device__ __forceinline__ bool exchange_round(const void* in, const Scratches& s, int me, int ranks, long long bytes,
                                               long long slotBytes, unsigned long long seq, bool push, long long patience)
{
    volatile __shared__ int late; // read while other threads may set it
    if (threadIdx.x == 0) late = 0;
    __syncthreads();
    const unsigned int flag = (unsigned int) seq;
    const long long words = (bytes + 3) / 4;
    const long long slot = FERRY_SHORT_HEADER + (long long) (seq & 1) * FERRY_MAX_SOURCES * 2 * slotBytes;
    char* unpacked = s.p[me] + FERRY_SHORT_HEADER + 2LL * FERRY_MAX_SOURCES * 2 * slotBytes;
    if (push) {
        const unsigned char* src = (const unsigned char*) in;
        const bool aligned = ((unsigned long long) src & 3) == 0;
        for (long long w = threadIdx.x; w < words; w += blockDim.x) {
            const unsigned int v = input_word(src, bytes, w, aligned);
            ((unsigned int*) (unpacked + (long long) me * slotBytes))[w] = v;
            for (int q = 0; q < ranks; q++) {
                if (q != me) store_ll(s.p[q] + slot + (long long) me * 2 * slotBytes + 8 * w, v, flag);
            }
        }
    }
    for (int q = 0; q < ranks; q++) {
        if (q == me) continue;
        const char* from = s.p[me] + slot + (long long) q * 2 * slotBytes;
        unsigned int* to = (unsigned int*) (unpacked + (long long) q * slotBytes);
        for (long long w = threadIdx.x; w < words && !late; w += blockDim.x) {
            unsigned int v, f;
            load_ll(from + 8 * w, v, f);
            if (f != flag) {
                const unsigned long long start = global_ns();
                do {
                    if ((long long) (global_ns() - start) > patience) {
                        late = 1;
                        break;
                    }
                    load_ll(from + 8 * w, v, f);
                } while (f != flag);
            }
            to[w] = v;
        }
    }
    __syncthreads(); // the unpacked words, written by the block, before anyone reads them
    return !late;
}

// One allReduce round: the exchange, then every rank's input folded in rank order into `out`.
template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ bool allreduce_round(void* out, const void* in, const Scratches& s, int me, int ranks, long long n,
                                                long long slotBytes, unsigned long long seq, bool push, long long patience)
{
    if (!exchange_round(in, s, me, ranks, n * (long long) sizeof(T), slotBytes, seq, push, patience)) return false;
    const char* unpacked = s.p[me] + FERRY_SHORT_HEADER + 2LL * FERRY_MAX_SOURCES * 2 * slotBytes;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        T acc = ((const T*) unpacked)[i];
#pragma unroll
        for (int r = 1; r < FERRY_MAX_SOURCES; r++) {
            if (r < ranks) acc = OP(acc, ((const T*) (unpacked + (long long) r * slotBytes))[i]);
        }
        ((T*) out)[i] = acc;
    }
    return true;
}

// *status = 0 when the round is done (after its result, fenced for the GPU), 1 when it waited too long.
__device__ __forceinline__ void write_status(unsigned int* status, bool done)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        // the host may return on this word before the kernel ends: the result first
        if (done) asm volatile("fence.acq_rel.gpu;" : : : "memory");
        asm volatile("st.relaxed.sys.global.u32 [%0], %1;" : : "l"(status), "r"(done ? 0u : 1u) : "memory");
    }
}

// The round this launch runs: the next one (counted now), or on a resumed launch the one counted last.
__device__ __forceinline__ unsigned long long next_round(const Scratches& s, int me, bool count)
{
    __shared__ unsigned long long round;
    unsigned long long* counter = (unsigned long long*) (s.p[me] + 8);
    if (threadIdx.x == 0) {
        const unsigned long long last = *(volatile unsigned long long*) counter;
        round = count ? last + 1 : last;
        if (count) *(volatile unsigned long long*) counter = round; // the rank's next kernel reads it
    }
    __syncthreads();
    return round;
}

template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ void allreduce_short(void* out, const void* in, const Scratches& s, int me, int ranks, long long n,
                                                long long slotBytes, int resume, unsigned int* status, long long patience)
{
    const unsigned long long seq = next_round(s, me, !resume);
    write_status(status, allreduce_round<T, OP>(out, in, s, me, ranks, n, slotBytes, seq, !resume, patience));
}

template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ void allreduce_stream(void* out, const void* in, const Scratches& s, int me, int ranks, long long n,
                                                 long long slotBytes, unsigned int* failed, long long patience)
{
    const unsigned long long seq = next_round(s, me, true);
    if (!allreduce_round<T, OP>(out, in, s, me, ranks, n, slotBytes, seq, true, patience) && threadIdx.x == 0) {
        asm volatile("st.relaxed.sys.global.u32 [%0], %1;" : : "l"(failed), "r"(1u) : "memory");
    }
}

#define FERRY_SHORT_KERNEL(NAME, T, FN) \
    extern "C" __global__ void ferry_allreduce_short_##NAME(void* out, const void* in, Scratches s, int me, int ranks, long long n, \
                                                             long long slotBytes, int resume, unsigned int* status, long long patience) \
    { \
        allreduce_short<T, FN>(out, in, s, me, ranks, n, slotBytes, resume, status, patience); \
    } \
    extern "C" __global__ void ferry_allreduce_stream_##NAME(void* out, const void* in, Scratches s, int me, int ranks, long long n, \
                                                              long long slotBytes, unsigned int* failed, long long patience) \
    { \
        allreduce_stream<T, FN>(out, in, s, me, ranks, n, slotBytes, failed, patience); \
    }

// The short allGather: a round as the short allReduce's (the same scratch and round count), then
// rank q's `bytes` copied to out + q * bytes. Type-independent: only in the byte module.
#define FERRY_SHORT_ALLGATHER \
    extern "C" __global__ void ferry_allgather_short(void* out, const void* in, Scratches s, int me, int ranks, long long bytes, \
                                                     long long slotBytes, int resume, unsigned int* status, long long patience) \
    { \
        const unsigned long long seq = next_round(s, me, !resume); \
        const bool done = exchange_round(in, s, me, ranks, bytes, slotBytes, seq, !resume, patience); \
        if (done) { \
            const char* unpacked = s.p[me] + FERRY_SHORT_HEADER + 2LL * FERRY_MAX_SOURCES * 2 * slotBytes; \
            if ((((unsigned long long) out | (unsigned long long) bytes) & 3) == 0) { \
                const long long words = bytes / 4; \
                for (long long i = threadIdx.x; i < words * ranks; i += blockDim.x) \
                    ((unsigned int*) out)[i] = ((const unsigned int*) (unpacked + (i / words) * slotBytes))[i % words]; \
            } else { \
                for (long long i = threadIdx.x; i < bytes * ranks; i += blockDim.x) \
                    ((char*) out)[i] = unpacked[(i / bytes) * slotBytes + i % bytes]; \
            } \
        } \
        write_status(status, done); \
    }
#else
#define FERRY_SHORT_KERNEL(NAME, T, FN)
#define FERRY_SHORT_ALLGATHER
#endif

// ---- copies of blocks (DeviceReduction.copyBlocks) ------------------------------------------
//
//   ferry_copy_blocks(void* out, Sources src, int count, long long bytes, int vector)
//
// out + s * bytes gets the `bytes` at src.p[s], for s < count (1 <= count <= FERRY_MAX_SOURCES):
// every rank's block of an allGather, gather or allToAll, read where it is (a peer's memory over
// NVLink, or this GPU's), in one launch instead of one copy-engine transfer per block. Warps take
// chunks of 32 lanes in turn from every source (chunk c: source c % count), so that the sources are
// read at once and each warp's access is contiguous. `vector` != 0 promises that out, every source
// and `bytes` are multiples of 16: each lane then moves 16 bytes; otherwise one byte. No block may
// overlap another or out's. Type-independent: only in the byte module.
#define FERRY_COPY_BLOCKS \
    extern "C" __global__ void ferry_copy_blocks(void* out, Sources src, int count, long long bytes, int vector) \
    { \
        const int lane = threadIdx.x & 31; \
        const long long warps = ((long long) gridDim.x * blockDim.x) >> 5; \
        const long long unit = vector ? 16 : 1; \
        const long long units = bytes / unit, chunks = (units + 31) / 32; \
        for (long long c = ((long long) blockIdx.x * blockDim.x + threadIdx.x) >> 5; c < chunks * count; c += warps) { \
            const int s = (int) (c % count); \
            const long long i = (c / count) * 32 + lane; \
            if (i >= units) continue; \
            if (vector) ((uint4*) ((char*) out + s * bytes))[i] = ((const uint4*) src.p[s])[i]; \
            else ((char*) out + s * bytes)[i] = ((const char*) src.p[s])[i]; \
        } \
    }

#define FERRY_KERNEL(NAME, T, FN) \
    extern "C" __global__ void ferry_reduce_##NAME(void* out, Sources src, int count, long long n, int vector) \
    { \
        reduce<T, FN>(out, src, count, n, vector); \
    } \
    FERRY_SHORT_KERNEL(NAME, T, FN)

#define FERRY_INTEGER(NAME, T, U) \
    FERRY_KERNEL(NAME##_sum, T, (Int<T, U>::sum)) \
    FERRY_KERNEL(NAME##_prod, T, (Int<T, U>::prod)) \
    FERRY_KERNEL(NAME##_max, T, (Int<T, U>::max)) \
    FERRY_KERNEL(NAME##_min, T, (Int<T, U>::min)) \
    FERRY_KERNEL(NAME##_land, T, (Int<T, U>::land)) \
    FERRY_KERNEL(NAME##_lor, T, (Int<T, U>::lor)) \
    FERRY_KERNEL(NAME##_band, T, (Int<T, U>::band)) \
    FERRY_KERNEL(NAME##_bor, T, (Int<T, U>::bor)) \
    FERRY_KERNEL(NAME##_bxor, T, (Int<T, U>::bxor))

#define FERRY_FLOATING(NAME, T, OPS) \
    FERRY_KERNEL(NAME##_sum, T, OPS::sum) \
    FERRY_KERNEL(NAME##_prod, T, OPS::prod) \
    FERRY_KERNEL(NAME##_max, T, OPS::max) \
    FERRY_KERNEL(NAME##_min, T, OPS::min)

#define FERRY_PAIR(NAME, P) \
    FERRY_KERNEL(NAME##_minloc, P, Loc<P>::minloc) \
    FERRY_KERNEL(NAME##_maxloc, P, Loc<P>::maxloc)

// One module per type (build-ptx.sh compiles this file once per type with -DFERRY_ONLY_<type>), so
// that a process JIT-compiles only the types it reduces; -DFERRY_ALL compiles every entry.
#if defined(FERRY_ALL) || defined(FERRY_ONLY_byte)
FERRY_INTEGER(byte, uint8_t, uint32_t)
FERRY_SHORT_ALLGATHER
FERRY_COPY_BLOCKS
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_short)
FERRY_INTEGER(short, int16_t, uint32_t)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_int)
FERRY_INTEGER(int, int32_t, uint32_t)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_long)
FERRY_INTEGER(long, int64_t, uint64_t)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_float)
FERRY_FLOATING(float, float, F32)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_double)
FERRY_FLOATING(double, double, F64)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_float16)
FERRY_FLOATING(float16, f16, F16)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_bfloat16)
FERRY_FLOATING(bfloat16, bf16, BF16)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_short_int)
FERRY_PAIR(short_int, short_int)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_int_int)
FERRY_PAIR(int_int, int_int)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_long_int)
FERRY_PAIR(long_int, long_int)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_float_int)
FERRY_PAIR(float_int, float_int)
#endif
#if defined(FERRY_ALL) || defined(FERRY_ONLY_double_int)
FERRY_PAIR(double_int, double_int)
#endif
