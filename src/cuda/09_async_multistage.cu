// Rung 9, multi-stage async copies: the warp-tiled micro-kernel of rung 8 fed by a
// STAGES-deep ring of shared-memory tiles filled with cp.async, so the global loads of
// tile k+STAGES-1 are in flight while tile k is computed and no thread stalls on a
// load it does not need yet. B moves as 16-byte copies; A as 4-byte copies so it can
// land transposed (As[k][m]) for the 16-byte fragment reads. One __syncthreads per
// tile. Blocks are rasterised in groups of 16 tile-rows for L2 reuse.
// Variants (tile BM x BN, BK, warps): 128x128x16 (8x8 per lane), 128x256x16 and
// 256x128x16 (8x16 and 16x8 per lane, one block per SM), 128x128x32, and 128x128x8
// with 4 stages.
// Constraints: M % BM, N % BN, K % BK, no transposes, 16-byte alignment (checked at
// launch); alpha/beta in the epilogue.
#include "cuda/cuda_check.hpp"
#include "cuda/ladder.hpp"
#include "cuda/raster.cuh"
#include "cuda/warp_tile.cuh"

namespace fastgemm {
namespace cuda {

template <class S, int STAGES, int MIN_BLOCKS>
__global__ void __launch_bounds__(S::kThreads, MIN_BLOCKS) async_multistage_kernel(GemmArgs p) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
    const int tiles_m = int(p.M / S::BM), tiles_n = int(p.N / S::BN);
    int tm, tn;
    grouped_tile(blockIdx.x, tiles_m, tiles_n, 16, tm, tn);
    const int64_t m0 = int64_t(tm) * S::BM, n0 = int64_t(tn) * S::BN;
    const float* A = p.A + m0 * p.lda;
    const float* B = p.B + n0;
    const int KT = int(p.K / S::BK);

    // Per-thread source and destination bases, computed once: the copy loop then only
    // adds compile-time offsets and the k0 step (keeps the address registers few).
    constexpr int kARowsPerPass = S::kThreads / S::BK;
    constexpr int kBRowsPerPass = S::kThreads / (S::BN / 4);
    const float* a_src = A + int64_t(tid / S::BK) * p.lda + tid % S::BK;
    const int64_t a_step = int64_t(kARowsPerPass) * p.lda;
    const int a_dst = (tid % S::BK) * S::AS_LD + tid / S::BK;
    const float* b_src = B + int64_t(tid / (S::BN / 4)) * p.ldb + (tid % (S::BN / 4)) * 4;
    const int64_t b_step = int64_t(kBRowsPerPass) * p.ldb;
    const int b_dst = (tid / (S::BN / 4)) * S::BS_LD + (tid % (S::BN / 4)) * 4;

    auto load_tile = [&](int stage, int kt) {
        float* As = smem + stage * S::kStageFloats;
        float* Bs = As + S::BK * S::AS_LD;
        const float* a = a_src + int64_t(kt) * S::BK;
        const float* b = b_src + int64_t(kt) * S::BK * p.ldb;
#pragma unroll
        for (int i = 0; i < S::BM * S::BK / S::kThreads; ++i)  // lanes along k: coalesced
            cp_async_4(As + a_dst + i * kARowsPerPass, a + i * a_step);
#pragma unroll
        for (int i = 0; i < S::BK * S::BN / 4 / S::kThreads; ++i)
            cp_async_16(Bs + b_dst + i * kBRowsPerPass * S::BS_LD, b + i * b_step);
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        cp_async_commit();
    }
    const WarpTilePosition<S> w;
    float acc[S::TM][S::TN] = {};
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile kt visible to all; stage (kt-1) % STAGES free again
        const int next = kt + STAGES - 1;
        if (next < KT) load_tile(next % STAGES, next);
        cp_async_commit();
        const float* As = smem + (kt % STAGES) * S::kStageFloats;
        warp_tile_step<S>(As, As + S::BK * S::AS_LD, w, acc);
    }
    warp_tile_store<S>(p, m0, n0, w, acc);
}

template <class S, int STAGES, int MIN_BLOCKS>
static void launch_async(const GemmArgs& p, cudaStream_t stream, const char* name) {
    require_vector_alignment(p, name, true, true, true);
    auto kernel = async_multistage_kernel<S, STAGES, MIN_BLOCKS>;
    const int smem = STAGES * S::kStageFloats * int(sizeof(float));
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const unsigned blocks = unsigned((p.M / S::BM) * (p.N / S::BN));
    kernel<<<blocks, S::kThreads, smem, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

void launch_async_128x128(const GemmArgs& p, cudaStream_t s, Workspace&) {
    launch_async<WarpTileShape<128, 128, 16, 2, 4>, 3, 2>(p, s, "async_multistage");
}
void launch_async_128x256(const GemmArgs& p, cudaStream_t s, Workspace&) {
    launch_async<WarpTileShape<128, 256, 16, 2, 4>, 3, 1>(p, s, "async_multistage_128x256");
}
void launch_async_256x128(const GemmArgs& p, cudaStream_t s, Workspace&) {
    launch_async<WarpTileShape<256, 128, 16, 4, 2>, 3, 1>(p, s, "async_multistage_256x128");
}
void launch_async_128x128_bk32(const GemmArgs& p, cudaStream_t s, Workspace&) {
    launch_async<WarpTileShape<128, 128, 32, 2, 4>, 3, 2>(p, s, "async_multistage_bk32");
}
void launch_async_128x128_bk8(const GemmArgs& p, cudaStream_t s, Workspace&) {
    launch_async<WarpTileShape<128, 128, 8, 2, 4>, 4, 2>(p, s, "async_multistage_bk8");
}

}  // namespace cuda
}  // namespace fastgemm
