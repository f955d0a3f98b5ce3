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
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/ladder.hpp"
#include "cuda/common/raster.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/warp_tile.cuh"

namespace fastgemm {
namespace cuda {

namespace {

template <class S>
__global__ void __launch_bounds__(S::kThreads, S::MIN_BLOCKS) async_multistage_kernel(DeviceOperands p) {
    constexpr int STAGES = S::STAGES;
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
    const int tiles_m = int(p.problem.M / S::BM), tiles_n = int(p.problem.N / S::BN);
    int tm, tn;
    grouped_tile(blockIdx.x, tiles_m, tiles_n, 16, tm, tn);
    const int64_t m0 = int64_t(tm) * S::BM, n0 = int64_t(tn) * S::BN;
    const float* A = p.A + m0 * p.problem.lda;
    const float* B = p.B + n0;
    const int KT = int(p.problem.K / S::BK);

    // Per-thread source and destination bases, computed once: the copy loop then only
    // adds compile-time offsets and the k0 step (keeps the address registers few).
    constexpr int kARowsPerPass = S::kThreads / S::BK;
    constexpr int kBRowsPerPass = S::kThreads / (S::BN / 4);
    const float* a_src = A + int64_t(tid / S::BK) * p.problem.lda + tid % S::BK;
    const int64_t a_step = int64_t(kARowsPerPass) * p.problem.lda;
    const int a_dst = (tid % S::BK) * S::AS_LD + tid / S::BK;
    const float* b_src = B + int64_t(tid / (S::BN / 4)) * p.problem.ldb + (tid % (S::BN / 4)) * 4;
    const int64_t b_step = int64_t(kBRowsPerPass) * p.problem.ldb;
    const int b_dst = (tid / (S::BN / 4)) * S::BS_LD + (tid % (S::BN / 4)) * 4;

    auto load_tile = [&](int stage, int kt) {
        float* As = smem + stage * S::kStageFloats;
        float* Bs = As + S::BK * S::AS_LD;
        const float* a = a_src + int64_t(kt) * S::BK;
        const float* b = b_src + int64_t(kt) * S::BK * p.problem.ldb;
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

template <class S>
void launch_multistage(const DeviceOperands& p, cudaStream_t stream, const char* name) {
    const Problem& q = p.problem;
    require_vector_alignment(p, name, true, true, true);
    auto kernel = async_multistage_kernel<S>;
    const int smem = S::STAGES * S::kStageFloats * int(sizeof(float));
    allow_dynamic_smem(kernel, smem);
    const unsigned blocks = unsigned((q.M / S::BM) * (q.N / S::BN));
    kernel<<<blocks, S::kThreads, smem, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

// The variants: block tile, warps along m and n, ring depth, and the blocks per SM that
// __launch_bounds__ budgets registers for.
struct Multistage128x128 {
    static constexpr int BM = 128, BN = 128, BK = 16, WARPS_M = 2, WARPS_N = 4, STAGES = 3, MIN_BLOCKS = 2;
};
struct Multistage128x256 {
    static constexpr int BM = 128, BN = 256, BK = 16, WARPS_M = 2, WARPS_N = 4, STAGES = 3, MIN_BLOCKS = 1;
};
struct Multistage256x128 {
    static constexpr int BM = 256, BN = 128, BK = 16, WARPS_M = 4, WARPS_N = 2, STAGES = 3, MIN_BLOCKS = 1;
};
struct Multistage128x128Bk32 {
    static constexpr int BM = 128, BN = 128, BK = 32, WARPS_M = 2, WARPS_N = 4, STAGES = 3, MIN_BLOCKS = 2;
};
struct Multistage128x128Bk8 {
    static constexpr int BM = 128, BN = 128, BK = 8, WARPS_M = 2, WARPS_N = 4, STAGES = 4, MIN_BLOCKS = 2;
};

}  // namespace

void launch_async_multistage_128x128(const DeviceOperands& p, cudaStream_t s, Workspace&) {
    launch_multistage<WarpTileShape<Multistage128x128>>(p, s, "async_multistage_128x128");
}
void launch_async_multistage_128x256(const DeviceOperands& p, cudaStream_t s, Workspace&) {
    launch_multistage<WarpTileShape<Multistage128x256>>(p, s, "async_multistage_128x256");
}
void launch_async_multistage_256x128(const DeviceOperands& p, cudaStream_t s, Workspace&) {
    launch_multistage<WarpTileShape<Multistage256x128>>(p, s, "async_multistage_256x128");
}
void launch_async_multistage_128x128_bk32(const DeviceOperands& p, cudaStream_t s, Workspace&) {
    launch_multistage<WarpTileShape<Multistage128x128Bk32>>(p, s, "async_multistage_128x128_bk32");
}
void launch_async_multistage_128x128_bk8(const DeviceOperands& p, cudaStream_t s, Workspace&) {
    launch_multistage<WarpTileShape<Multistage128x128Bk8>>(p, s, "async_multistage_128x128_bk8");
}

}  // namespace cuda
}  // namespace fastgemm
