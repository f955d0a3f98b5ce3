// Rung 14, skinny problems (M or N at most 64: decode steps, x @ W^T with a small
// batch), strict FP32 and bound by memory: the big operand is read once, in 16-byte
// loads, straight from global memory into registers, and each value is used for up to
// 16 rows of the small operand, read through L1 or staged in shared memory.
// In its own terms (common/skinny_operands.cuh) the problem is Out(i, j) = sum_k Y(i, k)
// X(j, k), i < S <= 64 (the small dimension), j < L (the large one); skinny_m64 has
// Y = op(A), X = op(B)^T, and skinny_n64 Y = op(B)^T, X = op(A), so both serve every
// transpose.
// Owns: a block owns 16 values of i and a range of j, for one k-split. Two layouts of X:
// - X rows along k (x @ W^T with W stored N x K, PyTorch Linear's layout: the k-row
//   kernel): lanes along k, a warp owns 4 rows of X; per 128 k a lane loads 4 float4s of
//   X and 16 float4s of Y (shared, conflict-free) for 256 FFMAs, and the 32 lanes' sums
//   are reduce-scattered with shuffles at the end.
// - X rows along j (x @ W with W stored K x N: the j-row kernel): lanes along j, a warp
//   owns 128 values of j for an eighth of each k chunk; per k a lane loads one float4 of
//   X and broadcasts 16 values of Y from shared memory for 64 FFMAs; the 8 warps' sums
//   are added in shared memory at the end.
// - One vector (S == 1) with X rows along k (a decode step x @ W^T, or a tall matrix times
//   a vector): the GEMV kernel, a warp per row of X, lanes along k, four float4s of X in
//   flight per lane and Y read through L1 (every warp reads the same Y, made contiguous
//   first if it is not); no shared memory, no block-wide synchronisation, and nothing
//   spent on rows of zeros.
// - Up to 32 rows (S <= 32) with X rows along k and 16-byte aligned: the same GEMV form
//   with two (S <= 4) or four rows of X per warp, 2, 4, 8 or 16 rows of Y per block,
//   and each warp's rows of X prefetched into L2 a step ahead (the k-row kernel above,
//   with its shared-memory stage and barriers, kept fewer loads in flight: 46 us against
//   25 at 16 x 4096 x 4096 on the H200). The k-row kernel keeps X rows that are not
//   aligned and S from 33 to 64. The j-row kernel's 4- and 8-row tiles prefetch their
//   next chunk of X into L2 the same way, and load a batch of rows ahead of their FMAs.
// Few blocks for the GPU (small L): K is split over blocks, each split parked in a slab
// and summed in split order by reduce_split_k (split_k.cuh): deterministic.
// Constraints: M <= 64 (skinny_m64) or N <= 64 (skinny_n64); any K, strides and alignment
// (16-byte loads where the rows allow them, bounds-checked scalar loads elsewhere).
#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/skinny_operands.cuh"
#include "cuda/common/split_k.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kMaxSmall = 64;
constexpr int kThreads = 256, kWarps = kThreads / 32;
// Values of i per block: 16, or 8 or 4 when the small dimension is at most that (a small
// batch), so that few FFMAs go to rows of zeros.
constexpr int kSmallTile = 4, kMidTile = 8, kLargeTile = 16;

// out(i, j) = alpha v + beta out(i, j); beta == 0 does not read out.
__device__ __forceinline__ void store_out(const SkinnyOperands& o, int64_t i, int64_t j, float v) {
    float* c = o.out + int64_t(blockIdx.y) * o.os_split + i * o.os_i + j * o.os_j;
    *c = o.beta == 0.0f ? o.alpha * v : o.alpha * v + o.beta * *c;
}

// Y(i0 + [0, IT), k0 + [0, KCH)) into Ys, zeros outside Y or past k_end. Threads walk
// the dimension along which Y is contiguous, so the loads coalesce either way. `kmajor`:
// Ys is [k][i] (broadcast reads of IT values of i at one k), else [i][k].
template <int IT, int KCH, bool kmajor>
__device__ __forceinline__ void stage_y(const SkinnyOperands& o, float* Ys, int64_t i0, int64_t k0, int64_t k_end) {
    const bool k_inner = o.ys_k == 1;
#pragma unroll 4
    for (int e = threadIdx.x; e < IT * KCH; e += kThreads) {
        const int i = k_inner ? e / KCH : e % IT, kk = k_inner ? e % KCH : e / IT;
        const int64_t gi = i0 + i, gk = k0 + kk;
        const float v = gi < o.S && gk < k_end ? o.Y[gi * o.ys_i + gk * o.ys_k] : 0.0f;
        Ys[kmajor ? kk * IT + i : i * KCH + kk] = v;
    }
}

// a += y . x, one FMA per component in k order.
__device__ __forceinline__ void dot4_into(float& a, const float4& y, const float4& x) {
    a = fmaf(y.x, x.x, a);
    a = fmaf(y.y, x.y, a);
    a = fmaf(y.z, x.z, a);
    a = fmaf(y.w, x.w, a);
}

// y . x, a product and three FMAs in k order.
__device__ __forceinline__ float dot4(const float4& y, const float4& x) {
    float a = y.x * x.x;
    a = fmaf(y.y, x.y, a);
    a = fmaf(y.z, x.z, a);
    return fmaf(y.w, x.w, a);
}

// The k-row kernel, IT values of i and RJ = 64 / IT rows of X per warp. Block (it, jb,
// split): i in [IT it, IT it + IT), warp w owns rows j0 = 8 RJ jb + RJ w + [0, RJ). Per
// chunk of 512 k, lane l handles k = k0 + 128 s + 4 l + [0, 4) for s < 4: RJ float4s of
// X and IT float4s of Y (shared, conflict-free) for 4 IT RJ = 256 FFMAs. acc[i RJ + r]
// sums Y(i, k) X(j0 + r, k) over the lane's k; reduce_scatter leaves lane l the sums of
// flat entries 2l and 2l + 1.
constexpr int KC_KCH = 512;

// Over the warp, v (N = 2 HALF sums per lane, each over the lane's k) becomes 2 sums per
// lane: at each level the lane whose bit HALF / 2 is set keeps the upper HALF entries,
// its partner the lower, each adding the other's; lane l ends with entries 2 (l % (N /
// 2)) and 2 (l % (N / 2)) + 1, summed over the lanes that agree with l in bits N / 2 and
// up (all 32 lanes for N = 64; complete_sums adds the rest for smaller N).
template <int HALF, int N>
__device__ __forceinline__ void reduce_scatter(float (&v)[N], int lane) {
    constexpr int off = HALF / 2;
    const bool upper = (lane & off) != 0;
#pragma unroll
    for (int x = 0; x < HALF; ++x) {
        const float send = upper ? v[x] : v[x + HALF];
        const float keep = upper ? v[x + HALF] : v[x];
        v[x] = keep + __shfl_xor_sync(0xffffffffu, send, off);
    }
    if constexpr (HALF > 2) reduce_scatter<HALF / 2>(v, lane);
}

// v[0], v[1] after reduce_scatter<N / 2> over N < 64 entries: the sums over the whole
// warp, added in a fixed butterfly (every lane of a group ends with the same bits).
template <int N>
__device__ __forceinline__ void complete_sums(float (&v)[N]) {
#pragma unroll
    for (int off = N / 2; off < 32; off *= 2)
#pragma unroll
        for (int x = 0; x < 2; ++x) v[x] += __shfl_xor_sync(0xffffffffu, v[x], off);
}

// IT = 16: two blocks per SM (128 registers), so that one block's loads of X stay in
// flight while the other stages Y. IT = 4 and 8: 16 or 8 float4s of X per lane and step
// are in flight already, and 64 accumulators beside them need more than 128 registers.
template <int IT, bool VEC>
__global__ void __launch_bounds__(kThreads, IT == kLargeTile ? 2 : 1) skinny_krow_kernel(SkinnyOperands o) {
    constexpr int KC_RJ = 64 / IT, KC_ROWS = kWarps * KC_RJ;
    __shared__ __align__(16) float Ys[IT * KC_KCH];  // [i][k]
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t itiles = (o.S + IT - 1) / IT;
    const int64_t i0 = int64_t(blockIdx.x % itiles) * IT;
    const int64_t j0 = int64_t(blockIdx.x / itiles) * KC_ROWS + KC_RJ * warp;
    const int64_t k_begin = int64_t(split_k_begin(blockIdx.y, o.splits, o.chunks)) * KC_KCH;
    const int64_t k_end = min(o.K, int64_t(split_k_begin(blockIdx.y + 1, o.splits, o.chunks)) * KC_KCH);

    float acc[IT * KC_RJ];  // acc[i * KC_RJ + r]
#pragma unroll
    for (int x = 0; x < IT * KC_RJ; ++x) acc[x] = 0.0f;

    for (int64_t k0 = k_begin; k0 < k_end; k0 += KC_KCH) {
        __syncthreads();  // the previous chunk's reads of Ys are done
        stage_y<IT, KC_KCH, false>(o, Ys, i0, k0, k_end);
        __syncthreads();
#pragma unroll
        for (int s = 0; s < KC_KCH / 128; ++s) {
            const int kk = 128 * s + 4 * lane;
            const int64_t k = k0 + kk;
            float4 x[KC_RJ];
#pragma unroll
            for (int r = 0; r < KC_RJ; ++r) {
                const int64_t j = j0 + r;
                const float* row = o.X + j * o.xs_j;
                if (j >= o.L || k >= k_end) {
                    x[r] = make_float4(0.f, 0.f, 0.f, 0.f);
                } else if (VEC && k + 4 <= k_end) {
                    x[r] = __ldcs(reinterpret_cast<const float4*>(row + k));  // read once: stream past L1
                } else {
                    float v[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) v[e] = k + e < k_end ? row[(k + e) * o.xs_k] : 0.0f;
                    x[r] = make_float4(v[0], v[1], v[2], v[3]);
                }
            }
#pragma unroll
            for (int i = 0; i < IT; ++i) {
                const float4 y = *reinterpret_cast<const float4*>(Ys + i * KC_KCH + kk);
#pragma unroll
                for (int r = 0; r < KC_RJ; ++r) dot4_into(acc[i * KC_RJ + r], y, x[r]);
            }
        }
    }

    reduce_scatter<32>(acc, lane);
#pragma unroll
    for (int f = 0; f < 2; ++f) {
        const int flat = 2 * lane + f;  // the sum of acc[flat] over the warp
        const int64_t i = i0 + flat / KC_RJ, j = j0 + flat % KC_RJ;
        if (i < o.S && j < o.L) store_out(o, i, j, acc[f]);
    }
}

// The j-row kernel. Block (it, jb, split): i in [IT it, IT it + IT), lane l of every
// warp owns j = 128 jb + 4 l + [0, 4); per chunk of 256 k, warp w handles k = k0 + w +
// 8 t: one float4 of X and IT / 4 broadcast float4s of Y for 4 IT FFMAs per k. The 8
// warps' acc are then added in a fixed tree through shared memory.
constexpr int JC_KCH = 256, JC_COLS = 128;
// The 4- and 8-row tiles are bound by the loads they keep in flight: at two blocks an SM
// (128 registers; ptxas takes 192-230 when it may) 4 x 8192 x 2048 TN takes 31.6 instead
// of 36.6 us on the H200, and 4 x 4096 x 4096 30.7 instead of 35.7; at three (80
// registers) they spill. The 16-row tile's sums need its registers.
constexpr int jrow_blocks_per_sm(int it) { return it <= kMidTile ? 2 : 1; }

// acc[i][e] += Y(i, k) X(k, j + e) for the IT values of i staged at Ys_k.
template <int IT>
__device__ __forceinline__ void jrow_fmas(float (&acc)[IT][4], const float (&x)[4], const float* Ys_k) {
#pragma unroll
    for (int q = 0; q < IT / 4; ++q) {
        const float4 y = *reinterpret_cast<const float4*>(Ys_k + 4 * q);  // broadcast
        const float yv[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[4 * q + u][e] = fmaf(yv[u], x[e], acc[4 * q + u][e]);
    }
}

template <int IT, bool VEC>
__global__ void __launch_bounds__(kThreads, jrow_blocks_per_sm(IT)) skinny_jrow_kernel(SkinnyOperands o) {
    // The next chunk of X is prefetched into L2 by the 4- and 8-row tiles (8 x 8192 x 2048
    // NN: 35.6 -> 32.1 us); the 16-row tile's sums leave no registers for it (128 -> 175,
    // one block per SM: 45.1 -> 65.8 us).
    constexpr bool PREFETCH = VEC && IT <= kMidTile;
    // Whole chunks of the 4- and 8-row tiles run software-pipelined (below).
    constexpr bool PIPE = VEC && IT <= kMidTile;
    // The k loop's Y stage [k][i], then the tree's exchange area.
    constexpr int kStage = JC_KCH * IT, kExchange = (kWarps / 2) * IT * 4 * 32;
    __shared__ __align__(16) float smem[kStage > kExchange ? kStage : kExchange];
    float* Ys = smem;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t itiles = (o.S + IT - 1) / IT;
    const int64_t i0 = int64_t(blockIdx.x % itiles) * IT;
    const int64_t j = int64_t(blockIdx.x / itiles) * JC_COLS + 4 * lane;
    const int64_t k_begin = int64_t(split_k_begin(blockIdx.y, o.splits, o.chunks)) * JC_KCH;
    const int64_t k_end = min(o.K, int64_t(split_k_begin(blockIdx.y + 1, o.splits, o.chunks)) * JC_KCH);

    float acc[IT][4];
#pragma unroll
    for (int i = 0; i < IT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][e] = 0.0f;

    for (int64_t k0 = k_begin; k0 < k_end; k0 += JC_KCH) {
        if constexpr (PREFETCH) {
            // The next chunk's 256 rows of the block's 128 columns of X, four 128-byte
            // lines a row, into L2 while this chunk is staged and summed.
            const int64_t j_block = int64_t(blockIdx.x / itiles) * JC_COLS;
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                const int f = threadIdx.x + kThreads * t;
                const int64_t k = k0 + JC_KCH + f / 4, jl = j_block + 32 * (f % 4);
                if (k < k_end && jl < o.L) prefetch_l2(o.X + k * o.xs_k + jl);
            }
        }
        __syncthreads();
        stage_y<IT, JC_KCH, true>(o, Ys, i0, k0, k_end);
        __syncthreads();
        const int kn = int(min(int64_t(JC_KCH), k_end - k0));
        if (PIPE && kn == JC_KCH && j + 4 <= o.L) {
            // A whole chunk: the warp's 32 rows in batches of 8, the next batch's loads
            // issued before this batch's FMAs, so that 8 to 16 loads stay in flight where
            // the plain loop below lets them drain to none between batches. Two batches
            // take 64 of the 128 registers; beside its 32 sums the 8-row tile spills 12
            // bytes. A lane whose columns end inside its float4 takes the plain loop. On
            // the H200: 4 x 8192 x 2048 TN 31.8 -> 26.6 us, 8 x 8192 x 2048 NN 37.4 ->
            // 28.7, 1 x 11008 x 4096 NN 84.5 -> 65.5; 6 x 5000 x 3001 NN 39.7 -> 42.0.
            constexpr int kRows = JC_KCH / kWarps, kBatch = 8;
            const float* base = o.X + (k0 + warp) * o.xs_k + j;
            const int64_t step = int64_t(kWarps) * o.xs_k;
            float4 cur[kBatch], nxt[kBatch];
#pragma unroll
            for (int u = 0; u < kBatch; ++u) cur[u] = __ldcs(reinterpret_cast<const float4*>(base + u * step));
#pragma unroll
            for (int b = 0; b < kRows / kBatch; ++b) {
                if (b + 1 < kRows / kBatch) {
#pragma unroll
                    for (int u = 0; u < kBatch; ++u)
                        nxt[u] = __ldcs(reinterpret_cast<const float4*>(base + ((b + 1) * kBatch + u) * step));
                }
#pragma unroll
                for (int u = 0; u < kBatch; ++u) {
                    const float x[4] = {cur[u].x, cur[u].y, cur[u].z, cur[u].w};
                    jrow_fmas<IT>(acc, x, Ys + (warp + kWarps * (b * kBatch + u)) * IT);
                }
                if (b + 1 < kRows / kBatch) {
#pragma unroll
                    for (int u = 0; u < kBatch; ++u) cur[u] = nxt[u];
                }
            }
            continue;
        }
#pragma unroll 8
        for (int kk = warp; kk < kn; kk += kWarps) {
            const float* row = o.X + (k0 + kk) * o.xs_k;
            float x[4];
            if (VEC && j + 4 <= o.L) {
                const float4 v = __ldcs(reinterpret_cast<const float4*>(row + j));
                x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) x[e] = j + e < o.L ? row[(j + e) * o.xs_j] : 0.0f;
            }
            jrow_fmas<IT>(acc, x, Ys + kk * IT);
        }
    }

    // Tree over the warps: at each level the upper half of the remaining warps parks its
    // sums and the lower half adds them (warp w adds warp w + h), so warp 0 ends with
    // ((w0 + w4) + (w2 + w6)) + ((w1 + w5) + (w3 + w7)).
    float* red = smem;  // [warp - h][i][e][lane]
#pragma unroll
    for (int h = kWarps / 2; h >= 1; h /= 2) {
        __syncthreads();  // the Y stage, or the previous level's reads, are done
        if (warp >= h && warp < 2 * h) {
#pragma unroll
            for (int i = 0; i < IT; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) red[(((warp - h) * IT + i) * 4 + e) * 32 + lane] = acc[i][e];
        }
        __syncthreads();
        if (warp < h) {
#pragma unroll
            for (int i = 0; i < IT; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][e] += red[((warp * IT + i) * 4 + e) * 32 + lane];
        }
    }
    if (warp != 0) return;
#pragma unroll
    for (int i = 0; i < IT; ++i) {
        if (i0 + i >= o.S) break;
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (j + e < o.L) store_out(o, i0 + i, j + e, acc[i][e]);
    }
}

// The GEMV kernel: S == 1, X rows along k. Block (jb, split): warp w owns row j = 8 jb
// + w; per step of 512 k, lane l handles k = k0 + 128 u + 4 l + [0, 4) for u < 4: four
// float4s of X (streamed past L1: read once) and four of Y (through L1: every warp of the
// SM reads them) for 16 FFMAs in four independent sums. The lane's sums are added in a
// fixed order and then over the warp by a butterfly, so the result does not depend on
// timing. `VEC`: X's rows start on 16 bytes. Y is contiguous and starts on 16 bytes
// always: launch_gemv copies any other Y into a buffer first (scalar loads of a strided
// Y touch four times the cache lines per warp, and ran the kernel at 0.6x cuBLAS's GEMV).
constexpr int GV_UNROLL = 4, GV_STEP = 128 * GV_UNROLL;

// `WHOLE`: the caller knows k + 4 <= k_end.
template <bool WHOLE>
__device__ __forceinline__ float4 load_y4(const float* y, int64_t k, int64_t k_end) {
    if constexpr (WHOLE) {
        return __ldg(reinterpret_cast<const float4*>(y + k));
    } else {
        if (k + 4 <= k_end) return __ldg(reinterpret_cast<const float4*>(y + k));
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = k + e < k_end ? __ldg(y + k + e) : 0.0f;
        return make_float4(v[0], v[1], v[2], v[3]);
    }
}

template <bool VEC, bool WHOLE>
__device__ __forceinline__ float4 load_x4(const float* row, int64_t xs_k, int64_t k, int64_t k_end) {
    if constexpr (VEC && WHOLE) {
        return __ldcs(reinterpret_cast<const float4*>(row + k));
    } else {
        if (VEC && k + 4 <= k_end) return __ldcs(reinterpret_cast<const float4*>(row + k));
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = k + e < k_end ? __ldcs(row + (k + e) * xs_k) : 0.0f;
        return make_float4(v[0], v[1], v[2], v[3]);
    }
}

__device__ __forceinline__ void fma4(float4& acc, const float4& x, const float4& y) {
    acc.x = fmaf(x.x, y.x, acc.x);
    acc.y = fmaf(x.y, y.y, acc.y);
    acc.z = fmaf(x.z, y.z, acc.z);
    acc.w = fmaf(x.w, y.w, acc.w);
}

template <bool VEC>
__global__ void __launch_bounds__(kThreads, 4) skinny_gemv_kernel(SkinnyOperands o) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t j = int64_t(blockIdx.x) * kWarps + warp;
    if (j >= o.L) return;  // whole warps only; nothing below synchronises the block
    const int64_t k_begin = int64_t(split_k_begin(blockIdx.y, o.splits, o.chunks)) * GV_STEP;
    const int64_t k_end = min(o.K, int64_t(split_k_begin(blockIdx.y + 1, o.splits, o.chunks)) * GV_STEP);
    const float* row = o.X + j * o.xs_j;

    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int64_t k0 = k_begin;
    for (; k0 + GV_STEP <= k_end; k0 += GV_STEP) {  // whole steps: every load inside X
        float4 x[GV_UNROLL], y[GV_UNROLL];
#pragma unroll
        for (int u = 0; u < GV_UNROLL; ++u) {
            const int64_t k = k0 + 128 * u + 4 * lane;
            x[u] = load_x4<VEC, true>(row, o.xs_k, k, k_end);
            y[u] = load_y4<true>(o.Y, k, k_end);
        }
#pragma unroll
        for (int u = 0; u < GV_UNROLL; ++u) fma4(acc, x[u], y[u]);
    }
    for (; k0 < k_end; k0 += 128) {  // the last partial step, bounds-checked
        const int64_t k = k0 + 4 * lane;
        if (k < k_end) fma4(acc, load_x4<VEC, false>(row, o.xs_k, k, k_end), load_y4<false>(o.Y, k, k_end));
    }
    float sum = (acc.x + acc.y) + (acc.z + acc.w);
#pragma unroll
    for (int off = 16; off >= 1; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) store_out(o, 0, j, sum);
}

// The GEMV kernel widened to a few rows of Y (2 <= S <= kGemvRows: a small batch through
// a Linear layer), X rows along k and 16-byte aligned, Y rows contiguous and 16-byte
// aligned (make_y_contiguous copies any other Y first). Block (it, jb, split): rows i0 =
// IT it + [0, IT) of Y, and warp w owns rows j0 = RJ (8 jb + w) + [0, RJ) of X; the
// blocks of one jb are adjacent, so they read the same rows of X at about the same time
// (from DRAM once, then from L2). Per whole step, lane l handles k = k0 + 128 u + 4 l +
// [0, 4) for u < UNROLL: RJ float4s of X (streamed) and IT of Y (through L1, which every
// warp of the SM reads) for 4 IT RJ FFMAs. Each float4 of Y serves RJ rows of X, so L1
// reads 16 IT / RJ bytes of Y per 16 bytes of X from DRAM: at IT = 16 and RJ = 2 that
// is L1's whole 128 bytes a clock at the DRAM rate, hence RJ = 4 from 5 rows of Y on.
// Rows of Y past S read row S - 1 again and are not stored; rows of X past L read row
// L - 1. No shared memory, no block-wide synchronisation; the lane's sums are
// reduce-scattered over the warp in a fixed order (deterministic).
constexpr int kGemvRows = 32;

// A GEMV-rows tile: IT rows of Y per block, RJ rows of X per warp, UNROLL float4s of each
// row of X per lane in flight, MIN_BLOCKS blocks per SM budgeted for. Every tile
// prefetches the warp's rows of X into L2 one whole step ahead (two and four steps ahead
// were slower).
template <int IT_, int RJ_, int UNROLL_, int MIN_BLOCKS_>
struct GemvRowsTile {
    static constexpr int IT = IT_, RJ = RJ_, UNROLL = UNROLL_, MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr int STEP = 128 * UNROLL;  // k per whole step of a warp
    static constexpr int LINES = STEP / 32;    // 128-byte lines of a row of X per step
    static_assert(GV_STEP % STEP == 0, "splits fall on whole GV_STEP chunks");
    static_assert((RJ * LINES) % 32 == 0, "a step's lines are whole prefetches of the warp");
    // How a lane's products reach its sums. In one chain each sum gathers K / 32
    // products in a row; with PAIRED each eight are summed apart first (one multiply and
    // one add more per eight), so that a sum takes K / 256 adds. Measured on the H200 at
    // K = 4096, uniform inputs: 1.1e-7 relative error against the chain's 2.1e-7, where
    // cuBLAS's batched GEMV, which it replaces on 2 to 8 rows, errs 1.3e-7; at 0 to 4%
    // of the time there. From 9 rows on cuBLAS's kernels err 3-4e-7 and the pairs
    // cost 3-4% of a tile that is not at the bandwidth yet: the chain stays.
    static constexpr bool PAIRED = IT <= 8;
    static_assert(!PAIRED || UNROLL % 2 == 0, "a whole step's float4s are summed in pairs");
};

template <int IT, int RJ, int UNROLL, int MIN_BLOCKS>
__global__ void __launch_bounds__(kThreads, MIN_BLOCKS) skinny_gemv_rows_kernel(SkinnyOperands o) {
    using T = GemvRowsTile<IT, RJ, UNROLL, MIN_BLOCKS>;
    constexpr int N = IT * RJ;  // sums per lane: acc[i * RJ + r]
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t itiles = (o.S + IT - 1) / IT;
    const int64_t i0 = int64_t(blockIdx.x % itiles) * IT;
    const int64_t j0 = (int64_t(blockIdx.x / itiles) * kWarps + warp) * RJ;
    if (j0 >= o.L) return;  // whole warps only; nothing below synchronises the block
    const int64_t k_begin = int64_t(split_k_begin(blockIdx.y, o.splits, o.chunks)) * GV_STEP;
    const int64_t k_end = min(o.K, int64_t(split_k_begin(blockIdx.y + 1, o.splits, o.chunks)) * GV_STEP);
    const float* xrow[RJ];
#pragma unroll
    for (int r = 0; r < RJ; ++r) xrow[r] = o.X + min(j0 + r, o.L - 1) * o.xs_j;
    // Y's rows as 32-bit offsets from Y (launch_skinny sends only an S x ys_i below 2^31
    // here): 16 pointers did not fit beside the sums at two blocks per SM.
    uint32_t yoff[IT];
#pragma unroll
    for (int i = 0; i < IT; ++i) yoff[i] = uint32_t(min(i0 + i, o.S - 1) * o.ys_i);

    float acc[N];
#pragma unroll
    for (int x = 0; x < N; ++x) acc[x] = 0.0f;
    // acc[i RJ + r] += Y(i, k + [0, 4)) . X(j0 + r, k + [0, 4)): in one chain through
    // acc (accumulate_chain), or summed apart first (accumulate, the partial last step).
    auto accumulate_chain = [&](const float4 (&x)[RJ], int64_t k) {
#pragma unroll
        for (int i = 0; i < IT; ++i) {
            const float4 y = load_y4<true>(o.Y + yoff[i], k, k_end);
#pragma unroll
            for (int r = 0; r < RJ; ++r) dot4_into(acc[i * RJ + r], y, x[r]);
        }
    };
    auto accumulate = [&](const float4 (&x)[RJ], int64_t k, auto whole) {
#pragma unroll
        for (int i = 0; i < IT; ++i) {
            const float4 y = load_y4<decltype(whole)::value>(o.Y + yoff[i], k, k_end);
#pragma unroll
            for (int r = 0; r < RJ; ++r) acc[i * RJ + r] += dot4(y, x[r]);
        }
    };
    // The same for the eight k of two float4s (at ka and kb), summed in a chain of their
    // own and then added to acc (T::PAIRED).
    auto accumulate_pair = [&](const float4 (&xa)[RJ], int64_t ka, const float4 (&xb)[RJ], int64_t kb) {
#pragma unroll
        for (int i = 0; i < IT; ++i) {
            const float4 ya = load_y4<true>(o.Y + yoff[i], ka, k_end);
            const float4 yb = load_y4<true>(o.Y + yoff[i], kb, k_end);
#pragma unroll
            for (int r = 0; r < RJ; ++r) {
                float t = dot4(ya, xa[r]);
                dot4_into(t, yb, xb[r]);
                acc[i * RJ + r] += t;
            }
        }
    };
    // The warp's RJ rows of the whole step at k, a line per lane per prefetch.
    auto prefetch_step = [&](int64_t k) {
#pragma unroll
        for (int h = 0; h < RJ * T::LINES / 32; ++h) {
            const int f = lane + 32 * h;
            prefetch_l2(xrow[f / T::LINES] + k + 32 * (f % T::LINES));
        }
    };
    int64_t k0 = k_begin;
    for (; k0 + T::STEP <= k_end; k0 += T::STEP) {  // whole steps: every load inside X and Y
        if (k0 + 2 * T::STEP <= k_end) prefetch_step(k0 + T::STEP);
        float4 x[UNROLL][RJ];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int r = 0; r < RJ; ++r) x[u][r] = load_x4<true, true>(xrow[r], 1, k0 + 128 * u + 4 * lane, k_end);
        if constexpr (T::PAIRED) {
#pragma unroll
            for (int u = 0; u < UNROLL; u += 2)
                accumulate_pair(x[u], k0 + 128 * u + 4 * lane, x[u + 1], k0 + 128 * (u + 1) + 4 * lane);
        } else {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) accumulate_chain(x[u], k0 + 128 * u + 4 * lane);
        }
    }
    for (; k0 < k_end; k0 += 128) {  // the last partial step, bounds-checked
        const int64_t k = k0 + 4 * lane;
        if (k >= k_end) continue;
        float4 x[RJ];
#pragma unroll
        for (int r = 0; r < RJ; ++r) x[r] = load_x4<true, false>(xrow[r], 1, k, k_end);
        accumulate(x, k, std::false_type{});
    }

    reduce_scatter<N / 2>(acc, lane);
    complete_sums(acc);
    if (lane >= N / 2) return;  // the other lanes hold the same sums
#pragma unroll
    for (int f = 0; f < 2; ++f) {
        const int flat = 2 * lane + f;
        const int64_t i = i0 + flat / RJ, j = j0 + flat % RJ;
        if (i < o.S && j < o.L) store_out(o, i, j, acc[f]);
    }
}

// A GEMV-rows kernel and the rows of X one of its blocks covers.
struct GemvRowsLaunch {
    void (*kernel)(SkinnyOperands);
    int rows_per_block;
};

template <class T>
GemvRowsLaunch gemv_rows_launch() {
    return {skinny_gemv_rows_kernel<T::IT, T::RJ, T::UNROLL, T::MIN_BLOCKS>, kWarps * T::RJ};
}

// The tile for S rows of Y (see launch_gemv).
GemvRowsLaunch gemv_rows_for(int64_t S) {
    if (S <= 2) return gemv_rows_launch<GemvRowsTile<2, 2, 4, 2>>();
    if (S <= 4) return gemv_rows_launch<GemvRowsTile<4, 2, 4, 2>>();
    if (S <= 8) return gemv_rows_launch<GemvRowsTile<8, 4, 4, 1>>();
    return gemv_rows_launch<GemvRowsTile<16, 4, 4, 1>>();
}

// With more than one split, split s writes slab s (C's layout, alpha 1, beta 0) and
// reduce_split_k forms C from the slabs afterwards; with one, o writes C itself.
SplitKSlabs park_splits(SkinnyOperands& o, const Problem& q, Workspace& ws, bool small_is_m) {
    return o.splits > 1 ? park_in_slabs(o, q, ws, small_is_m) : SplitKSlabs{};
}

// The GEMV kernels (one vector, or 2 to 32 rows of Y against X rows along k), with K
// split over blocks only as far as one wave of resident blocks allows (a decode step over
// 4096 or more rows of W runs unsplit: one launch, no reduction). `vec`: X's rows start
// on 16 bytes (always so for S > 1).
void launch_gemv(SkinnyOperands o, const Problem& q, float* C, cudaStream_t stream, Workspace& ws, bool small_is_m,
                 bool vec) {
    make_y_contiguous(o, stream, ws, small_is_m);
    void (*kernel)(SkinnyOperands) = nullptr;
    int rows_per_block = kWarps;
    int64_t itiles = 1;
    if (o.S == 1) {
        kernel = vec ? skinny_gemv_kernel<true> : skinny_gemv_kernel<false>;
    } else {
        // The fewest rows of Y per block that hold S, and tiles of 16 beyond that (the
        // blocks of one range of X run side by side: X comes from DRAM once, then L2).
        // Up to 4 rows of Y: two rows of X per warp, two blocks per SM (their loads of X
        // in flight cover DRAM's latency). 5 to 16: four rows of X per warp, which halves
        // the L1 traffic of Y per byte of X (L1, not DRAM, bounded the two-row form at
        // 16 rows), in 255 registers at one block per SM with four float4s of each row of
        // X in flight. Every tile prefetches its rows of X into L2 one step ahead
        // (docs/cuda-notes.md#the-shapes-users-call).
        const GemvRowsLaunch l = gemv_rows_for(o.S);
        kernel = l.kernel;
        rows_per_block = l.rows_per_block;
        itiles = o.S <= 8 ? 1 : ceil_div(o.S, 16);
    }
    const int64_t blocks = itiles * ceil_div(o.L, rows_per_block);
    o.chunks = int(ceil_div(q.K, GV_STEP));
    const int64_t resident = resident_blocks(kernel, kThreads, 0);
    const int64_t splits =
        std::min<int64_t>({resident / blocks, std::max<int64_t>(1, o.chunks / 2), max_split_k(q.M, q.N, 64, 64)});
    o.splits = int(std::max<int64_t>(1, splits));
    const SplitKSlabs slabs = park_splits(o, q, ws, small_is_m);
    kernel<<<dim3(unsigned(blocks), unsigned(o.splits)), kThreads, 0, stream>>>(o);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    if (o.splits > 1) reduce_split_k(slabs, q.M, q.N, C, q.ldc, q.alpha, q.beta, nullptr, stream);
}

void launch_skinny(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name, bool small_is_m) {
    const Problem& q = p.problem;
    if (q.M == 0 || q.N == 0) return;
    SkinnyOperands o = skinny_view(p, small_is_m);
    if (o.S > kMaxSmall)
        throw ConstraintError(std::string(name) + ": the small dimension is at most " + std::to_string(kMaxSmall));
    // X is stored L x K (rows along k) or K x L (rows along j).
    const bool krow = rows_along_k(o);
    const bool vec = x_rows_aligned16(o);  // 16-byte loads
    // The GEMV kernels: one vector (any X), or up to kGemvRows rows against X rows that
    // start on 16 bytes, Y within the rows kernel's 32-bit offsets (a k-row tile below
    // takes the rest).
    if (krow && (o.S == 1 || (o.S <= kGemvRows && vec && o.S * std::max(o.ys_i, o.K + 4) < (int64_t(1) << 31))))
        return launch_gemv(o, q, p.C, stream, ws, small_is_m, vec);
    const int kch = krow ? KC_KCH : JC_KCH;
    // The small tile of the k-row kernel is built for 16-byte loads only (its scalar form
    // would spill), and so are both kernels' mid tiles.
    const int it = o.S <= kSmallTile && (vec || !krow) ? kSmallTile : o.S <= kMidTile && vec ? kMidTile : kLargeTile;
    const int64_t itiles = ceil_div(o.S, it);
    const int64_t blocks = itiles * ceil_div(o.L, krow ? kWarps * (64 / it) : JC_COLS);
    void (*kernel)(SkinnyOperands) = nullptr;
    if (krow && it == kSmallTile)
        kernel = skinny_krow_kernel<kSmallTile, true>;
    else if (krow && it == kMidTile)
        kernel = skinny_krow_kernel<kMidTile, true>;
    else if (krow)
        kernel = vec ? skinny_krow_kernel<kLargeTile, true> : skinny_krow_kernel<kLargeTile, false>;
    else if (it == kSmallTile)
        kernel = vec ? skinny_jrow_kernel<kSmallTile, true> : skinny_jrow_kernel<kSmallTile, false>;
    else if (it == kMidTile)
        kernel = skinny_jrow_kernel<kMidTile, true>;
    else
        kernel = vec ? skinny_jrow_kernel<kLargeTile, true> : skinny_jrow_kernel<kLargeTile, false>;
    o.chunks = int(ceil_div(q.K, kch));
    // Enough blocks for every SM to keep several in flight, but no split shorter than
    // two chunks, and slabs within split_k's bound. The j-row kernel's 4- and 8-row tiles
    // fill one wave of their two blocks an SM and no more: a second, partial wave left
    // SMs idle at its end (1 x 11008 x 4096 NN: 90.6 us in 7 splits, 83.7 in 3; 3 x 1000 x
    // 20000 NN: 63.8 against 53.9 us).
    auto sm_count = [] {
        int dev = 0, sms = 0;
        FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
        FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        return int64_t(sms);
    };
    const int64_t want = !krow && it <= kMidTile ? resident_blocks(kernel, kThreads, 0) / blocks
                                                 : ceil_div(4 * sm_count(), blocks);
    const int64_t splits = std::min<int64_t>({want, std::max<int64_t>(1, o.chunks / 2), max_split_k(q.M, q.N, 64, 64)});
    o.splits = int(std::max<int64_t>(1, splits));
    const SplitKSlabs slabs = park_splits(o, q, ws, small_is_m);
    const dim3 grid(unsigned(blocks), unsigned(o.splits));
    kernel<<<grid, kThreads, 0, stream>>>(o);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    if (o.splits > 1) reduce_split_k(slabs, q.M, q.N, p.C, q.ldc, q.alpha, q.beta, nullptr, stream);
}

}  // namespace

void launch_skinny_m64(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_skinny(p, stream, ws, "skinny_m64", true);
}
void launch_skinny_n64(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_skinny(p, stream, ws, "skinny_n64", false);
}

}  // namespace cuda
}  // namespace fastgemm
