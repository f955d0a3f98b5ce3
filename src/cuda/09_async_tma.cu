// Rung 9, TMA form (Hopper): the multi-stage ring of 09_async_multistage.cu with the
// copies taken off the compute warps. The TMA unit copies whole tiles into a
// STAGES-deep ring of shared-memory stages guarded by mbarriers (full: the bytes
// landed; empty: every warp has read the stage); one lane asks for each copy, so the
// warps issue no copy instructions, wait on no block-wide barrier, and drift
// independently within the ring. On an sm_90 SM each scheduler issues one FFMA per
// clock for its 32 lanes, so every instruction that is not an FFMA costs an FFMA
// slot: a warp's stream is FFMAs and 16-byte shared loads.
//
// (A separate producer warp would cost registers: ptxas budgets a 9-warp block as 12
// warps, 168 registers per thread, and an 8 x 16 lane tile then spills. So lane 0 of
// warp 0 issues the copy for tile k + AHEAD at the top of tile k; AHEAD < STAGES - 1
// leaves slack so that it rarely waits for a slower warp to release a stage.)
//
// Block: WARPS_M x WARPS_N warps; block tile BM x BN x 32.
// Lane (lm = lane / 4, ln = lane % 4) of a warp whose tile starts at (wm0, wn0) owns
// rows wm0 + 8i + lm (i < TM) and columns wn0 + 16s + 4ln + [0, 4) (s < TN / 4).
//
// Shared layout, both as TMA writes it (no transposing copy):
//   A tile: BM rows of 32 k (128 bytes), 128-byte swizzle: the 16-byte chunk c of row r
//     sits at chunk c ^ (r % 8). A lane reads A[m][4g .. 4g + 3] as one float4 per row
//     and uses it for 4 k steps; the 8 rows a warp reads together are consecutive, so
//     the swizzle puts their chunks in 8 different bank groups (no conflicts), and
//     each row is broadcast to the 4 lanes sharing it.
//   B tile: 32 rows of BN n, dense. Per k a lane reads TN / 4 float4s; the warp's 4
//     distinct float4s per read are 64 contiguous bytes.
// Per 4 k a lane issues TM + TN 16-byte loads for 4 TM TN FFMAs (8 x 16: 24 loads per
// 512 FFMAs).
//
// Any M, N, K: TMA fills boxes past the edges with zeros and the epilogue checks
// bounds. Needs an sm_90 GPU and 16-byte aligned, untransposed operand rows; the
// launcher packs an operand that is not.
#include "cuda/cuda_check.hpp"
#include "cuda/hopper.cuh"
#include "cuda/ladder.hpp"
#include "cuda/operand_prep.cuh"
#include "cuda/raster.cuh"
#include "cuda/tma_map.hpp"

namespace fastgemm {
namespace cuda {

template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int STAGES_, int AHEAD_, int MIN_BLOCKS_>
struct TmaFfmaConfig {
    static constexpr int BM = BM_, BN = BN_, BK = 32;
    static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
    static constexpr int STAGES = STAGES_, AHEAD = AHEAD_, MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr int kWarps = WARPS_M * WARPS_N;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int TM = WM / 8, TN = WN / 4;  // outputs per lane: TM x TN
    static constexpr int A_BYTES = BM * BK * 4, B_BYTES = BK * BN * 4;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static constexpr int GROUP = 16;  // tile-rows per rasterisation group
    static_assert(WM % 8 == 0 && WN % 16 == 0, "warp tile must be a multiple of 8 x 16");
    static_assert(BM <= 256 && BN <= 256, "a TMA box spans at most 256 rows / columns");
    static_assert(AHEAD >= 1 && AHEAD < STAGES, "the copy for tile k + AHEAD goes into a stage other than k's");
    static_assert(MIN_BLOCKS * SMEM_BYTES <= 227 * 1024, "over the sm_90 shared memory per SM");
};

// v.x, v.y, v.z or v.w for a k that is a compile-time constant after unrolling.
__device__ __forceinline__ float component(const float4& v, int k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
    async_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     GemmArgs p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int TM = Cfg::TM, TN = Cfg::TN;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = align_smem_1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.M, BM)), tiles_n = int(ceil_div(p.N, BN));
    int tm, tn;
    grouped_tile(blockIdx.x, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int KT = int(ceil_div(p.K, BK));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // Tile t goes to stage t % STAGES once every warp has released the tile that was
    // there (t - STAGES).
    auto issue = [&](int t) {
        const int s = t % STAGES;
        if (t >= STAGES) mbar_wait(&empty[s], ((t / STAGES) - 1) & 1);
        uint8_t* st = smem + s * Cfg::STAGE_BYTES;
        mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
        tma_load_2d(st, &map_a, t * BK, m0, &full[s]);
        tma_load_2d(st + Cfg::A_BYTES, &map_b, n0, t * BK, &full[s]);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], Cfg::kWarps);
        }
        mbar_fence_init();
        for (int t = 0; t < Cfg::AHEAD && t < KT; ++t) issue(t);
    }
    __syncthreads();

    const int wm0 = (warp % Cfg::WARPS_M) * Cfg::WM, wn0 = (warp / Cfg::WARPS_M) * Cfg::WN;
    const int lm = lane >> 2, ln = lane & 3;
    const int a_row = (wm0 + lm) * BK;  // float offset of this lane's first A row
    const int b_col = wn0 + 4 * ln;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int kt = 0; kt < KT; ++kt) {
        // Lane 0 of warp 0 is also the copy engine's driver: at tile kt it asks for tile
        // kt + AHEAD, whose stage held tile kt + AHEAD - STAGES (released by every warp
        // by now unless one lags that far behind).
        if (threadIdx.x == 0 && kt + Cfg::AHEAD < KT) issue(kt + Cfg::AHEAD);
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        const float* As = reinterpret_cast<const float*>(smem + s * Cfg::STAGE_BYTES);
        const float* Bs = As + BM * BK;
        // Fully unrolled: 4096 FFMAs per k-tile for 8 x 16. (Unrolling 1 or 2 groups of 4 k
        // measured 2-6% slower on the H200: benchmarks/RESULTS.md.)
#pragma unroll
        for (int g = 0; g < BK / 4; ++g) {
            // Row wm0 + 8i + lm has row % 8 == lm: its chunk g sits at chunk g ^ lm.
            const int chunk = 4 * (g ^ lm);
            float4 a[TM];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(As + a_row + 8 * i * BK + chunk);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float4 b[TN / 4];
#pragma unroll
                for (int q = 0; q < TN / 4; ++q)
                    b[q] = *reinterpret_cast<const float4*>(Bs + (4 * g + kk) * BN + b_col + 16 * q);
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const float ak = component(a[i], kk);
#pragma unroll
                    for (int q = 0; q < TN / 4; ++q) {
                        acc[i][4 * q + 0] = fmaf(ak, b[q].x, acc[i][4 * q + 0]);
                        acc[i][4 * q + 1] = fmaf(ak, b[q].y, acc[i][4 * q + 1]);
                        acc[i][4 * q + 2] = fmaf(ak, b[q].z, acc[i][4 * q + 2]);
                        acc[i][4 * q + 3] = fmaf(ak, b[q].w, acc[i][4 * q + 3]);
                    }
                }
            }
        }
        // All of this warp's reads of the stage are done before its one arrival.
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
    }

    const bool c_vec = p.ldc % 4 == 0 && (reinterpret_cast<uintptr_t>(p.C) & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int64_t m = int64_t(m0) + wm0 + 8 * i + lm;
        if (m >= p.M) continue;
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            const int64_t n = int64_t(n0) + b_col + 16 * q;
            if (c_vec && n + 4 <= p.N) {
                store_c4(p, m, n, make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]));
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (n + e < p.N) store_c(p, m, n + e, acc[i][4 * q + e]);
            }
        }
    }
#endif
}

template <class Cfg>
static void launch_async_tma(const GemmArgs& p, cudaStream_t stream, Workspace& ws, const char* name) {
    if (!device_is_sm90()) throw ConstraintError(std::string(name) + " needs an sm_90 GPU (Hopper): it uses TMA");
    if (p.M == 0 || p.N == 0) return;
    int64_t lda = p.lda, ldb = p.ldb;
    const float* a = tma_readable(p.A, lda, p.trans_a, p.M, p.K, ws, 0, stream);
    const float* b = tma_readable(p.B, ldb, p.trans_b, p.K, p.N, ws, 2, stream);
    const CUtensorMap map_a = make_tma_map_2d(a, p.M, p.K, lda, Cfg::BM, Cfg::BK, TmaLayout::swizzle128);
    const CUtensorMap map_b = make_tma_map_2d(b, p.K, p.N, ldb, Cfg::BK, Cfg::BN, TmaLayout::dense);
    auto kernel = async_tma_kernel<Cfg>;
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
    const unsigned blocks = unsigned(ceil_div(p.M, Cfg::BM) * ceil_div(p.N, Cfg::BN));
    kernel<<<blocks, Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_a, map_b, p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

void launch_async_tma_128x256(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<128, 256, 2, 4, 4, 2, 1>>(p, s, ws, "async_tma");
}
void launch_async_tma_256x128(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<256, 128, 4, 2, 4, 2, 1>>(p, s, ws, "async_tma_256x128");
}
void launch_async_tma_128x128(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<128, 128, 2, 4, 3, 2, 2>>(p, s, ws, "async_tma_128x128");
}

}  // namespace cuda
}  // namespace fastgemm
