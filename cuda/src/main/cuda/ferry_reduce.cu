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

// ---- the short allReduce of the ranks of a node (DeviceReduction.allReduceShort) -------------
//
//   ferry_allreduce_short_<type>_<op>(void* out, const void* in, Scratches s, int me, int ranks,
//                                     long long n, long long slotBytes, unsigned long long seq,
//                                     int resume, int system, unsigned int* status, long long patience)
//
// One block per rank, every rank of the node running it at once: rank `me` copies its n elements
// from `in` into slot (seq & 1) of its scratch, publishes `seq` in its scratch's arrival flag, waits
// for every rank's arrival flag to reach `seq`, folds slot (seq & 1) of every rank's scratch in rank
// order into `out`, and acknowledges `seq` to every other rank r in r's scratch (r's memory is then
// free of reads of this round: r waits for those before it frees its scratch). Scratch layout:
// arrival flag (u64) at 0, rank q's acknowledgement (u64) at 64 + 8 q, slot k at 128 + k * slotBytes. Two slots make a second round unnecessary: a
// rank writes slot k again in round seq + 2, which it starts only after every rank's arrival at
// seq + 1, which each rank's stream runs after its fold of round seq. `out` may be `in`.
// A rank that waits longer than `patience` ns returns with *status = 1 (having published its
// arrival); the host relaunches with `resume` set, which only waits and folds. Otherwise *status = 0.
// `system` != 0 when some rank's scratch is on another GPU: the flags' fences then have system scope,
// and so has the fence before the status word. With every rank on this GPU that fence has GPU scope:
// every reader of the result and of the acknowledgements is a kernel or copy of this GPU (device memory
// that the host reads only through CUDA, after it saw the word), and a system-scope fence there cost
// 0.6 us per call (H100, 2 ranks under MPS: bench/results/2026-11-24-h100x1-mps-short-allreduce-profile.md).
// Not in the host build: it needs the GPU's block barrier, memory model and clock.
#if !defined(FERRY_HOST_EMULATION)
#define FERRY_SHORT_HEADER 128

struct Scratches {
    char* p[FERRY_MAX_SOURCES];
};

// Flags between the ranks' kernels: relaxed loads and stores with fences of the scope the ranks
// share: the GPU when every rank's scratch is on this GPU (ranks sharing it under MPS), else the
// system (peers' GPUs). A system-scope fence costs microseconds on an H100; a GPU-scope one does not.
__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* p, int system)
{
    unsigned long long v;
    if (system) asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_relaxed(unsigned long long* p, unsigned long long v, int system)
{
    if (system) asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
    else asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void fence(int system)
{
    if (system) asm volatile("fence.acq_rel.sys;" : : : "memory");
    else asm volatile("fence.acq_rel.gpu;" : : : "memory");
}

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// A load that skips the SM's L1 (another process writes these slots): the element's bits as one
// unsigned word of its size (every element type is 1, 2, 4, 8 or 16 bytes).
template <int B> struct Word;
template <> struct Word<1> { typedef unsigned char W; };
template <> struct Word<2> { typedef unsigned short W; };
template <> struct Word<4> { typedef unsigned int W; };
template <> struct Word<8> { typedef unsigned long long W; };
template <> struct Word<16> { typedef uint4 W; };

template <typename T> __device__ __forceinline__ T load_cg(const T* p)
{
    typedef typename Word<sizeof(T)>::W W;
    union {
        W w;
        T t;
    } u;
    u.w = __ldcg((const W*) p);
    return u.t;
}

template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ void allreduce_short(void* out, const void* in, const Scratches& s, int me, int ranks, long long n,
                                                long long slotBytes, unsigned long long seq, int resume, int system,
                                                unsigned int* status, long long patience)
{
    __shared__ int late;
    const long long at = FERRY_SHORT_HEADER + (long long) (seq & 1) * slotBytes;
    if (!resume) {
        T* mine = (T*) (s.p[me] + at);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) mine[i] = ((const T*) in)[i];
        __syncthreads();
        if (threadIdx.x == 0) {
            fence(system); // release: the block's slot writes before the flag
            store_relaxed((unsigned long long*) s.p[me], seq, system);
        }
    }
    if (threadIdx.x == 0) late = 0;
    __syncthreads();
    if ((int) threadIdx.x < ranks && (int) threadIdx.x != me) {
        const unsigned long long* arrived = (const unsigned long long*) s.p[threadIdx.x];
        const unsigned long long start = global_ns();
        while (load_relaxed(arrived, system) < seq) {
            if ((long long) (global_ns() - start) > patience) {
                late = 1;
                break;
            }
        }
        fence(system); // acquire: the peer's slot after its flag
    }
    __syncthreads();
    if (late) {
        if (threadIdx.x == 0) *(volatile unsigned int*) status = 1;
        return;
    }
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        T acc = load_cg(((const T*) (s.p[0] + at)) + i);
#pragma unroll
        for (int r = 1; r < FERRY_MAX_SOURCES; r++) {
            if (r < ranks) acc = OP(acc, load_cg(((const T*) (s.p[r] + at)) + i));
        }
        ((T*) out)[i] = acc;
    }
    __syncthreads();
    if ((int) threadIdx.x < ranks && (int) threadIdx.x != me) {
        fence(system); // release: the block's reads of the slots before the acknowledgement
        store_relaxed((unsigned long long*) (s.p[threadIdx.x] + 64 + 8 * me), seq, system);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        // the host may return on this word before the kernel ends: the result and the
        // acknowledgements first (GPU scope when every reader is on this GPU: see above)
        fence(system);
        asm volatile("st.relaxed.sys.global.u32 [%0], %1;" : : "l"(status), "r"(0u) : "memory");
    }
}

// The short allReduce in stream order (a stream-ordered view's call, and CUDA graphs that capture
// it): the round is counted on the GPU, in the rank's own scratch header at 8 (u64, the last round
// this rank's kernels ran), so that a graph replayed N times runs N rounds; one launch, no resume.
// A rank that waits longer than `patience` ns for a peer sets *failed (host memory, never cleared
// here) and ends its round without folding: its result is wrong and the host reports it.
// The header's word at 16 takes allreduce_short's status (nobody reads it).
template <typename T, T (*OP)(T, T)>
__device__ __forceinline__ void allreduce_stream(void* out, const void* in, const Scratches& s, int me, int ranks, long long n,
                                                 long long slotBytes, int system, unsigned int* failed, long long patience)
{
    __shared__ unsigned long long round;
    unsigned long long* counter = (unsigned long long*) (s.p[me] + 8);
    if (threadIdx.x == 0) round = *(volatile unsigned long long*) counter + 1;
    __syncthreads();
    const unsigned long long seq = round;
    unsigned int* status = (unsigned int*) (s.p[me] + 16);
    allreduce_short<T, OP>(out, in, s, me, ranks, n, slotBytes, seq, 0, system, status, patience);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (*(volatile unsigned int*) status != 0) {
            asm volatile("st.relaxed.sys.global.u32 [%0], %1;" : : "l"(failed), "r"(1u) : "memory");
        }
        *(volatile unsigned long long*) counter = seq; // the next kernel on this stream reads it
    }
}

#define FERRY_SHORT_KERNEL(NAME, T, FN) \
    extern "C" __global__ void ferry_allreduce_short_##NAME(void* out, const void* in, Scratches s, int me, int ranks, long long n, \
                                                             long long slotBytes, unsigned long long seq, int resume, int system, \
                                                             unsigned int* status, long long patience) \
    { \
        allreduce_short<T, FN>(out, in, s, me, ranks, n, slotBytes, seq, resume, system, status, patience); \
    } \
    extern "C" __global__ void ferry_allreduce_stream_##NAME(void* out, const void* in, Scratches s, int me, int ranks, long long n, \
                                                              long long slotBytes, int system, unsigned int* failed, long long patience) \
    { \
        allreduce_stream<T, FN>(out, in, s, me, ranks, n, slotBytes, system, failed, patience); \
    }
#else
#define FERRY_SHORT_KERNEL(NAME, T, FN)
#endif

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
