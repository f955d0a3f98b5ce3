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

// One block per 64 x 64 region of C. Thread t owns columns n0 + 4 (t % 16) + [0, 4) of
// rows m0 + t / 16 + 16 i (i < 4): a warp reads two 256-byte row segments per slab, and
// the four rows' loads of a slab are in flight together. For every element the slabs are
// added in increasing s, one chain of adds per element: the order never depends on timing.
template <bool Checked>
__global__ void __launch_bounds__(kThreads)
    reduce_split_k_kernel(const float* partial, int splits, int64_t slab, int64_t ld, int64_t M, int64_t N, float* C,
                          int64_t ldc, float alpha, float beta, bool c_vec, int* fallback) {
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
#pragma unroll 2
        for (int s = 0; s < splits; ++s) {
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                if (!inside[i]) continue;
                // Streaming loads: each partial is read once.
                const float4 v = __ldcs(reinterpret_cast<const float4*>(base + int64_t(s) * slab +
                                                                         int64_t(kRowsPerPass) * i * ld));
                acc[i].x += v.x, acc[i].y += v.y, acc[i].z += v.z, acc[i].w += v.w;
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
                    fallback[1 + 2 * k] = int(m0);
                    fallback[2 + 2 * k] = int(blockIdx.x) * kRegion;
                }
                continue;  // uniform: every thread saw the same answer
            }
        }
#pragma unroll
        for (int i = 0; i < kPasses; ++i) {
            const int64_t m = m_first + kRowsPerPass * i;
            if (m >= M || n >= N) continue;
            float* c = C + m * ldc + n;
            const float v[4] = {acc[i].x, acc[i].y, acc[i].z, acc[i].w};
            if (c_vec && n + 4 <= N) {
                float4 r = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(c);
                    r.x += beta * old.x, r.y += beta * old.y, r.z += beta * old.z, r.w += beta * old.w;
                }
                *reinterpret_cast<float4*>(c) = r;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (n + e < N) c[e] = beta == 0.0f ? alpha * v[e] : alpha * v[e] + beta * c[e];
            }
        }
    }
}

int64_t round_up(int64_t v, int64_t q) { return (v + q - 1) / q * q; }

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
                    int* fallback, cudaStream_t stream) {
    if (M == 0 || N == 0) return;
    if (slabs.rows < M || slabs.ld < N || slabs.ld % 4 != 0 || reinterpret_cast<uintptr_t>(slabs.partial) % 16 != 0)
        throw KernelError("reduce_split_k: the partial slabs do not cover C in whole 16-byte rows");
    const bool c_vec = ldc % 4 == 0 && reinterpret_cast<uintptr_t>(C) % 16 == 0;
    const int64_t row_blocks = ceil_div(M, kRegion);
    const dim3 grid(unsigned(ceil_div(N, kRegion)), unsigned(row_blocks < 65535 ? row_blocks : 65535));
    if (fallback)
        reduce_split_k_kernel<true><<<grid, kThreads, 0, stream>>>(slabs.partial, slabs.splits, slabs.slab(), slabs.ld,
                                                                   M, N, C, ldc, alpha, beta, c_vec, fallback);
    else
        reduce_split_k_kernel<false><<<grid, kThreads, 0, stream>>>(slabs.partial, slabs.splits, slabs.slab(),
                                                                    slabs.ld, M, N, C, ldc, alpha, beta, c_vec, nullptr);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
