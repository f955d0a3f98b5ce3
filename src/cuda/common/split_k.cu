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
// The plain reduction runs in band blocks where C has fewer 64 x 64 regions than this,
// so that about 132 SMs or more hold its loads (measured on the H200: 32 x 1024 x 4096,
// 16 regions of 16 splits, 17.4 -> 14.9 us a call with the tf32 64 x 128 tiles); above
// it, region blocks already fill the SMs with four rows' loads per thread.
constexpr int64_t kBandsBelowRegions = 128;

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

// Two layouts of threads over the slabs. A region block (the checked and the transposed
// reductions, which decide and write whole 64 x 64 regions, and the plain one on a C of
// many regions) has thread t own columns n0 + 4 (t % 16) + [0, 4) of rows m0 + t / 16 +
// 16 i (i < 4): a warp reads two 256-byte row segments per slab. A band block (the
// grouped sums, and the plain reduction on a C of few regions) owns the same columns of
// one 16-row band, one row per thread: four times the blocks for the same C, which a C
// of few regions (32 x 1024: 16 of them) needs to keep enough loads in flight.

// acc[i] += the float4 at base + 16 i rows of slab slab_of(s), for s in [0, count) in
// increasing s, skipping rows outside C (!inside[i]): the one chain of adds per element
// that every kernel here runs. The loads of UNROLL slabs are issued before their adds (the
// compiler does not hoist them across the chain of its own accord); streaming loads, as
// each partial is read once.
template <int UNROLL, int ROWS, class SlabOf>
__device__ __forceinline__ void add_slabs(float4 (&acc)[ROWS], const bool (&inside)[ROWS], const float* base,
                                          int64_t slab, int64_t ld, int count, SlabOf slab_of) {
    for (int s = 0; s < count; s += UNROLL) {
        float4 v[UNROLL][ROWS];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const float* at = base + int64_t(slab_of(s + u < count ? s + u : s)) * slab;
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
                if (inside[i] && s + u < count)
                    v[u][i] = __ldcs(reinterpret_cast<const float4*>(at + int64_t(kRowsPerPass) * i * ld));
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
                if (inside[i] && s + u < count)
                    acc[i].x += v[u][i].x, acc[i].y += v[u][i].y, acc[i].z += v[u][i].z, acc[i].w += v[u][i].w;
    }
}

// The band block's element: row m, columns n + [0, 4), both in C when `inside`.
struct BandElement {
    int64_t m, n;
    bool inside;
};

__device__ __forceinline__ BandElement band_element(int64_t band, int64_t M, int64_t N) {
    const int tid = int(threadIdx.x);
    BandElement e;
    e.m = band * kRowsPerPass + tid / (kRegion / 4);
    e.n = int64_t(blockIdx.x) * kRegion + 4 * (tid % (kRegion / 4));
    e.inside = e.m < M && e.n < N;
    return e;
}

// Grouped sums (reduce_split_k's `groups`): band block (x, band, g) adds slabs
// [split_k_begin(g, groups, slab_count), split_k_begin(g + 1, ...)) of its band in
// increasing s and leaves the sum in the group's first slab, which no other block reads.
__global__ void __launch_bounds__(kThreads)
    sum_slab_groups_kernel(float* partial, int slab_count, int groups, int64_t slab, int64_t ld, int64_t M, int64_t N) {
    const int g = int(blockIdx.z);
    const int s0 = split_k_begin(g, groups, slab_count), s1 = split_k_begin(g + 1, groups, slab_count);
    const int64_t bands = ceil_div(M, kRowsPerPass);
    for (int64_t band = blockIdx.y; band < bands; band += gridDim.y) {
        const BandElement e = band_element(band, M, N);
        if (!e.inside) continue;
        float* base = partial + e.m * ld + e.n;
        float4 acc[1] = {make_float4(0.f, 0.f, 0.f, 0.f)};
        const bool inside[1] = {true};
        add_slabs<8>(acc, inside, base, slab, ld, s1 - s0, [=](int s) { return s0 + s; });
        *reinterpret_cast<float4*>(base + int64_t(s0) * slab) = acc[0];
    }
}

// The plain reduction (no check, C laid out like the slabs, few regions), in band blocks:
// C = alpha * (P_0 + ... + P_{splits-1}) + beta * C, in increasing s. Never grouped: its
// blocks already spread the slabs over the SMs (grouping first measured 1-2 us slower at
// 256 x 256 x 65536 and 200 x 300 x 30000).
__global__ void __launch_bounds__(kThreads)
    reduce_split_k_bands_kernel(const float* partial, int splits, int64_t slab, int64_t ld, int64_t M, int64_t N,
                                float* C, int64_t ldc, float alpha, float beta, bool c_vec) {
    const int64_t bands = ceil_div(M, kRowsPerPass);
    for (int64_t band = blockIdx.y; band < bands; band += gridDim.y) {
        const BandElement e = band_element(band, M, N);
        if (!e.inside) continue;
        float4 acc[1] = {make_float4(0.f, 0.f, 0.f, 0.f)};
        const bool inside[1] = {true};
        add_slabs<8>(acc, inside, partial + e.m * ld + e.n, slab, ld, splits, [](int s) { return s; });
        const float v[4] = {acc[0].x, acc[0].y, acc[0].z, acc[0].w};
        store_row4(C + e.m * ldc + e.n, v, N - e.n, c_vec, alpha, beta);
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
    const int64_t row_blocks = ceil_div(M, kRegion), regions = row_blocks * ceil_div(N, kRegion);
    const unsigned columns = unsigned(ceil_div(N, kRegion));
    // Band blocks' rows of the grid (each loops over bands past 65535).
    const int64_t bands = ceil_div(M, kRowsPerPass);
    const unsigned band_rows = unsigned(bands < 65535 ? bands : 65535);
    if (!fallback && to_c == SlabsToC::same && regions < kBandsBelowRegions) {
        reduce_split_k_bands_kernel<<<dim3(columns, band_rows), kThreads, 0, stream>>>(
            slabs.partial, slabs.splits, slabs.slab(), slabs.ld, M, N, C, ldc, alpha, beta, c_vec);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        return;
    }
    const int groups = slab_groups(regions, slabs.splits);
    if (groups > 1) {
        sum_slab_groups_kernel<<<dim3(columns, band_rows, unsigned(groups)), kThreads, 0, stream>>>(
            slabs.partial, slabs.splits, groups, slabs.slab(), slabs.ld, M, N);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    }
    const dim3 grid(columns, unsigned(row_blocks < 65535 ? row_blocks : 65535));
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
