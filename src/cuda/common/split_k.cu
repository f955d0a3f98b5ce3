// See split_k.cuh.
#include "cuda/common/split_k.cuh"

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kRegion = kSplitKRegion;
constexpr int kThreads = 256;
constexpr int kRowsPerPass = kThreads / (kRegion / 4);  // 16: a thread owns one float4 column of 4 rows
constexpr int kPasses = kRegion / kRowsPerPass;        // 4

// alpha v + beta c for one element of C (beta == 0 does not read c).
__device__ __forceinline__ float scaled(float v, const float* c, float alpha, float beta) {
    return beta == 0.0f ? alpha * v : alpha * v + beta * *c;
}

// Four consecutive elements of a row of C: one float4 when aligned and whole, else one at
// a time up to `count`.
__device__ __forceinline__ void store_row4(float* c, const float (&v)[4], int64_t count, bool c_vec, float alpha,
                                           float beta) {
    if (c_vec && count >= 4) {
        float4 r = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
        if (beta != 0.0f) {
            const float4 old = *reinterpret_cast<const float4*>(c);
            r.x += beta * old.x, r.y += beta * old.y, r.z += beta * old.z, r.w += beta * old.w;
        }
        *reinterpret_cast<float4*>(c) = r;
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (e < count) c[e] = scaled(v[e], c + e, alpha, beta);
    }
}

// Both kernels: one block per 64 x 64 region of the slabs. Thread t owns columns n0 + 4 (t
// % 16) + [0, 4) of rows m0 + t / 16 + 16 i (i < 4): a warp reads two 256-byte row
// segments per slab, and the four rows' loads of a slab are in flight together.

// acc[i] += the float4 at base + 16 i rows of slab slab_of(s), for s in [0, count) in
// increasing s, skipping rows outside C (!inside[i]): the one chain of adds per element
// that both kernels run. Streaming loads: each partial is read once.
template <int UNROLL, class SlabOf>
__device__ __forceinline__ void add_slabs(float4 (&acc)[kPasses], const bool (&inside)[kPasses], const float* base,
                                          int64_t slab, int64_t ld, int count, SlabOf slab_of) {
#pragma unroll UNROLL
    for (int s = 0; s < count; ++s) {
        const float* at = base + int64_t(slab_of(s)) * slab;
#pragma unroll
        for (int i = 0; i < kPasses; ++i) {
            if (!inside[i]) continue;
            const float4 v = __ldcs(reinterpret_cast<const float4*>(at + int64_t(kRowsPerPass) * i * ld));
            acc[i].x += v.x, acc[i].y += v.y, acc[i].z += v.z, acc[i].w += v.w;
        }
    }
}

// Grouped sums (reduce_split_k's `groups`): block (region, g) adds slabs
// [split_k_begin(g, groups, slab_count), split_k_begin(g + 1, ...)) of its region in
// increasing s and leaves the sum in the group's first slab, which no other block reads.
__global__ void __launch_bounds__(kThreads)
    sum_slab_groups_kernel(float* partial, int slab_count, int groups, int64_t slab, int64_t ld, int64_t M, int64_t N) {
    const int tid = int(threadIdx.x), g = int(blockIdx.z);
    const int s0 = split_k_begin(g, groups, slab_count), s1 = split_k_begin(g + 1, groups, slab_count);
    const int64_t n = int64_t(blockIdx.x) * kRegion + 4 * (tid % (kRegion / 4));
    const int64_t row_blocks = (M + kRegion - 1) / kRegion;
    for (int64_t rb = blockIdx.y; rb < row_blocks; rb += gridDim.y) {
        const int64_t m_first = rb * kRegion + tid / (kRegion / 4);
        float* base = partial + m_first * ld + n;
        float4 acc[kPasses];
        bool inside[kPasses];
#pragma unroll
        for (int i = 0; i < kPasses; ++i) {
            acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
            inside[i] = n < N && m_first + kRowsPerPass * i < M;
        }
        add_slabs<4>(acc, inside, base, slab, ld, s1 - s0, [=](int s) { return s0 + s; });
        float* group_slab = base + int64_t(s0) * slab;
#pragma unroll
        for (int i = 0; i < kPasses; ++i)
            if (inside[i]) *reinterpret_cast<float4*>(group_slab + int64_t(kRowsPerPass) * i * ld) = acc[i];
    }
}

// The sum into C of `splits` slabs, number split_k_begin(s, splits, slab_count) for s in
// [0, splits) (every slab when splits == slab_count; the groups' first slabs after
// sum_slab_groups_kernel). For every element they are added in increasing s, one chain
// of adds per element: the order never depends on timing. Transposed: the region's sums
// pass through shared memory so that C's rows (the slabs' columns) are written by the
// same float4 pattern.
template <bool Checked, bool Transposed>
__global__ void __launch_bounds__(kThreads)
    reduce_split_k_kernel(const float* partial, int splits, int slab_count, int64_t slab, int64_t ld, int64_t M,
                          int64_t N, float* C, int64_t ldc, float alpha, float beta, bool c_vec, int* fallback) {
    // (+1 spreads a column of the region, which the transposed reads walk, over the banks.)
    __shared__ float region[Transposed ? kRegion : 1][Transposed ? kRegion + 1 : 1];
    const int tid = int(threadIdx.x);
    const int64_t n = int64_t(blockIdx.x) * kRegion + 4 * (tid % (kRegion / 4));
    const int64_t row_blocks = (M + kRegion - 1) / kRegion;
    for (int64_t rb = blockIdx.y; rb < row_blocks; rb += gridDim.y) {
        const int64_t m0 = rb * kRegion, m_first = m0 + tid / (kRegion / 4);
        float4 acc[kPasses];
#pragma unroll
        for (int i = 0; i < kPasses; ++i) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
        const float* base = partial + m_first * ld + n;
        // Rows and columns outside C are not read (a skinny C fills a sliver of its slab).
        bool inside[kPasses];
#pragma unroll
        for (int i = 0; i < kPasses; ++i) inside[i] = n < N && m_first + kRowsPerPass * i < M;
        // Every slab when not grouped; 32-bit, as S <= 64 (max_split_k).
        add_slabs<2>(acc, inside, base, slab, ld, splits,
                     [=](int s) { return splits == slab_count ? s : s * slab_count / splits; });
        if constexpr (Transposed) {
            // Staged before the test, so that the sums' registers are free before it.
            const int col = 4 * (tid % (kRegion / 4)), row = tid / (kRegion / 4);
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                region[row + kRowsPerPass * i][col + 0] = acc[i].x;
                region[row + kRowsPerPass * i][col + 1] = acc[i].y;
                region[row + kRowsPerPass * i][col + 2] = acc[i].z;
                region[row + kRowsPerPass * i][col + 3] = acc[i].w;
            }
        }
        if constexpr (Checked) {
            // Only elements inside C count: padding rows and columns may hold anything.
            bool finite = true;
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                if (m_first + kRowsPerPass * i >= M) continue;
                const float v[4] = {acc[i].x, acc[i].y, acc[i].z, acc[i].w};
#pragma unroll
                for (int e = 0; e < 4; ++e) finite &= n + e >= N || fabsf(v[e]) <= 3.402823466e38f;
            }
            if (!__syncthreads_and(finite)) {
                if (tid == 0) {
                    const int k = atomicAdd(fallback, 1);
                    // The region's corner in C: (slab row, slab column), swapped when C is
                    // the slabs' transpose.
                    const int slab_row = int(m0), slab_col = int(blockIdx.x) * kRegion;
                    fallback[1 + 2 * k] = Transposed ? slab_col : slab_row;
                    fallback[2 + 2 * k] = Transposed ? slab_row : slab_col;
                }
                continue;  // uniform: every thread saw the same answer
            }
        }
        if constexpr (!Transposed) {
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                const int64_t m = m_first + kRowsPerPass * i;
                if (m >= M || n >= N) continue;
                const float v[4] = {acc[i].x, acc[i].y, acc[i].z, acc[i].w};
                store_row4(C + m * ldc + n, v, N - n, c_vec, alpha, beta);
            }
        } else {
            const int col = 4 * (tid % (kRegion / 4)), row = tid / (kRegion / 4);  // within the region
            if constexpr (!Checked) __syncthreads();  // (the checked kernel's test was the barrier)
            // C row r = n0 + row + 16 i (a slab column), columns m0 + col + [0, 4) (slab rows).
            const int64_t n0 = int64_t(blockIdx.x) * kRegion;
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                const int64_t r = n0 + row + kRowsPerPass * i, m = m0 + col;
                if (r >= N || m >= M) continue;
                float v[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) v[e] = region[col + e][row + kRowsPerPass * i];
                store_row4(C + r * ldc + m, v, M - m, c_vec, alpha, beta);
            }
            __syncthreads();  // the next region overwrites the buffer
        }
    }
}

int64_t round_up(int64_t v, int64_t q) { return (v + q - 1) / q * q; }

// How many groups the slabs are summed in first (split_k.cuh, reduce_split_k): none
// where the regions alone give a few hundred blocks or the slabs are few; else enough
// groups for about 256 blocks, at most sqrt(splits), so that neither pass streams many
// slabs through a few SMs. A function of the shape and S only, never of the device.
int slab_groups(int64_t regions, int splits) {
    if (splits < 16 || regions >= 128) return 1;
    int by_sqrt = 1;
    while ((by_sqrt + 1) * (by_sqrt + 1) <= splits) ++by_sqrt;
    const int64_t to_fill = (256 + regions - 1) / regions;
    return int(to_fill < by_sqrt ? to_fill : by_sqrt);
}

}  // namespace

SplitKSlabs reserve_split_k_slabs(Workspace& ws, int splits, int64_t rows, int64_t cols, int tile_rows,
                                  int tile_cols) {
    SplitKSlabs s;
    s.splits = splits;
    // Whole tiles for the GEMM's stores, whole 64 x 64 regions for the reduction's loads.
    s.rows = round_up(round_up(rows, tile_rows), kRegion);
    s.ld = round_up(round_up(cols, tile_cols), kRegion);
    s.partial = static_cast<float*>(ws.get(5, size_t(splits) * size_t(s.slab()) * sizeof(float)));
    return s;
}

void reduce_split_k(const SplitKSlabs& slabs, int64_t M, int64_t N, float* C, int64_t ldc, float alpha, float beta,
                    int* fallback, cudaStream_t stream, SlabsToC to_c) {
    if (M == 0 || N == 0) return;
    if (slabs.rows < M || slabs.ld < N || slabs.ld % 4 != 0 || reinterpret_cast<uintptr_t>(slabs.partial) % 16 != 0)
        throw KernelError("reduce_split_k: the partial slabs do not cover C in whole 16-byte rows");
    const bool c_vec = ldc % 4 == 0 && reinterpret_cast<uintptr_t>(C) % 16 == 0;
    const int64_t row_blocks = ceil_div(M, kRegion);
    const dim3 grid(unsigned(ceil_div(N, kRegion)), unsigned(row_blocks < 65535 ? row_blocks : 65535));
    const int groups = slab_groups(row_blocks * ceil_div(N, kRegion), slabs.splits);
    if (groups > 1) {
        sum_slab_groups_kernel<<<dim3(grid.x, grid.y, unsigned(groups)), kThreads, 0, stream>>>(
            slabs.partial, slabs.splits, groups, slabs.slab(), slabs.ld, M, N);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    }
    auto kernel = reduce_split_k_kernel<false, false>;
    if (to_c == SlabsToC::same)
        kernel = fallback ? reduce_split_k_kernel<true, false> : reduce_split_k_kernel<false, false>;
    else
        kernel = fallback ? reduce_split_k_kernel<true, true> : reduce_split_k_kernel<false, true>;
    kernel<<<grid, kThreads, 0, stream>>>(slabs.partial, groups > 1 ? groups : slabs.splits, slabs.splits,
                                          slabs.slab(), slabs.ld, M, N, C, ldc, alpha, beta, c_vec, fallback);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
