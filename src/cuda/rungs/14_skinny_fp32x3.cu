// Rung 14, fp32x3 on tensor cores: skinny problems (M or N at most 64) whose big operand
// has rows along k (x @ W^T with W stored N x K, PyTorch Linear's layout, and A @ B with
// A's rows along k and few columns of B), FP32-accurate (class fp32x3) and bound by
// memory. In the skinny terms of common/skinny_operands.cuh, Out(i, j) = sum_k Y(i, k)
// X(j, k), with X the big operand.
// Why tensor cores here: with 16 rows of Y, the FFMA kernels of 14_skinny.cu spend 16
// FFMAs and 16 floats of L1 reads of Y per float of X, about half of the time that X's
// DRAM reads allow each (docs/cuda-notes.md). mma.sync m16n8k8 on TF32 parts takes 16
// rows of Y as its A operand and 8 rows of X as its B operand: three mmas per 16 x 8 x 8
// (big x big, big x small, small x big, as rung 13) do the products, and each fragment of
// Y serves every row of X the warp owns.
// Owns: a block owns 16 rows of Y and, per row group of KW warps, 8 RN rows of X; each
// warp of a group takes one of KW parts of the block's k range, and the group's sums are
// added in shared memory in increasing part (deterministic). One block per SM.
// Feed: a ring of STAGES steps of 32 k per warp in shared memory, filled with cp.async
// (no registers held while the copies fly). A stage holds the warp's 8 RN rows of X, then
// 16 rows of Y, each 32 k = one 128-byte line, copied 8 lanes to a row, so that a copy
// instruction moves 4 whole lines. (Copying each lane's own fragments, 4 lanes to a row
// and 8 rows an instruction, read 69% of the copy bandwidth against 78% at 16 x 4096 x
// 4096 on an H200.) Chunk c of row r sits at chunk c ^ 4 (r & 1), so that the fragment
// reads, rows g and g + 1 in a phase, chunks t and 4 + t, hit 32 distinct banks.
// Fragments: lane (g, t) = (lane / 4, lane % 4) reads float4s at k0 + 4t and k0 + 16 + 4t
// of row g of each X tile and of rows g and g + 8 of Y; sub-step j < 4 of a step takes
// their component j, giving logical k = t the physical k0 + 4t + j and logical k = t + 4
// the physical k0 + 16 + 4t + j: the same map for A and B, so the mma adds the right
// products.
// The split, as rung 13's: X is split at a scale of 2^36 (kX3Tiny: every nonzero value
// then has a small part TF32 can carry), Y unscaled with the small part of a nonzero
// |y| < 2^-113 made NaN. Per step the small products go in first and the big ones last,
// into a fresh accumulator (the tensor cores truncate as they add), which is then
// unscaled and added to the lane's FP32 sums with round-to-nearest. A NaN or an Inf in
// the inputs, a product that overflows at the 2^36 scale and a small part made NaN all
// leave non-finite sums. A block that holds the whole k range checks its sums and, if one
// is not finite, recomputes its part of C in IEEE FP32 instead of storing them; where K
// is split over blocks (too few blocks for the GPU), the splits park in slabs and the
// checked reduction (split_k.cuh) lists such 64 x 64 regions of C for the IEEE kernel of
// nonfinite.cuh.
// Rows of Y past S read row S - 1 and rows of X past L read row L - 1; neither is stored.
// Other layouts (X with rows along j, or rows not on 16 bytes) run the FFMA kernels of
// skinny_m64 / skinny_n64, which are strict FP32 and so within this class.
// Constraints: M <= 64 (fp32x3_skinny_m64) or N <= 64 (fp32x3_skinny_n64); any K,
// strides and alignment.
#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/mma_sync.cuh"
#include "cuda/common/nonfinite.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/skinny_operands.cuh"
#include "cuda/common/split_k.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kMaxSmall = 64;
constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kRowsOfY = 16;  // the mma's 16 rows
constexpr int kStepK = 32;    // k per step: one 128-byte line of each row

// RN tiles of 8 rows of X per warp, KW warps of a block sharing the same rows over KW
// parts of the block's k range, STAGES steps in each warp's ring.
template <int RN_, int KW_, int STAGES_>
struct MmaGemvTile {
    static constexpr int RN = RN_, KW = KW_, STAGES = STAGES_;
    static constexpr int ROWS_PER_WARP = 8 * RN, ROW_GROUPS = kWarps / KW, ROWS_PER_BLOCK = ROW_GROUPS * ROWS_PER_WARP;
    static constexpr int STAGE_ROWS = 8 * RN + kRowsOfY;  // X's rows, then Y's
    static constexpr int RING_BYTES = kWarps * STAGES * STAGE_ROWS * 128;
    static_assert(kWarps % KW == 0, "whole row groups");
};

__device__ __forceinline__ float lane_of(const float4& v, int e) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

// Y's split: the small part of a nonzero |y| < 2^-113 is NaN (see the header).
__device__ __forceinline__ Tf32Split split_y(float y) {
    Tf32Split s = split_tf32(y);
    if (fabsf(y) < kX3Tiny && y != 0.0f) s.small = 0x7fc00000u;
    return s;
}

// acc[q] += the products of one step: x[q][h] = X(row g of tile q, k0 + 16h + 4t + [0, 4)),
// y[r][h] = Y(g + 8r, k0 + 16h + 4t + [0, 4)). Sub-step j takes component j of each.
template <int RN>
__device__ __forceinline__ void step_products(float (&acc)[RN][4], const float4 (&x)[RN][2], const float4 (&y)[2][2]) {
    // A fragments of sub-step j: a0 = Y(g, t), a1 = Y(g + 8, t), a2 = Y(g, t + 4),
    // a3 = Y(g + 8, t + 4) in logical k.
    uint32_t a_big[4][4], a_small[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int f = 0; f < 4; ++f) {
            const Tf32Split sp = split_y(lane_of(y[f & 1][f >> 1], j));
            a_big[j][f] = sp.big, a_small[j][f] = sp.small;
        }
    // B fragments: b0 = X(g, t), b1 = X(g, t + 4) in logical k, at the 2^36 scale.
    uint32_t b_big[RN][4][2], b_small[RN][4][2];
#pragma unroll
    for (int q = 0; q < RN; ++q)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const Tf32Split sp = split_tf32(lane_of(x[q][h], j) * kX3ScaleB);
                b_big[q][j][h] = sp.big, b_small[q][j][h] = sp.small;
            }
    float d[RN][4];
#pragma unroll
    for (int q = 0; q < RN; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) d[q][e] = 0.0f;
    // The tiles interleaved, so that consecutive mmas do not wait on each other.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int q = 0; q < RN; ++q) mma_tf32_16x8x8(d[q], a_small[j], b_big[q][j]);
#pragma unroll
        for (int q = 0; q < RN; ++q) mma_tf32_16x8x8(d[q], a_big[j], b_small[q][j]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < RN; ++q) mma_tf32_16x8x8(d[q], a_big[j], b_big[q][j]);
#pragma unroll
    for (int q = 0; q < RN; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][e] = fmaf(d[q][e], kX3UnscaleB, acc[q][e]);
}

// cp.async of row[k + [0, 4)) into dst, zero-filled past end.
__device__ __forceinline__ void copy4(float4* dst, const float* row, int64_t k, int64_t end) {
    const int64_t n = end - k;
    const uint32_t bytes = n >= 4 ? 16u : n > 0 ? uint32_t(4 * n) : 0u;
    const float* src = bytes > 0 ? row + k : row;  // nothing is read for 0 bytes
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}

// Where a warp works. Block (it, jb, split): rows i0 = 16 it + [0, 16) of Y; row group
// r = warp / KW owns rows j0 = ROWS_PER_BLOCK jb + 8 RN r + [0, 8 RN) of X, and warp w
// of it the w-th of KW parts of the split's k range (whole steps).
template <class T>
struct GemvPlace {
    int group, part, g, t;
    int64_t i0, j_block, j0, k_begin, k_end;
    __device__ explicit GemvPlace(const SkinnyOperands& o) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        group = warp / T::KW, part = warp % T::KW, g = lane >> 2, t = lane & 3;
        const int64_t itiles = (o.S + kRowsOfY - 1) / kRowsOfY;
        i0 = int64_t(blockIdx.x % itiles) * kRowsOfY;
        j_block = int64_t(blockIdx.x / itiles) * T::ROWS_PER_BLOCK;
        j0 = j_block + int64_t(group) * T::ROWS_PER_WARP;
        const int first = split_k_begin(blockIdx.y, o.splits, o.chunks);
        const int count = split_k_begin(blockIdx.y + 1, o.splits, o.chunks) - first;
        k_begin = int64_t(first + split_k_begin(part, T::KW, count)) * kStepK;
        k_end = min(o.K, int64_t(first + split_k_begin(part + 1, T::KW, count)) * kStepK);
    }
};

// Out(i, j) for the block's rows of Y and X in IEEE FP32, as gemm_ieee_listed computes it:
// FMAs in increasing k from zero, then alpha and beta. Only for a block whose sums are not
// all finite, so its speed does not matter.
__device__ void ieee_block(const SkinnyOperands& o, int64_t i0, int64_t j0, int rows) {
    for (int e = threadIdx.x; e < kRowsOfY * rows; e += kThreads) {
        const int64_t i = i0 + e / rows, j = j0 + e % rows;
        if (i >= o.S || j >= o.L) continue;
        float acc = 0.0f;
        for (int64_t k = 0; k < o.K; ++k) acc = fmaf(o.Y[i * o.ys_i + k * o.ys_k], o.X[j * o.xs_j + k * o.xs_k], acc);
        float* c = o.out + i * o.os_i + j * o.os_j;
        *c = o.beta == 0.0f ? o.alpha * acc : o.alpha * acc + o.beta * *c;
    }
}

// The KW parts' sums are added in shared memory in increasing part by the group's first
// warp: the result does not depend on timing. With one split the block stores C itself,
// checking its sums first (a block with a non-finite sum recomputes its part of C in IEEE
// FP32 instead); with more, the slabs of split_k.cuh, which the checked reduction sums.
template <class T>
__device__ __forceinline__ void finish(const SkinnyOperands& o, const GemvPlace<T>& w, float (&acc)[T::RN][4]) {
    constexpr int RN = T::RN, KW = T::KW;
    __shared__ float parked[kWarps - T::ROW_GROUPS][RN * 4][32];
    const int lane = threadIdx.x % 32;
    if (w.part > 0) {
#pragma unroll
        for (int q = 0; q < RN; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) parked[w.group * (KW - 1) + w.part - 1][q * 4 + e][lane] = acc[q][e];
    }
    __syncthreads();
    bool finite = true;
    if (w.part == 0) {
#pragma unroll
        for (int p = 1; p < KW; ++p)
#pragma unroll
            for (int q = 0; q < RN; ++q)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[q][e] += parked[w.group * (KW - 1) + p - 1][q * 4 + e][lane];
#pragma unroll
        for (int q = 0; q < RN; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) finite &= fabsf(acc[q][e]) <= 3.402823466e38f;
    }
    // C fragment: acc[q] = Out(i0 + g, j0 + 8q + 2t + [0, 2)), Out(i0 + g + 8, ...).
    auto store = [&](auto to_c) {
        if (w.part != 0) return;
        float* out = o.out + int64_t(blockIdx.y) * o.os_split;
#pragma unroll
        for (int q = 0; q < RN; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int64_t i = w.i0 + w.g + 8 * (e >> 1), j = w.j0 + 8 * q + 2 * w.t + (e & 1);
                if (i >= o.S || j >= o.L) continue;
                float* c = out + i * o.os_i + j * o.os_j;
                if constexpr (decltype(to_c)::value)
                    *c = o.beta == 0.0f ? o.alpha * acc[q][e] : o.alpha * acc[q][e] + o.beta * *c;
                else
                    *c = acc[q][e];
            }
    };
    if (o.splits > 1)
        store(std::false_type{});
    else if (__syncthreads_and(finite))
        store(std::true_type{});
    else
        ieee_block(o, w.i0, w.j_block, T::ROWS_PER_BLOCK);
}

// The ring of a warp (see the header): stage n % STAGES holds step n of its k range; a
// step is read only after every lane's copies of it have landed, and its stage is
// refilled only after every lane has read it (the copies and the reads of a stage are
// different lanes', so __syncwarp orders them).
template <class T>
__global__ void __launch_bounds__(kThreads, 1) fp32x3_gemv_kernel(SkinnyOperands o) {
    constexpr int RN = T::RN, STAGES = T::STAGES, ROWS = T::STAGE_ROWS;
    extern __shared__ float4 ring[];  // [warp][stage][row][8 chunks of 16 bytes]
    const GemvPlace<T> w(o);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, chunk = lane & 7;
    float4* const mine = ring + warp * STAGES * ROWS * 8;
    const int steps = int((w.k_end - w.k_begin + kStepK - 1) / kStepK);
    auto issue = [&](int n) {
        if (n < steps) {
            const int64_t k0 = w.k_begin + int64_t(n) * kStepK;
            float4* stage = mine + (n % STAGES) * ROWS * 8;
#pragma unroll
            for (int i = 0; i < ROWS / 4; ++i) {
                const int r = lane / 8 + 4 * i;
                const float* row = r < 8 * RN ? o.X + min(w.j0 + r, o.L - 1) * o.xs_j
                                              : o.Y + min(w.i0 + r - 8 * RN, o.S - 1) * o.ys_i;
                copy4(stage + r * 8 + (chunk ^ ((r & 1) << 2)), row, k0 + 4 * chunk, w.k_end);
            }
        }
        cp_async_commit();  // empty groups too: the count of groups stays the count of steps
    };
    float acc[RN][4];
#pragma unroll
    for (int q = 0; q < RN; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][e] = 0.0f;
#pragma unroll
    for (int n = 0; n < STAGES - 1; ++n) issue(n);
    const int swizzle = (w.g & 1) << 2;  // rows 8q + g and g + 8r have g's parity
    for (int n = 0; n < steps; ++n) {
        __syncwarp();  // every lane has read the stage refilled next
        issue(n + STAGES - 1);
        cp_async_wait<STAGES - 1>();
        __syncwarp();  // every lane's copies of step n have landed
        const float4* stage = mine + (n % STAGES) * ROWS * 8;
        float4 x[RN][2], y[2][2];
#pragma unroll
        for (int q = 0; q < RN; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) x[q][h] = stage[(8 * q + w.g) * 8 + ((4 * h + w.t) ^ swizzle)];
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int h = 0; h < 2; ++h) y[r][h] = stage[(8 * RN + w.g + 8 * r) * 8 + ((4 * h + w.t) ^ swizzle)];
        step_products<RN>(acc, x, y);
    }
    cp_async_wait<0>();
    finish<T>(o, w, acc);
}

// Two tiles: 32 rows of X per block (eight warps over the k range), and 64 (two row
// groups of four), which halves the reads of Y per byte of X where the blocks still fill
// the GPU. Same run, H200, kernel alone: 16 x 4096 x 4096 NT 20.6 us against 22.7 (64
// rows need a split there), 8192 x 16 x 4096 NN 39.8 against 38.6, 16 x 16384 x 4096 NT
// 76.6 against 71.7.
using NarrowTile = MmaGemvTile<4, 8, 4>;
using WideTile = MmaGemvTile<4, 4, 4>;

struct GemvLaunch {
    void (*kernel)(SkinnyOperands);
    int rows_per_block, kw, smem;
};
template <class T>
GemvLaunch gemv_launch() {
    return {fp32x3_gemv_kernel<T>, T::ROWS_PER_BLOCK, T::KW, T::RING_BYTES};
}

void launch(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name, bool small_is_m) {
    const Problem& q = p.problem;
    if (q.M == 0 || q.N == 0) return;
    SkinnyOperands o = skinny_view(p, small_is_m);
    if (o.S > kMaxSmall)
        throw ConstraintError(std::string(name) + ": the small dimension is at most " + std::to_string(kMaxSmall));
    if (!rows_along_k(o) || !x_rows_aligned16(o) || q.K == 0 || q.alpha == 0.0f) {
        // Layouts this kernel is not built for, and BLAS's quick return: the FFMA kernels.
        return small_is_m ? launch_skinny_m64(p, stream, ws) : launch_skinny_n64(p, stream, ws);
    }
    make_y_contiguous(o, stream, ws, small_is_m);
    const int64_t itiles = ceil_div(o.S, kRowsOfY);
    // resident_blocks also allows each kernel its ring of shared memory (on its first call).
    GemvLaunch l = gemv_launch<WideTile>();
    int64_t resident = resident_blocks(l.kernel, kThreads, l.smem);
    if (10 * itiles * ceil_div(o.L, l.rows_per_block) < 9 * resident) {
        l = gemv_launch<NarrowTile>();
        resident = resident_blocks(l.kernel, kThreads, l.smem);
    }
    const int64_t blocks = itiles * ceil_div(o.L, l.rows_per_block);
    o.chunks = int(ceil_div(q.K, kStepK));
    // K split over blocks only where the blocks leave SMs idle, as far as one wave of
    // resident blocks (both tiles: one per SM), with four steps a warp at least.
    o.splits = int(std::max<int64_t>(
        1, std::min<int64_t>({resident / blocks, o.chunks / (4 * l.kw), max_split_k(q.M, q.N, 64, 64)})));
    if (o.splits == 1) {
        l.kernel<<<unsigned(blocks), kThreads, l.smem, stream>>>(o);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        return;
    }
    const SplitKSlabs slabs = park_in_slabs(o, q, ws, small_is_m);
    l.kernel<<<dim3(unsigned(blocks), unsigned(o.splits)), kThreads, l.smem, stream>>>(o);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    const int64_t regions = ceil_div(q.M, kSplitKRegion) * ceil_div(q.N, kSplitKRegion);
    int* fallback = fallback_list(ws, regions);
    FASTGEMM_CUDA_CHECK(cudaMemsetAsync(fallback, 0, sizeof(int), stream));
    reduce_split_k(slabs, q.M, q.N, p.C, q.ldc, q.alpha, q.beta, fallback, stream);
    gemm_ieee_listed(p, fallback, int(regions), kSplitKRegion, kSplitKRegion, stream);
}

}  // namespace

void launch_fp32x3_skinny_m64(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch(p, stream, ws, "fp32x3_skinny_m64", true);
}
void launch_fp32x3_skinny_n64(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch(p, stream, ws, "fp32x3_skinny_n64", false);
}

}  // namespace cuda
}  // namespace fastgemm
