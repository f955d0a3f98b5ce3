// Rung 9, TMA form (Hopper): the multi-stage ring of 09_async_multistage.cu with the
// copies taken off the compute warps. The TMA unit copies whole tiles into a
// STAGES-deep ring of shared-memory stages guarded by mbarriers (full: the bytes
// landed; empty: every warp has read the stage); one lane asks for each copy, so the
// warps issue no copy instructions. Without LOCKSTEP they drift independently within
// the ring; with it they meet at a barrier before each k-tile, which then also stands
// in for the empty barriers (see the k loop). On an sm_90 SM each scheduler issues one
// FFMA per clock for its 32 lanes, so every instruction that is not an FFMA costs an
// FFMA slot: a warp's stream is FFMAs and 16-byte shared loads.
//
// (A separate producer warp would cost registers: ptxas budgets a 9-warp block as 12
// warps, 168 registers per thread, and an 8 x 16 lane tile then spills. So lane 0 of
// warp 0 issues the copy for k-step t + AHEAD at the top of step t; without lockstep,
// AHEAD < STAGES - 1 leaves slack so that it rarely waits for a slower warp to release a
// stage.)
//
// Both operands k-major: the launcher packs A^T (K x M) with a tiled transpose (36-43 us,
// 1.4-1.6% of the GEMM at 4096^3; packed beside the GEMM instead, it gained at most 0.9%
// and made blocks that waited for it far slower: RESULTS.md, ninth session), so a stage
// holds 32 rows of BM m and 32 rows of BN n, and a lane's fragments at one k are float4s
// of 4 consecutive m and 4 consecutive n.
// The reason is the register file, not the loads: read from A as TMA writes it ([m][k],
// float4s along k), the 8 A values a lane uses at one k sit in registers 4 apart, all
// in one register bank, and ptxas's code for that form stalled on operand reads
// ("dispatch stall" 0.37 per issued instruction on the H200, against 0.10 for cuBLAS);
// with float4s along m both operands span all banks (0.13) and the kernel went from
// 0.94x to 1.04x cuBLAS at 8192^3 (benchmarks/RESULTS.md).
//
// ptxas's schedule of the main loop is fragile: code around it that keeps a few more
// registers live (a step offset carried in a variable, a division by KT) made it batch
// each k's six LDS.128 back to back instead of spreading them among the FFMAs, 7% more
// stall cycles in the SASS and 3-12% slower on the H200. Check the
// SASS (cuobjdump -sass) after touching the loop or what surrounds it.
//
// Block: WARPS_M x WARPS_N warps; block tile BM x BN x 32.
// Lane (lm = lane / 4, ln = lane % 4) of a warp whose tile starts at (wm0, wn0) owns
// rows wm0 + 32h + 4lm + [0, 4) (h < TM / 4) and columns wn0 + 16q + 4ln + [0, 4)
// (q < TN / 4). Per k a lane issues TM / 4 + TN / 4 16-byte loads (8 lanes read 128
// contiguous bytes of A, 4 read 64 of B: no bank conflicts) for TM x TN FFMAs.
//
// One tile, or one k-segment of a tile, per block. The one-block-per-SM forms cut the
// last tiles of the grid into k-segments in the same launch (graded_tail.cuh): some of
// the H200's SMs run this 68 KB loop 10-18% slower than the others (instruction fetch),
// and small blocks at the end of the grid let every SM finish at about the same time.
// The 128 x 128 form (two blocks per SM) deals a partial last round out by k-tiles to
// a second kernel instead (stream_k.cuh); see the launchers for when that paid.
//
// Any M, N, K: TMA fills boxes past the edges with zeros and the epilogue checks
// bounds. Needs an sm_90 GPU and 16-byte aligned rows of A^T and B; the launcher packs
// an operand that is not.
#include "cuda/cuda_check.hpp"
#include "cuda/graded_tail.cuh"
#include "cuda/hopper.cuh"
#include "cuda/ladder.hpp"
#include "cuda/operand_prep.cuh"
#include "cuda/raster.cuh"
#include "cuda/stream_k.cuh"
#include "cuda/tma_map.hpp"

namespace fastgemm {
namespace cuda {

// TAIL_PERCENT: the stream-K tail takes a last round of tiles filled to at most this
// percentage of the blocks resident at once (0: tiles always whole).
// LOCKSTEP: the block's warps meet at a named barrier before each k-tile (see the kernel).
template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int STAGES_, int AHEAD_, int MIN_BLOCKS_, int TAIL_PERCENT_,
          bool LOCKSTEP_>
struct TmaFfmaConfig {
    static constexpr int BM = BM_, BN = BN_, BK = 32, TAIL_PERCENT = TAIL_PERCENT_;
    static constexpr bool LOCKSTEP = LOCKSTEP_;
    static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
    static constexpr int STAGES = STAGES_, AHEAD = AHEAD_, MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr int kWarps = WARPS_M * WARPS_N;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int TM = WM / 8, TN = WN / 4;  // outputs per lane: TM x TN
    static constexpr int A_BYTES = BK * BM * 4, B_BYTES = BK * BN * 4;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static constexpr int GROUP = 16;  // tile-rows per rasterisation group
    static_assert(WM % 32 == 0 && WN % 16 == 0, "warp tile must be a multiple of 32 x 16");
    static_assert(BM <= 256 && BN <= 256, "a TMA box spans at most 256 columns");
    static_assert(AHEAD >= 1 && AHEAD < STAGES, "the copy for step t + AHEAD goes into a stage other than t's");
    static_assert(MIN_BLOCKS * SMEM_BYTES <= 227 * 1024, "over the sm_90 shared memory per SM");
};

// v.x, v.y, v.z or v.w for an index that is a compile-time constant after unrolling.
__device__ __forceinline__ float component(const float4& v, int e) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

// acc += a b^T at one k. Written as pairs of columns with the rows inside: ptxas
// schedules the FFMAs its own way whatever the source order, but the order changes its
// register assignment, and this one measured best of six, tied with 2 x 2 blocks
// (RESULTS.md: 1.04x cuBLAS at 8192^3 against 1.02x for rows outside).
template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN]) {
#pragma unroll
    for (int j = 0; j < TN; j += 2)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            acc[i][j + 1] = fmaf(a[i], b[j + 1], acc[i][j + 1]);
        }
}

// One block per unit of block_unit (graded_tail.cuh): a whole tile of the grouped
// rasterisation, or one k-segment of one of the last tiles.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
    async_tma_kernel(const __grid_constant__ CUtensorMap map_at, const __grid_constant__ CUtensorMap map_b,
                     GemmArgs p, GradedTail graded) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int TM = Cfg::TM, TN = Cfg::TN;
    extern __shared__ uint8_t smem_raw[];
    __shared__ int last_segment;  // this block completes its split tile
    uint8_t* smem = align_smem_1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.M, BM)), tiles_n = int(ceil_div(p.N, BN));
    const BlockUnit u = block_unit(graded, int(blockIdx.x), int(ceil_div(p.K, BK)));
    int tm, tn;
    grouped_tile(u.tile, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int KT = u.ke - u.kb;  // this block's k-tiles: u.kb + [0, KT)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // k-tile t goes to stage t % STAGES once every warp has released the k-tile that
    // was there (t - STAGES).
    auto issue = [&](int t) {
        const int s = t % STAGES;
        if (!Cfg::LOCKSTEP && t >= STAGES) mbar_wait(&empty[s], ((t / STAGES) - 1) & 1);
        uint8_t* st = smem + s * Cfg::STAGE_BYTES;
        mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
        tma_load_2d(st, &map_at, m0, (u.kb + t) * BK, &full[s]);
        tma_load_2d(st + Cfg::A_BYTES, &map_b, n0, (u.kb + t) * BK, &full[s]);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            if (!Cfg::LOCKSTEP) mbar_init(&empty[s], Cfg::kWarps);  // lockstep: the barrier stands in
        }
        mbar_fence_init();
        for (int t = 0; t < Cfg::AHEAD && t < KT; ++t) issue(t);
    }
    __syncthreads();

    const int wm0 = (warp % Cfg::WARPS_M) * Cfg::WM, wn0 = (warp / Cfg::WARPS_M) * Cfg::WN;
    const int lm = lane >> 2, ln = lane & 3;
    const int a_col = wm0 + 4 * lm, b_col = wn0 + 4 * ln;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int kt = 0; kt < KT; ++kt) {
        // Lockstep: the warps start each k-tile together, so that they run the same
        // stretch of the 68 KB loop at the same time and fetch its instructions once
        // instead of up to eight times (without it they drift apart by up to the ring's
        // slack). Measured on the H200: 0.6-1.4% faster at 4096^3 and 8192^3.
        // Each warp first looks whether stage kt has landed (it nearly always has), so
        // that the look's answer (~50 cycles) arrives while the warp waits at the
        // barrier instead of after it, where every warp stalled on it once per k-tile.
        bool landed = false;
        if (Cfg::LOCKSTEP) {
            landed = mbar_test(&full[kt % STAGES], (kt / STAGES) & 1);
            asm volatile("bar.sync 1, %0;" ::"n"(Cfg::kThreads));
        }
        // Lane 0 of warp 0 is also the copy engine's driver: at k-tile kt it asks for
        // k-tile kt + AHEAD, into the stage of k-tile kt + AHEAD - STAGES. With lockstep
        // every warp has passed the barrier above, so it has finished k-tile kt - 1 and
        // all before it: no empty barrier needed (each k-tile's wait on one and arrival
        // at one cost 0.7-0.9% of the time at 4096^3 and 0.3-0.9% at 8192^3 on the H200).
        // Without lockstep the issue waits until every warp has released that stage.
        if (threadIdx.x == 0 && kt + Cfg::AHEAD < KT) issue(kt + Cfg::AHEAD);
        const int s = kt % STAGES;
        const uint32_t parity = (kt / STAGES) & 1;
        // The spin for a stage that had not landed stays here, right before the loads:
        // with every warp's wait moved away from this spot (before the barrier together
        // with the stage's first loads, or left to thread 0 alone), ptxas batched each
        // k's LDS.128 back to back (RESULTS.md, eleventh session).
        if (Cfg::LOCKSTEP) {
            if (!landed)
                while (!mbar_test(&full[s], parity)) {
                }
        } else {
            mbar_wait(&full[s], parity);
        }
        const float* As = reinterpret_cast<const float*>(smem + s * Cfg::STAGE_BYTES);
        const float* Bs = As + BM * BK;
        // Fully unrolled: 4096 FFMAs per k-tile for 8 x 16. (Unrolling 8 or 16 k measured
        // 2.6% and 3.6% slower at 8192^3, and loops of 8 or 16 k that load k + 1's
        // fragments during k's FFMAs 9-12%: ptxas then rotates the accumulators through
        // registers and sinks loads next to their use. RESULTS.md, third and ninth sessions.)
        // The price of 68 KB: the loop streams its instructions, and both warps of a
        // scheduler stall a couple of cycles at the start of every 128-byte line (0.26 "no
        // instruction" stalls per issue); the rolled loops fetch without stalling but issue
        // 6-7 points less often (load latency, fixed waits, banks: RESULTS.md, tenth session).
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a4[TM / 4], b4[TN / 4];
#pragma unroll
            for (int h = 0; h < TM / 4; ++h) a4[h] = *reinterpret_cast<const float4*>(As + k * BM + a_col + 32 * h);
#pragma unroll
            for (int q = 0; q < TN / 4; ++q) b4[q] = *reinterpret_cast<const float4*>(Bs + k * BN + b_col + 16 * q);
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = component(a4[i / 4], i % 4);
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = component(b4[j / 4], j % 4);
            outer_product(acc, a, b);
        }
        if (!Cfg::LOCKSTEP) {
            // All of this warp's reads of the stage are done before its one arrival.
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
        }
    }

    // The C epilogue, or for a segment the same stores into its partial tile (row-major
    // BM x BN, alpha 1, beta 0): one code path, since a separate one for the partials
    // changed ptxas's schedule of the k loop.
    GemmArgs out = p;
    if (u.nseg > 1) {
        // Addressed as C's rows m0 + [0, BM) and columns n0 + [0, BN) with ldc = BN:
        // the partial slot starts m0 * BN + n0 floats past out.C.
        out.C = graded.partial + (int64_t(u.first_slot) + u.seg) * (BM * BN) - (int64_t(m0) * BN + n0);
        out.ldc = BN, out.M = m0 + BM, out.N = n0 + BN, out.alpha = 1.0f, out.beta = 0.0f;
    }
    const bool c_vec = out.ldc % 4 == 0 && (reinterpret_cast<uintptr_t>(out.C) & 15) == 0;
    if constexpr (Cfg::MIN_BLOCKS == 1) {
        // Through shared memory: each lane writes its TM x TN accumulators into a
        // row-major image of the tile in the ring, which every warp has finished with;
        // then the block stores the image row by row, a warp covering 512 contiguous
        // bytes of C per 16-byte store (from registers, a warp's store covers 8 rows x 64
        // bytes). Rows are padded by 4 floats, so the two rows that a quarter-warp writes
        // fall in different banks. On the H200 this took 37 us off 4096^3 (1.4%) and 0.4%
        // off 8192^3, where a tile or segment ends ~4 and ~16 times per SM. The two-block
        // form keeps the stores from registers: capped at 128 registers, its k loop lost
        // 7-8% with this epilogue (RESULTS.md, seventh session).
        constexpr int LD_IMG = BN + 4;
        static_assert(BM * LD_IMG * 4 <= STAGES * Cfg::STAGE_BYTES, "the tile image must fit in the ring");
        __syncthreads();  // every warp is past its last k-tile: the ring is free
        float* img = reinterpret_cast<float*>(smem);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int q = 0; q < TN / 4; ++q)
                *reinterpret_cast<float4*>(img + (a_col + 32 * (i / 4) + i % 4) * LD_IMG + b_col + 16 * q) =
                    make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
        __syncthreads();
        for (int idx = threadIdx.x; idx < BM * BN / 4; idx += Cfg::kThreads) {
            const int r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
            const int64_t m = int64_t(m0) + r, n = int64_t(n0) + c;
            if (m >= out.M) break;  // rows only grow with idx
            store_c4_clipped(out, m, n, *reinterpret_cast<const float4*>(img + r * LD_IMG + c), c_vec);
        }
    } else {
        const int64_t om0 = m0, on0 = n0;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int64_t m = om0 + a_col + 32 * (i / 4) + i % 4;
            if (m >= out.M) continue;
#pragma unroll
            for (int q = 0; q < TN / 4; ++q)
                store_c4_clipped(out, m, on0 + b_col + 16 * q,
                                 make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]),
                                 c_vec);
        }
    }
    if (u.nseg > 1)  // the block that completes the tile adds its partials in segment order
        close_segment<BM, BN, Cfg::kThreads>(&graded.counters[u.split], u.nseg, last_segment,
                                             graded.partial + int64_t(u.first_slot) * (BM * BN), p.C, p.ldc, p.M, p.N,
                                             p.alpha, p.beta, m0, n0);
#endif
}

// The stream-K tail (stream_k.cuh), launched after the whole tiles on the same stream.
// A block's range of the tail is shorter than KT steps (the tail has fewer tiles than
// there are blocks), so it spans at most two tiles: at most two segments, each k-tiles
// [kb, kb + n) of one tile, parked as a partial tile. Each segment runs exactly the
// whole-tile kernel's loop from step 0 (the ring drains and its barriers are set up
// afresh in between): with the ring's step offset carried across segments instead,
// ptxas scheduled the loop differently (7% more stall cycles per k-tile in the SASS).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
    async_tma_tail_kernel(const __grid_constant__ CUtensorMap map_at, const __grid_constant__ CUtensorMap map_b,
                          GemmArgs p, TailSplit ts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int TM = Cfg::TM, TN = Cfg::TN, TILE = BM * BN;
    extern __shared__ uint8_t smem_raw[];
    __shared__ TailSegment segments[2];
    __shared__ int segment_count, last_segment;  // last_segment: this block completes the tile
    uint8_t* smem = align_smem_1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.M, BM)), tiles_n = int(ceil_div(p.N, BN));
    const int KT = int(ceil_div(p.K, BK));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        TailWalker walk(ts, KT);
        int c = 0;
        while (c < 2 && walk.next(segments[c])) ++c;
        segment_count = c;
    }
    const int wm0 = (warp % Cfg::WARPS_M) * Cfg::WM, wn0 = (warp / Cfg::WARPS_M) * Cfg::WN;
    const int lm = lane >> 2, ln = lane & 3;
    const int a_col = wm0 + 4 * lm, b_col = wn0 + 4 * ln;
    float acc[TM][TN];

    for (int g = 0; g < 2; ++g) {
        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; ++s) {
                if (g > 0) mbar_inval(&full[s]), mbar_inval(&empty[s]);
                mbar_init(&full[s], 1);
                mbar_init(&empty[s], Cfg::kWarps);
            }
            mbar_fence_init();
        }
        __syncthreads();
        if (g >= segment_count) break;
        int tm, tn;
        grouped_tile(ts.full_tiles + segments[g].r, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
        const int m0 = tm * BM, n0 = tn * BN, kb = segments[g].kb, n = segments[g].ke - kb;
        auto issue = [&](int t) {
            const int s = t % STAGES;
            if (t >= STAGES) mbar_wait(&empty[s], ((t / STAGES) - 1) & 1);
            uint8_t* st = smem + s * Cfg::STAGE_BYTES;
            mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
            tma_load_2d(st, &map_at, m0, (kb + t) * BK, &full[s]);
            tma_load_2d(st + Cfg::A_BYTES, &map_b, n0, (kb + t) * BK, &full[s]);
        };
        if (threadIdx.x == 0)
            for (int t = 0; t < Cfg::AHEAD && t < n; ++t) issue(t);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
        // The whole-tile kernel's loop, written out again on purpose: moving it into a
        // shared __forceinline__ function changed ptxas's allocation of the whole-tile
        // kernel (171 registers instead of 181, another schedule). Keep the two alike.
        for (int t = 0; t < n; ++t) {
            if (threadIdx.x == 0 && t + Cfg::AHEAD < n) issue(t + Cfg::AHEAD);
            const int s = t % STAGES;
            mbar_wait(&full[s], (t / STAGES) & 1);
            const float* As = reinterpret_cast<const float*>(smem + s * Cfg::STAGE_BYTES);
            const float* Bs = As + BM * BK;
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                float4 a4[TM / 4], b4[TN / 4];
#pragma unroll
                for (int h = 0; h < TM / 4; ++h) a4[h] = *reinterpret_cast<const float4*>(As + k * BM + a_col + 32 * h);
#pragma unroll
                for (int q = 0; q < TN / 4; ++q)
                    b4[q] = *reinterpret_cast<const float4*>(Bs + k * BN + b_col + 16 * q);
                float a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; ++i) a[i] = component(a4[i / 4], i % 4);
#pragma unroll
                for (int j = 0; j < TN; ++j) b[j] = component(b4[j / 4], j % 4);
                outer_product(acc, a, b);
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
        }
        // Park the partial tile (row-major BM x BN, rows and columns as in the whole-tile
        // epilogue); the block that completes the tile adds the partials in segment order.
        const TailSegment u = segments[g];
        const float* first = ts.partial + int64_t(u.r) * ts.max_segments * TILE;
        float* part = ts.partial + (int64_t(u.r) * ts.max_segments + u.seg) * TILE;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int q = 0; q < TN / 4; ++q)
                *reinterpret_cast<float4*>(part + (a_col + 32 * (i / 4) + i % 4) * BN + b_col + 16 * q) =
                    make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
        close_segment<BM, BN, Cfg::kThreads>(&ts.counters[u.r], u.nseg, last_segment, first, p.C, p.ldc, p.M, p.N,
                                             p.alpha, p.beta, m0, n0);
        // last_segment is rewritten only after the next segment's barriers.
    }
#endif
}

template <class Cfg>
static void launch_async_tma(const GemmArgs& p, cudaStream_t stream, Workspace& ws, const char* name) {
    if (!device_is_sm90()) throw ConstraintError(std::string(name) + " needs an sm_90 GPU (Hopper): it uses TMA");
    if (p.M == 0 || p.N == 0) return;
    // A^T (K x M) is op(A) read transposed: packed unless A is stored that way already.
    int64_t lda = p.lda, ldb = p.ldb;
    const float* at = tma_readable(p.A, lda, !p.trans_a, p.K, p.M, ws, 0, stream);
    const float* b = tma_readable(p.B, ldb, p.trans_b, p.K, p.N, ws, 2, stream);
    const CUtensorMap map_at = make_tma_map_2d(at, p.K, p.M, lda, Cfg::BK, Cfg::BM, TmaLayout::dense);
    const CUtensorMap map_b = make_tma_map_2d(b, p.K, p.N, ldb, Cfg::BK, Cfg::BN, TmaLayout::dense);
    auto kernel = async_tma_kernel<Cfg>;
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
    const int64_t tiles = ceil_div(p.M, Cfg::BM) * ceil_div(p.N, Cfg::BN), KT = ceil_div(p.K, Cfg::BK);
    int dev = 0, sms = 0, per_sm = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    FASTGEMM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cfg::kThreads, Cfg::SMEM_BYTES));
    const int64_t round = int64_t(sms) * (per_sm > 0 ? per_sm : 1);
    if constexpr (Cfg::TAIL_PERCENT == 0) {
        // Segments of at least 8 k-tiles: a shorter one would spend more on filling the
        // ring and parking its partial tile than it computes.
        const GradedTail graded = plan_graded_tail(tiles, round, KT, 8, size_t(Cfg::BM) * Cfg::BN, ws, stream);
        kernel<<<unsigned(graded_tail_blocks(graded)), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p,
                                                                                                  graded);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    } else {
        const TailSplit ts = plan_stream_k_tail(tiles, round, KT, round * Cfg::TAIL_PERCENT / 100,
                                                size_t(Cfg::BM) * Cfg::BN, true, ws, stream);
        GradedTail whole_tiles;
        whole_tiles.whole = ts.full_tiles;
        kernel<<<unsigned(ts.full_tiles), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, whole_tiles);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        if (ts.tail_tiles > 0) {
            auto tail_kernel = async_tma_tail_kernel<Cfg>;
            FASTGEMM_CUDA_CHECK(
                cudaFuncSetAttribute(tail_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
            tail_kernel<<<unsigned(round), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, ts);
            FASTGEMM_CUDA_CHECK_LAUNCH();
        }
    }
}

// The one-block-per-SM forms end in a graded tail (same launch). Against the same
// kernel with whole tiles, same run on the H200 (RESULTS.md, seventh session, call 6;
// 16 + 16 tiles cut, as graded_tail.cuh now picks at 4096^3): 4096^3 2.593 vs 2.671 ms,
// 5120^3 5.014 vs 5.559, 3072^3 1.146 vs 1.456, 8192^3 20.23 vs 20.35 (20.13 with the
// 66 + 33 cut that graded_tail.cuh's rule comes close to there); earlier, 1024^3 0.088
// vs 0.193 ms (split-K). The stream-K tail as a second kernel (stream_k.cuh) had
// measured slower than whole tiles for these forms at every size tried (2048-8192^3): it
// starts only after the last whole tile, its blocks each get the same share whatever
// their SM's speed, and it stalled on instruction fetch (0.84 "no instruction" per issue
// against 0.29). With two blocks per SM that is hidden, and it paid where the last round was at
// most three-quarters full (8192^3: 1.025x -> 1.044-1.051x cuBLAS; 6144^3: 1.019x ->
// 1.034x) but not at 4096^3 (232 of 264: 0.994x whole, 0.987-1.001x split).
void launch_async_tma_128x256(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<128, 256, 2, 4, 4, 2, 1, 0, true>>(p, s, ws, "async_tma");
}
void launch_async_tma_256x128(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<256, 128, 4, 2, 4, 2, 1, 0, true>>(p, s, ws, "async_tma_256x128");
}
void launch_async_tma_128x128(const GemmArgs& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<TmaFfmaConfig<128, 128, 2, 4, 3, 2, 2, 75, false>>(p, s, ws, "async_tma_128x128");
}

}  // namespace cuda
}  // namespace fastgemm
