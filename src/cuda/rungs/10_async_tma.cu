// Rung 10, TMA ring (Hopper), FFMA: the multi-stage ring of rung 9 with the copies
// taken off the compute warps. The TMA unit copies whole k-tiles of A^T and B into a
// STAGES-deep ring of shared-memory stages guarded by mbarriers (full: the bytes
// landed; empty: every warp has read the stage). Lane 0 of warp 0 asks for the copy of
// k-tile t + AHEAD at the top of step t, so the warps issue no copy instructions: a
// warp's stream is FFMAs and 16-byte shared loads (docs/cuda-notes.md#instruction-issue).
// Owns: a block owns one BM x BN tile of C (or one k-segment of it, see below); lane
// (lm = lane / 4, ln = lane % 4) of the warp whose tile starts at (wm0, wn0) owns rows
// wm0 + 32h + 4lm + [0, 4) (h < TM / 4) and columns wn0 + 16q + 4ln + [0, 4) (q < TN / 4).
// Reuses: per k a lane loads TM / 4 + TN / 4 float4s (8 lanes read 128 contiguous
// bytes of A^T, 4 read 64 of B: no bank conflicts) for TM x TN FFMAs.
// Both operands k-major with m (n) contiguous: the launcher packs A^T with a tiled
// transpose, because fragments read along k land in one register bank
// (docs/cuda-notes.md#register-banks). The split-K tiles, whose problems are long in k
// and short in m and n (operand-heavy), also read k-contiguous operands in place where
// the pass would cost more (StageOperand, read_k_contiguous_in_place).
// Tails: the one-block-per-SM variants cut the last tiles of the grid into k-segments
// in the same launch (graded_tail.cuh); the two-blocks-per-SM variant deals a partly
// full last round out by k-tiles to a second kernel (stream_k.cuh).
// Constraints: any M, N, K (TMA fills boxes past the edges with zeros, the epilogue
// checks bounds); an sm_90 GPU; A^T and B rows 16-byte aligned (the launcher packs an
// operand that is not).
// ptxas's schedule of the k loop is fragile: check the SASS (cuobjdump -sass) after
// touching the loop or the code around it (docs/cuda-notes.md#k-loop-schedule).
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/graded_tail.cuh"
#include "cuda/common/hopper.cuh"
#include "cuda/common/launch_checks.hpp"
#include "cuda/ladder.hpp"
#include "cuda/common/operand_prep.cuh"
#include "cuda/common/raster.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/split_k.cuh"
#include "cuda/common/stream_k.cuh"
#include "cuda/common/tma_map.hpp"

namespace fastgemm {
namespace cuda {

namespace {

// How the last round of tiles is cut (see the file header).
enum class TmaTail { graded, stream_k };

// A variant's tile and schedule, named fields; TmaFfmaConfig adds what follows from them.
//   BM, BN               block tile (BK is 32: one 128-byte row of k per box row)
//   WARPS_M, WARPS_N     warps along m and n
//   STAGES, AHEAD        ring depth; copies are asked for AHEAD k-tiles ahead
//   MIN_BLOCKS           blocks per SM that __launch_bounds__ budgets registers for
//   TAIL, TAIL_PERCENT   graded tail, or a stream-K tail for a last round filled to at
//                        most TAIL_PERCENT of the resident blocks
//   LOCKSTEP             the warps meet at a named barrier before each k-tile
//   SPLIT_K              every tile's k range in splits, summed by reduce_split_k
//   READS_K_CONTIGUOUS   also reads an operand stored with k contiguous (A as it is,
//                        op(B) = W^T of a W stored N x K) in place, no transpose pass
struct AsyncTma128x256 {
    static constexpr int BM = 128, BN = 256, WARPS_M = 2, WARPS_N = 4, STAGES = 4, AHEAD = 2, MIN_BLOCKS = 1;
    static constexpr TmaTail TAIL = TmaTail::graded;
    static constexpr int TAIL_PERCENT = 0;
    static constexpr bool LOCKSTEP = true;
    static constexpr bool SPLIT_K = false;
    static constexpr bool READS_K_CONTIGUOUS = false;
};
// The same kernel on few-tile problems: every tile's k range in S splits, summed by
// reduce_split_k (no graded tail), reading k-contiguous operands in place where the
// transpose pass would cost more (split problems are long in k and short in m and n).
struct AsyncTma128x256SplitK : AsyncTma128x256 {
    static constexpr bool SPLIT_K = true;
    static constexpr bool READS_K_CONTIGUOUS = true;
};
// A 128 x 128 split tile for K-heavy problems whose M and N are not multiples of 256
// (384 x 640 x 16384: 15 whole tiles where 128 x 256 computes 18 with a half-empty
// column). One block per SM and 8 x 8 per lane like the thin tiles.
struct AsyncTma128x128SplitK : AsyncTma128x256SplitK {
    static constexpr int BN = 128;
};
// Thin tiles for problems with one short side (a small batch through a Linear layer,
// a tall matrix times a few columns): a 128-row tile at M = 64 would do twice the work
// it keeps. Eight warps along the long side, k split as above. These problems are
// mostly operand: a transpose pass over W (N x K, the Linear layout) or over a
// row-major A took a third of the time at 64 x 14336 x 4096, so they read either
// layout in place.
struct AsyncTma64x256SplitK {
    static constexpr int BM = 64, BN = 256, WARPS_M = 1, WARPS_N = 8, STAGES = 4, AHEAD = 2, MIN_BLOCKS = 1;
    static constexpr TmaTail TAIL = TmaTail::graded;
    static constexpr int TAIL_PERCENT = 0;
    static constexpr bool LOCKSTEP = true;
    static constexpr bool SPLIT_K = true;
    static constexpr bool READS_K_CONTIGUOUS = true;
};
struct AsyncTma256x64SplitK : AsyncTma64x256SplitK {
    static constexpr int BM = 256, BN = 64, WARPS_M = 8, WARPS_N = 1;
};
struct AsyncTma256x128 {
    static constexpr int BM = 256, BN = 128, WARPS_M = 4, WARPS_N = 2, STAGES = 4, AHEAD = 2, MIN_BLOCKS = 1;
    static constexpr TmaTail TAIL = TmaTail::graded;
    static constexpr int TAIL_PERCENT = 0;
    static constexpr bool LOCKSTEP = true;
    static constexpr bool SPLIT_K = false;
    static constexpr bool READS_K_CONTIGUOUS = false;
};
struct AsyncTma128x128 {
    static constexpr int BM = 128, BN = 128, WARPS_M = 2, WARPS_N = 4, STAGES = 3, AHEAD = 2, MIN_BLOCKS = 2;
    static constexpr TmaTail TAIL = TmaTail::stream_k;
    static constexpr int TAIL_PERCENT = 75;
    static constexpr bool LOCKSTEP = false;
    static constexpr bool SPLIT_K = false;
    static constexpr bool READS_K_CONTIGUOUS = false;
};

template <class Variant>
struct TmaFfmaConfig : Variant {
    using Variant::BM, Variant::BN, Variant::WARPS_M, Variant::WARPS_N, Variant::STAGES, Variant::AHEAD,
        Variant::MIN_BLOCKS;
    static constexpr int BK = 32;
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
    static_assert(Variant::TAIL == TmaTail::graded || Variant::TAIL_PERCENT > 0, "a stream-K tail needs a fill bound");
    static_assert(!Variant::SPLIT_K || (Variant::TAIL == TmaTail::graded && MIN_BLOCKS == 1),
                  "split-K reuses the graded kernel's segment path");
    static_assert(!Variant::SPLIT_K || (BM % kSplitKRegion == 0 && BN % kSplitKRegion == 0),
                  "the kernel's slab (whole tiles) must be the one reserve_split_k_slabs lays out");
    static_assert(!Variant::READS_K_CONTIGUOUS || (Variant::SPLIT_K && MIN_BLOCKS == 1 && BM <= 256 && BN <= 256),
                  "k-contiguous tiles are stored through the tile image; split-K has no in-kernel tail");
};

// How one operand's k-tile sits in a stage (both are BK x BM or BK x BN floats):
//   k_rows        BK rows along k, each the tile's m (n) range: op(A)^T and op(B) stored
//                 with m (n) contiguous, a box of the dense map. A lane's k step is then
//                 one 16-byte load per four of its rows (columns).
//   k_contiguous  BM (BN) rows of BK = 32 floats along k, each row one 128-byte line
//                 whose 16-byte chunks are swizzled by the row (chunk c of row r at
//                 c ^ (r % 8), TmaLayout::swizzle128): A and op(B)^T stored with k
//                 contiguous, read in place. A lane loads four k of one row at a time, so
//                 it takes four k steps per set of loads; its rows (columns) are eight
//                 (four) apart, which puts a quarter-warp's loads in eight (four) distinct
//                 chunks: no bank conflicts.
enum class StageOperand { k_rows, k_contiguous };

// v.x, v.y, v.z or v.w for an index that is a compile-time constant after unrolling.
__device__ __forceinline__ float component(const float4& v, int e) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

// acc += a b^T at one k, as pairs of columns with the rows inside. ptxas schedules the
// FFMAs its own way whatever the source order, but the order changes its register
// assignment; this one measured best (docs/cuda-notes.md#register-banks).
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

// frag[e][t] = the lane's value number t (of its rows of A or columns of B) at k = 4c +
// e, from one operand's tile in a stage (StageOperand). k_contiguous (KC): rows of 32
// floats, the lane's values in rows first_row + SPACING t (first_row % 8 == lane_sw),
// chunk c of a row at c ^ (row % 8). k_rows: rows of k, LD floats long, the lane's
// values in the float4s at col + GROUP h.
constexpr int kKcRow = 32;  // floats in a k-contiguous row: BK, one 128-byte swizzle line

template <bool KC, int LD, int SPACING, int GROUP, int T>
__device__ __forceinline__ void load_k_group(float (&frag)[4][T], const float* tile, const float* first_row,
                                             int lane_sw, int col, int c) {
    if constexpr (KC) {
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const int chunk = c ^ lane_sw ^ ((SPACING * t) & 7);
            const float4 v = *reinterpret_cast<const float4*>(first_row + SPACING * t * kKcRow + 4 * chunk);
#pragma unroll
            for (int e = 0; e < 4; ++e) frag[e][t] = component(v, e);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int h = 0; h < T / 4; ++h) {
                const float4 v = *reinterpret_cast<const float4*>(tile + (4 * c + e) * LD + col + GROUP * h);
#pragma unroll
                for (int x = 0; x < 4; ++x) frag[e][4 * h + x] = component(v, x);
            }
    }
}

// One block per unit of block_unit (graded_tail.cuh): a whole tile of the grouped
// rasterisation, or one k-segment of one of the last tiles. A_STAGE and B_STAGE say
// how each operand's k-tile sits in a stage (StageOperand); map_at is then the map of
// A^T (K x M) or of A (M x K), map_b that of op(B) (K x N) or of op(B)^T (N x K).
template <class Cfg, StageOperand A_STAGE = StageOperand::k_rows, StageOperand B_STAGE = StageOperand::k_rows>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
    async_tma_kernel(const __grid_constant__ CUtensorMap map_at, const __grid_constant__ CUtensorMap map_b,
                     DeviceOperands p, GradedTail graded) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int TM = Cfg::TM, TN = Cfg::TN;
    constexpr bool A_KC = A_STAGE == StageOperand::k_contiguous, B_KC = B_STAGE == StageOperand::k_contiguous;
    static_assert(!(A_KC || B_KC) || Cfg::READS_K_CONTIGUOUS, "a variant that reads k-contiguous tiles");
    static_assert(BK == kKcRow, "a k-contiguous row is one 128-byte swizzle line");
    extern __shared__ uint8_t smem_raw[];
    __shared__ int last_segment;  // this block completes its split tile
    uint8_t* smem = align_smem_1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.problem.M, BM)), tiles_n = int(ceil_div(p.problem.N, BN));
    const BlockUnit u = block_unit(graded, int(blockIdx.x), int(ceil_div(p.problem.K, BK)));
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
        const int k0 = (u.kb + t) * BK;
        tma_load_2d(st, &map_at, A_KC ? k0 : m0, A_KC ? m0 : k0, &full[s]);
        tma_load_2d(st + Cfg::A_BYTES, &map_b, B_KC ? k0 : n0, B_KC ? n0 : k0, &full[s]);
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
    // The tile row of acc[i][.] and the tile column of acc[.][j]: four adjacent rows
    // (columns) per 16-byte load of a k_rows operand; rows eight apart (columns four
    // apart) for a k_contiguous one (StageOperand).
    auto row_of = [&](int i) { return A_KC ? wm0 + lm + 8 * i : a_col + 32 * (i / 4) + i % 4; };
    auto col_of = [&](int j) { return B_KC ? wn0 + ln + 4 * j : b_col + 16 * (j / 4) + j % 4; };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int kt = 0; kt < KT; ++kt) {
        // Lockstep: the warps start each k-tile together, so that they run the same
        // stretch of the 68 KB loop at the same time and fetch its instructions once
        // instead of once per warp (docs/cuda-notes.md#instruction-fetch). Each warp first
        // looks whether stage kt has landed (it nearly always has), so that the answer
        // (~50 cycles) arrives while the warp waits at the barrier, not after it.
        bool landed = false;
        if (Cfg::LOCKSTEP) {
            landed = mbar_test(&full[kt % STAGES], (kt / STAGES) & 1);
            asm volatile("bar.sync 1, %0;" ::"n"(Cfg::kThreads));
        }
        // Lane 0 of warp 0 drives the copies: at k-tile kt it asks for k-tile kt + AHEAD,
        // into the stage of k-tile kt + AHEAD - STAGES. With lockstep every warp has
        // passed the barrier above, so it has finished k-tile kt - 1 and all before it:
        // the barrier stands in for the empty barriers. Without lockstep the copy waits
        // until every warp has released that stage.
        if (threadIdx.x == 0 && kt + Cfg::AHEAD < KT) issue(kt + Cfg::AHEAD);
        const int s = kt % STAGES;
        const uint32_t parity = (kt / STAGES) & 1;
        // The spin for a stage that had not landed stays here, right before the loads:
        // moved anywhere else, ptxas batched each k's LDS.128 back to back
        // (docs/cuda-notes.md#k-loop-schedule).
        if (Cfg::LOCKSTEP) {
            if (!landed)
                while (!mbar_test(&full[s], parity)) {
                }
        } else {
            mbar_wait(&full[s], parity);
        }
        const float* As = reinterpret_cast<const float*>(smem + s * Cfg::STAGE_BYTES);
        const float* Bs = As + BM * BK;
        if constexpr (!A_KC && !B_KC) {
            // Fully unrolled over the k-tile (4096 FFMAs for 8 x 16): partly rolled loops
            // measured slower, although the 68 KB loop then streams its instructions
            // (docs/cuda-notes.md#instruction-fetch).
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
        } else {
            // Four k steps per set of loads: chunk c of a k-contiguous row holds k = 4c +
            // [0, 4). Lane rows wm0 + lm + 8i all sit at r % 8 = lm, columns wn0 + ln + 4j
            // at ln + 4 (j % 2): their chunk c is at c ^ that.
            const float* a_row = As + (wm0 + lm) * BK;
            const float* b_row = Bs + (wn0 + ln) * BK;
#pragma unroll
            for (int c = 0; c < BK / 4; ++c) {
                float a[4][TM], b[4][TN];
                load_k_group<A_KC, BM, 8, 32>(a, As, a_row, lm, a_col, c);
                load_k_group<B_KC, BN, 4, 16>(b, Bs, b_row, ln, b_col, c);
#pragma unroll
                for (int e = 0; e < 4; ++e) outer_product(acc, a[e], b[e]);
            }
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
    DeviceOperands out = p;
    if (u.nseg > 1) {
        if constexpr (Cfg::SPLIT_K) {
            // Split u.seg's slab (split_k.cuh): a matrix like C padded to whole tiles, so
            // the tile is stored whole, unclipped.
            const int64_t ld = int64_t(tiles_n) * BN, rows = int64_t(tiles_m) * BM;
            out.C = graded.partial + int64_t(u.seg) * rows * ld;
            out.problem.ldc = ld, out.problem.M = rows, out.problem.N = ld;
        } else {
            // Addressed as C's rows m0 + [0, BM) and columns n0 + [0, BN) with ldc = BN:
            // the partial slot starts m0 * BN + n0 floats past out.C.
            out.C = graded.partial + (int64_t(u.first_slot) + u.seg) * (BM * BN) - (int64_t(m0) * BN + n0);
            out.problem.ldc = BN, out.problem.M = m0 + BM, out.problem.N = n0 + BN;
        }
        out.problem.alpha = 1.0f, out.problem.beta = 0.0f;
    }
    const bool c_vec = out.problem.ldc % 4 == 0 && (reinterpret_cast<uintptr_t>(out.C) & 15) == 0;
    if constexpr (Cfg::MIN_BLOCKS == 1) {
        // Through shared memory: each lane writes its TM x TN accumulators into a
        // row-major image of the tile in the ring, which every warp has finished with;
        // then the block stores the image row by row, a warp covering 512 contiguous
        // bytes of C per 16-byte store (from registers a warp's store covers 8 rows x 64
        // bytes). Rows are padded by 4 floats, so the two rows that a quarter-warp writes
        // fall in different banks. The two-blocks-per-SM variant stores from registers:
        // capped at 128 registers, its k loop is slower with this epilogue
        // (docs/cuda-notes.md#epilogue).
        constexpr int LD_IMG = BN + 4;
        static_assert(BM * LD_IMG * 4 <= STAGES * Cfg::STAGE_BYTES, "the tile image must fit in the ring");
        __syncthreads();  // every warp is past its last k-tile: the ring is free
        float* img = reinterpret_cast<float*>(smem);
        if constexpr (!B_KC) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int q = 0; q < TN / 4; ++q)
                    *reinterpret_cast<float4*>(img + row_of(i) * LD_IMG + b_col + 16 * q) =
                        make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
        } else {
            // Columns four apart: one float at a time (once per tile, beside a k range
            // of loads).
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) img[row_of(i) * LD_IMG + col_of(j)] = acc[i][j];
        }
        __syncthreads();
        for (int idx = threadIdx.x; idx < BM * BN / 4; idx += Cfg::kThreads) {
            const int r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
            const int64_t m = int64_t(m0) + r, n = int64_t(n0) + c;
            if (m >= out.problem.M) break;  // rows only grow with idx
            store_c4_clipped(out, m, n, *reinterpret_cast<const float4*>(img + r * LD_IMG + c), c_vec);
        }
    } else {
        const int64_t om0 = m0, on0 = n0;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int64_t m = om0 + a_col + 32 * (i / 4) + i % 4;
            if (m >= out.problem.M) continue;
#pragma unroll
            for (int q = 0; q < TN / 4; ++q)
                store_c4_clipped(out, m, on0 + b_col + 16 * q,
                                 make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]),
                                 c_vec);
        }
    }
    // The block that completes the tile adds its partials in segment order (split-K:
    // reduce_split_k does, after the kernel).
    if (!Cfg::SPLIT_K && u.nseg > 1)
        close_segment<BM, BN, Cfg::kThreads>(&graded.counters[u.split], u.nseg, last_segment,
                                             graded.partial + int64_t(u.first_slot) * (BM * BN), p.C,
                                             p.problem.ldc, p.problem.M, p.problem.N, p.problem.alpha,
                                             p.problem.beta, m0, n0);
#endif
}

// The stream-K tail (stream_k.cuh), launched after the whole tiles on the same stream.
// A block's range of the tail is shorter than KT steps (the tail has fewer tiles than
// there are blocks), so it spans at most two tiles: at most two segments, each k-tiles
// [kb, kb + n) of one tile, parked as a partial tile. Each segment runs the whole-tile
// kernel's loop from step 0 (the ring drains and its barriers are set up afresh in
// between): a step offset carried across segments changes ptxas's schedule of the loop
// (docs/cuda-notes.md#k-loop-schedule).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
    async_tma_tail_kernel(const __grid_constant__ CUtensorMap map_at, const __grid_constant__ CUtensorMap map_b,
                          DeviceOperands p, TailSplit ts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int TM = Cfg::TM, TN = Cfg::TN, TILE = BM * BN;
    extern __shared__ uint8_t smem_raw[];
    __shared__ TailSegment segments[2];
    __shared__ int segment_count, last_segment;  // last_segment: this block completes the tile
    uint8_t* smem = align_smem_1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.problem.M, BM)), tiles_n = int(ceil_div(p.problem.N, BN));
    const int KT = int(ceil_div(p.problem.K, BK));
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
        // The whole-tile kernel's loop, written out again on purpose: moved into a shared
        // __forceinline__ function it changes ptxas's allocation of the whole-tile kernel
        // (docs/cuda-notes.md#k-loop-schedule). Keep the two alike.
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
        close_segment<BM, BN, Cfg::kThreads>(&ts.counters[u.r], u.nseg, last_segment, first, p.C, p.problem.ldc,
                                             p.problem.M, p.problem.N, p.problem.alpha, p.problem.beta, m0, n0);
        // last_segment is rewritten only after the next segment's barriers.
    }
#endif
}

// Whether the k-contiguous operands of a problem are read in place. In place saves
// the transpose pass over each (8 bytes moved per element: about 45 / N of the FFMA
// time of the product for an M x K operand A at 4 TB/s against 45 TFLOP/s, 45 / M for
// W), but costs the k loop 8-14% where it is compute-bound: a lane's fragments of one k
// then come from the same component of different float4s, in one register bank
// (docs/cuda-notes.md#register-banks). Measured on the H200, the two crossed where the
// saved passes came to about 8% (1024^3 NT, 512 x 512 x 32768 NN): in place from there.
inline bool read_k_contiguous_in_place(const Problem& q) {
    const double saved = (q.trans_a ? 0.0 : 45.0 / double(q.N)) + (q.trans_b ? 45.0 / double(q.M) : 0.0);
    return saved >= 0.08;
}

// The kernel for the stage forms chosen at run time.
template <class Cfg>
auto async_tma_kernel_for(bool a_k_contiguous, bool b_k_contiguous) {
    constexpr StageOperand rows = StageOperand::k_rows, kc = StageOperand::k_contiguous;
    auto kernel = async_tma_kernel<Cfg>;
    if constexpr (Cfg::READS_K_CONTIGUOUS) {
        if (a_k_contiguous) kernel = b_k_contiguous ? async_tma_kernel<Cfg, kc, kc> : async_tma_kernel<Cfg, kc, rows>;
        else if (b_k_contiguous) kernel = async_tma_kernel<Cfg, rows, kc>;
    }
    return kernel;
}

template <class Variant>
void launch_async_tma(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name) {
    const Problem& q = p.problem;
    using Cfg = TmaFfmaConfig<Variant>;
    require_sm90(name, "TMA");
    if (q.M == 0 || q.N == 0) return;
    // Each operand's k-tiles as k rows (A^T, op(B): packed unless stored that way) or,
    // where the variant reads them, the pass would cost enough and the rows are 16-byte
    // aligned, as k-contiguous rows of A or op(B)^T read in place.
    const bool in_place = Cfg::READS_K_CONTIGUOUS && read_k_contiguous_in_place(q);
    const bool a_kc = in_place && !q.trans_a && tma_ready(p.A, q.lda);
    const bool b_kc = in_place && q.trans_b && tma_ready(p.B, q.ldb);
    CUtensorMap map_at, map_b;
    if (a_kc) {
        map_at = make_tma_map_2d(p.A, q.M, q.K, q.lda, Cfg::BM, Cfg::BK, TmaLayout::swizzle128);
    } else {
        int64_t lda = q.lda;
        const float* at = tma_readable(p.A, lda, !q.trans_a, q.K, q.M, ws, 0, stream);
        map_at = make_tma_map_2d(at, q.K, q.M, lda, Cfg::BK, Cfg::BM, TmaLayout::dense);
    }
    if (b_kc) {
        map_b = make_tma_map_2d(p.B, q.N, q.K, q.ldb, Cfg::BN, Cfg::BK, TmaLayout::swizzle128);
    } else {
        int64_t ldb = q.ldb;
        const float* b = tma_readable(p.B, ldb, q.trans_b, q.K, q.N, ws, 2, stream);
        map_b = make_tma_map_2d(b, q.K, q.N, ldb, Cfg::BK, Cfg::BN, TmaLayout::dense);
    }
    auto kernel = async_tma_kernel_for<Cfg>(a_kc, b_kc);
    const int64_t tiles = ceil_div(q.M, Cfg::BM) * ceil_div(q.N, Cfg::BN), KT = ceil_div(q.K, Cfg::BK);
    const int64_t round = resident_blocks(kernel, Cfg::kThreads, Cfg::SMEM_BYTES);
    if constexpr (Cfg::SPLIT_K) {
        // Units (tile, split) in the graded kernel's segment form: n1 = tiles split S
        // ways, nothing whole; each unit parks its partial tile in slab `seg`.
        const int S = plan_split_k(tiles, round, KT, 8, max_split_k(q.M, q.N, Cfg::BM, Cfg::BN), 2.0);
        GradedTail units;
        if (S > 1) {
            const SplitKSlabs slabs = reserve_split_k_slabs(ws, S, q.M, q.N, Cfg::BM, Cfg::BN);
            units.n1 = int(tiles), units.s1 = S, units.partial = slabs.partial;
            kernel<<<unsigned(tiles * S), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, units);
            FASTGEMM_CUDA_CHECK_LAUNCH();
            reduce_split_k(slabs, q.M, q.N, p.C, q.ldc, q.alpha, q.beta, nullptr, stream);
        } else {
            units.whole = int(tiles);
            kernel<<<unsigned(tiles), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, units);
            FASTGEMM_CUDA_CHECK_LAUNCH();
        }
    } else if constexpr (Cfg::TAIL == TmaTail::graded) {
        // Segments of at least 8 k-tiles: a shorter one would spend more on filling the
        // ring and parking its partial tile than it computes.
        const GradedTail graded = plan_graded_tail(tiles, round, KT, 8, size_t(Cfg::BM) * Cfg::BN, ws, stream);
        kernel<<<unsigned(graded_tail_blocks(graded)), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p,
                                                                                                  graded);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    } else {
        const TailSplit ts = plan_stream_k_tail(tiles, round, KT, round * Cfg::TAIL_PERCENT / 100,
                                                size_t(Cfg::BM) * Cfg::BN, ws, stream);
        GradedTail whole_tiles;
        whole_tiles.whole = ts.full_tiles;
        kernel<<<unsigned(ts.full_tiles), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, whole_tiles);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        if (ts.tail_tiles > 0) {
            auto tail_kernel = async_tma_tail_kernel<Cfg>;
            allow_dynamic_smem(tail_kernel, Cfg::SMEM_BYTES);
            tail_kernel<<<unsigned(round), Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_at, map_b, p, ts);
            FASTGEMM_CUDA_CHECK_LAUNCH();
        }
    }
}

}  // namespace

// Which tail each variant has, and why: docs/cuda-notes.md#graded-tail.
void launch_async_tma_128x256(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma128x256>(p, s, ws, "async_tma_128x256");
}
void launch_async_tma_256x128(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma256x128>(p, s, ws, "async_tma_256x128");
}
void launch_async_tma_128x128(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma128x128>(p, s, ws, "async_tma_128x128");
}
void launch_async_tma_128x256_splitk(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma128x256SplitK>(p, s, ws, "async_tma_128x256_splitk");
}
void launch_async_tma_64x256_splitk(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma64x256SplitK>(p, s, ws, "async_tma_64x256_splitk");
}
void launch_async_tma_256x64_splitk(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma256x64SplitK>(p, s, ws, "async_tma_256x64_splitk");
}
void launch_async_tma_128x128_splitk(const DeviceOperands& p, cudaStream_t s, Workspace& ws) {
    launch_async_tma<AsyncTma128x128SplitK>(p, s, ws, "async_tma_128x128_splitk");
}

}  // namespace cuda
}  // namespace fastgemm
