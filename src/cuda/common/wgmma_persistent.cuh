// The persistent Hopper tensor-core GEMM behind rungs 12 (tf32_wgmma) and 13
// (fp32x3_wgmma); the per-tile design (roles, layouts, fp32x3 split) is wgmma_gemm.cuh.
// - Grid: one block per SM (at most one per tile). Block b takes tiles b, b + grid, ...
//   of the grouped rasterisation (raster.cuh), so resident blocks share rows of A and
//   columns of B in L2.
// - One producer thread walks the k-tiles of all its block's tiles through one mbarrier
//   ring, so a tile's epilogue overlaps the next tile's loads; a running k-tile counter
//   gives each load its stage and phase.
// - Schedules (WgmmaSchedule): whole tiles; the stream-K tail of a last round at most
//   half full (stream_k.cuh), a second kernel after the whole tiles so that the
//   whole-tile loop is compiled the same with or without it; split-K, where work unit u
//   is split u % S of tile u / S, parked in slab u % S and summed by reduce_split_k
//   (split_k.cuh).
// - Epilogue: each consumer warpgroup writes its 64 (n) x BM (m) part of C through
//   shared memory, 32 rows of m at a time (all BM of a smaller tile), into one of two
//   buffers of up to 8 KB swizzled in 16-byte chunks (chunk ^= (row >> 1) & 3,
//   conflict-free both ways), and stores float4 rows of C; unaligned rows of C and the
//   ragged right edge fall back to scalar stores.
// - fp32x3 tests each warpgroup's accumulators before its part of C is stored and lists
//   the parts that are not finite for a plain FP32 kernel (nonfinite.cuh).
// - B in shared memory, either layout (BLayout): n_major, four 32 (k) x 32 (n) boxes
//   per k-tile, as B (K x N) is stored; k_major, one 128 (n) x 32 (k) box, as a
//   transposed B is stored (x @ W^T with W N x K row-major), so that it is read in place
//   instead of packed by a pass over the whole of W. Either way 128-byte rows under the
//   128-byte swizzle; each layout has its own labelling of fragment rows by n (below),
//   chosen so that the 32 lanes' scalar fragment loads hit 32 distinct banks.
// Any M, N, K (K = 0 included: C = beta * C); A and B rows 16-byte aligned (the
// launcher packs an operand that is not, or a transposed A).
#pragma once

#include "cuda/common/hopper.cuh"
#include "cuda/common/raster.cuh"
#include "cuda/common/split_k.cuh"
#include "cuda/common/stream_k.cuh"
#include "cuda/common/wgmma_gemm.cuh"

#include <type_traits>

namespace fastgemm {
namespace cuda {

enum class WgmmaMath { tf32, fp32x3 };
enum class WgmmaSchedule { whole_tiles, stream_k_tail, split_k };
enum class BLayout { n_major, k_major };

template <int BM_, WgmmaMath MATH>
struct WgmmaPersistentConfig {
    static constexpr int BM = BM_, BN = 128, BK = 32;
    static constexpr bool X3 = MATH == WgmmaMath::fp32x3;
    // tf32 leaves each k-tile's wgmmas in flight until the next k-tile's are issued;
    // fp32x3 reads its tensor-core partial sums every PROMOTE k-tiles
    // (docs/cuda-notes.md#fp32x3-promotion). The tensor cores' accumulation rounds
    // towards zero, a bias that grows with the products gathered between promotions:
    // the few-row tiles, where the tensor cores have time to spare, give every k8 step
    // (16 and 32 rows) or every two (64 rows) an accumulator of its own, promote each
    // k-tile, and add its TEMPS partial sums in a fixed tree before the FP32 result.
    // A run of at most SHORT_RUN k-tiles (K up to 2304, or a split-K unit as short)
    // orders all of a block's small products before any big one: half the error, where
    // cuBLAS's split sums err less than fp32x3's 4.8e-7 of long runs, for about 1% of the
    // time there (8-15% on long runs, which therefore keep the interleaved order).
    static constexpr int TEMPS = !X3 ? 1 : BM <= 32 ? 4 : BM == 64 ? 2 : 1;
    static constexpr int PROMOTE = TEMPS > 1 ? 1 : 2;
    static constexpr int SHORT_RUN = 72;
    static_assert(PROMOTE == 1 || PROMOTE == 2, "the k loop runs k-tiles in pairs");
    static_assert(TEMPS == 1 || TEMPS == 2 || TEMPS == 4, "a k-tile's four k8 steps, in equal shares");
    static constexpr int kThreads = 384;
    static constexpr int A_BYTES = BM * BK * 4;
    static constexpr int B_BOX_BYTES = 32 * BK * 4;  // one 32 (n) x 32 (k) box
    static constexpr int B_BYTES = BK * BN * 4;
    static constexpr int STAGE_BYTES = (X3 ? 2 : 1) * A_BYTES + B_BYTES;
    static constexpr int EPI_ROWS = BM < 32 ? BM : 32;         // m rows per staged chunk
    static constexpr int EPI_BUF_BYTES = EPI_ROWS * 64 * 4;   // EPI_ROWS (m) x 64 (n) floats
    static constexpr int EPI_BYTES = 2 * 2 * EPI_BUF_BYTES;   // 2 consumers x 2 buffers
    static constexpr int STAGES_FIT = (225 * 1024 - EPI_BYTES) / STAGE_BYTES;
    // Tiles of 32 rows or fewer are memory-bound (a stage is mostly W): they keep as many
    // stages in flight as fit, up to ten; the larger ones keep the six they were tuned with.
    static constexpr int STAGES_CAP = BM <= 32 ? 10 : 6;
    static constexpr int STAGES = STAGES_FIT > STAGES_CAP ? STAGES_CAP : STAGES_FIT;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + EPI_BYTES + 1024 + 2 * STAGES * 8 + 16;
    static constexpr int ACC = BM / 2;  // accumulator registers per consumer thread
    static constexpr int GROUP = 8;     // tile-rows per rasterisation group
    static_assert(BM % 16 == 0 && BM >= 16, "m is a wgmma n: 16, 32, 64, 128 or 256 here");
    static_assert(STAGES >= 2, "need at least two stages");
    static_assert(SMEM_BYTES <= 227 * 1024, "over the sm_90 shared-memory limit per block");
};

// Barrier among the 128 threads of one consumer warpgroup (ids 1 and 2; 0 is
// __syncthreads).
__device__ __forceinline__ void consumer_bar(int consumer) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

// The same barrier, returning whether `v` holds in all 128 threads.
__device__ __forceinline__ bool consumer_all(int consumer, bool v) {
    uint32_t all;
    asm volatile(
        "{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.and.pred q, %2, 128, p;\nselp.u32 %0, 1, 0, q;\n}\n"
        : "=r"(all)
        : "r"(uint32_t(v)), "r"(1 + consumer)
        : "memory");
    return all != 0;
}

// Barrier among the 256 threads of both consumer warpgroups (id 3).
__device__ __forceinline__ void consumers_bar() { asm volatile("bar.sync 3, 256;\n" ::: "memory"); }

// The same barrier, returning whether `v` holds in all 256 threads.
__device__ __forceinline__ bool consumers_all(bool v) {
    uint32_t all;
    asm volatile(
        "{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.and.pred q, 3, 256, p;\nselp.u32 %0, 1, 0, q;\n}\n"
        : "=r"(all)
        : "r"(uint32_t(v))
        : "memory");
    return all != 0;
}

// Whether every accumulator is finite. A NaN or an infinity among the inputs always
// shows in the accumulators of every tile whose products use it (its split parts
// hold a NaN or an Inf, every product with such a part is non-finite or NaN whatever
// the other factor, and non-finite sums stay non-finite).
template <int N>
__device__ __forceinline__ bool all_finite(const float (&d)[N]) {
    bool finite = true;
#pragma unroll
    for (int i = 0; i < N; ++i) finite &= fabsf(d[i]) <= 3.402823466e38f;  // false for NaN and +-Inf
    return finite;
}

// A region of C that the checked kernel left for the IEEE fallback (nonfinite.cuh).
__device__ __forceinline__ void list_for_fallback(int* fallback, int64_t m0, int64_t n0) {
    const int i = atomicAdd(fallback, 1);
    fallback[1 + 2 * i] = int(m0);
    fallback[2 + 2 * i] = int(n0);
}

// whole_tiles: the tiles [0, ts.full_tiles). stream_k_tail: the stream-K tail only,
// launched after it on the same stream. split_k: the units of `slabs` (every tile in
// slabs.splits k-ranges), unchecked: fp32x3's test of the sums is reduce_split_k's. fp32x3 tests each warpgroup's accumulators
// before storing its BM x 64 part of C, and lists the parts that are not finite in
// `fallback` (a count, then (m0, n0) pairs) instead (nonfinite.cuh).
template <class Cfg, WgmmaSchedule Schedule, BLayout BL>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    wgmma_persistent_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_a_small,
                            const __grid_constant__ CUtensorMap map_b, DeviceOperands p, TailSplit ts, int* fallback,
                            SplitKSlabs slabs) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr bool Tail = Schedule == WgmmaSchedule::stream_k_tail;
    constexpr bool SplitK = Schedule == WgmmaSchedule::split_k;
    constexpr bool Checked = Cfg::X3;  // fp32x3 tests its accumulators before C is written (nonfinite.cuh)
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = align_smem_1024(smem_raw);
    float* epi = reinterpret_cast<float*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES + Cfg::EPI_BYTES);
    uint64_t* empty = full + STAGES;
    int* last_segment = reinterpret_cast<int*>(empty + STAGES);  // this block closes the tile

    const int tiles_m = int(ceil_div(p.problem.M, BM)), tiles_n = int(ceil_div(p.problem.N, BN));
    const int KT = int(ceil_div(p.problem.K, BK));
    // Ring step it (>= 0) uses stage it % STAGES for the (it / STAGES)-th time; unsigned,
    // so that both are a mask and a shift.
    auto stage_of = [](int it) { return int(unsigned(it) % STAGES); };
    auto phase_of = [](int it) { return (unsigned(it) / STAGES) & 1u; };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8);  // one arrival per consumer warp
        }
        mbar_fence_init();
    }
    __syncthreads();

    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        // Producer: one thread keeps the ring full across all of this block's tiles.
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int it = 0;  // k-tiles issued by this block so far
            auto load_ktiles = [&](int tile, int kb, int ke) {
                int tm, tn;
                grouped_tile(tile, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
                const int m0 = tm * BM, n0 = tn * BN;
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = stage_of(it);
                    if (it >= STAGES) mbar_wait(&empty[s], phase_of(it - STAGES));
                    uint8_t* st = smem + s * Cfg::STAGE_BYTES;
                    mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
                    tma_load_2d(st, &map_a, kt * BK, m0, &full[s]);
                    if (Cfg::X3) tma_load_2d(st + Cfg::A_BYTES, &map_a_small, kt * BK, m0, &full[s]);
                    uint8_t* bt = st + (Cfg::X3 ? 2 : 1) * Cfg::A_BYTES;
                    if constexpr (BL == BLayout::k_major) {
                        tma_load_2d(bt, &map_b, kt * BK, n0, &full[s]);  // B^T: rows n, columns k
                    } else {
#pragma unroll
                        for (int j = 0; j < BN / 32; ++j)
                            tma_load_2d(bt + j * Cfg::B_BOX_BYTES, &map_b, n0 + 32 * j, kt * BK, &full[s]);
                    }
                }
            };
            if constexpr (SplitK) {
                const int S = slabs.splits;
                for (int u = blockIdx.x; u < ts.full_tiles * S; u += gridDim.x)
                    load_ktiles(u / S, split_k_begin(u % S, S, KT), split_k_begin(u % S + 1, S, KT));
            } else if constexpr (!Tail) {
                for (int tile = blockIdx.x; tile < ts.full_tiles; tile += gridDim.x) load_ktiles(tile, 0, KT);
            } else {
                TailWalker walk(ts, KT);
                TailSegment u;
                while (walk.next(u)) load_ktiles(ts.full_tiles + u.r, u.kb, u.ke);
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1;  // consumer index: n rows [64c, 64c + 64) of the tile
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;

    // Byte offset in the B tile of this thread's fragment element (row half h, k half q)
    // at k8 step 0 (see wgmma_gemm.cuh). n_major: step kk adds kk * 8 rows of 128 bytes,
    // and fragment row g + 8h of warp w holds n = 32(w>>1) + 8(w&1) + 16(g>>2) + 4h +
    // (g&3). k_major: row g + 8h holds n = 16w + g + 8h (row n of the box, whose
    // 16-byte chunk j sits at chunk j ^ (n % 8) = j ^ g); step kk moves k by 8, chunk
    // q + 2kk, which the swizzle turns into (q ^ g) ^ 2kk (frag_at).
    uint32_t frag_off[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            if constexpr (BL == BLayout::k_major) {
                const int n = 64 * c + 16 * warp + g + 8 * h;
                frag_off[h][q] = n * 128 + ((q ^ g) << 4) + 4 * t;
            } else {
                const int box = 2 * c + (warp >> 1);
                const int chunk = 2 * (warp & 1) + 4 * (g >> 2) + h;
                const int k = t + 4 * q;
                frag_off[h][q] = box * Cfg::B_BOX_BYTES + k * 128 + ((chunk ^ k) * 16) + (g & 3) * 4;
            }
        }
    auto frag_at = [&](int h, int q, int kk) -> uint32_t {
        return BL == BLayout::k_major ? frag_off[h][q] ^ uint32_t(kk << 5) : frag_off[h][q] + kk * 1024;
    };
    // This thread's n (within the consumer's 64) for accumulator row half e2: n_frag +
    // N_E2 * e2.
    const int n_frag = BL == BLayout::k_major ? 16 * warp + g
                                              : 32 * (warp >> 1) + 8 * (warp & 1) + 16 * (g >> 2) + (g & 3);
    constexpr int N_E2 = BL == BLayout::k_major ? 8 : 4;

    float d[Cfg::ACC];                                // the result (FP32 registers)
    float dt[Cfg::X3 ? Cfg::TEMPS : 1][Cfg::X3 ? Cfg::ACC : 1];  // products since the last promotion (fp32x3)

    constexpr int KK = BK / 8;
    uint32_t fb[2][KK][4];                // TF32 fragments of B (big part for fp32x3), double-buffered
    uint32_t fs[2][Cfg::X3 ? KK : 1][4];  // small part (fp32x3)

    auto load_fragments = [&](auto parity, int it) {
        constexpr int P = decltype(parity)::value;
        const int s = stage_of(it);
        mbar_wait(&full[s], phase_of(it));
        const uint8_t* bt = smem + s * Cfg::STAGE_BYTES + (Cfg::X3 ? 2 : 1) * Cfg::A_BYTES;
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const float v = *reinterpret_cast<const float*>(bt + frag_at(r & 1, r >> 1, kk));
                if constexpr (Cfg::X3) {
                    const Tf32Split t = split_tf32(v * kX3ScaleB);  // scaled: see kX3Tiny
                    fb[P][kk][r] = t.big;
                    fs[P][kk][r] = t.small;
                } else {
                    fb[P][kk][r] = __float_as_uint(v);  // rounded to TF32 by the TMA copy
                }
            }
    };
    auto a_stage = [&](int it) { return smem_addr(smem + stage_of(it) * Cfg::STAGE_BYTES); };
    auto release = [&](auto q, int it_done) {  // k-tile it_done (fragment parity q) is finished
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                fence_operand(fb[decltype(q)::value][kk][r]);
                if (Cfg::X3) fence_operand(fs[decltype(q)::value][kk][r]);
            }
        if (lane == 0) mbar_arrive(&empty[stage_of(it_done)]);
    };

    // tf32: k-tile j of a run of nk from ring step itb, its wgmmas left in flight.
    // Waiting until at most this k-tile's group is pending means the previous k-tile is
    // done, so its fragment buffer (the other parity) is refilled and its stage released;
    // the tensor cores hold this warpgroup's next k-tile before its last one drains.
    auto tf32_step = [&](auto parity, int itb, int j, int nk) {
        constexpr int P = decltype(parity)::value;
        const int it = itb + j;
        const bool more = j + 1 < nk;
        const uint32_t a_addr = a_stage(it);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) wgmma_rs(d, fb[P][kk], desc_kmajor_sw128(a_addr + kk * 32), 1u);
        wgmma_commit();
        wgmma_wait<1>();
        if (j > 0) release(Parity<P ^ 1>{}, it - 1);
        if (more) load_fragments(Parity<P ^ 1>{}, it + 1);
        if (!more) {
            wgmma_wait<0>();
            release(Parity<P>{}, it);
        }
    };

    // fp32x3 gathers the products of a block of PROMOTE k-tiles in dt (restarted at the
    // block's first k-tile; with TEMPS accumulators, each at its first k8 step), waits for
    // them and adds them into the FP32 result d. Per k-tile there are two small products
    // (B small x A big, B big x A small) and a big one. Every accumulate into dt rounds
    // towards zero at dt's magnitude, whatever the size of what it adds, so the error
    // grows with the accumulates made once dt holds big products
    // (docs/cuda-notes.md#fp32x3-promotion): where the time allows, small products go
    // first.
    auto issue_smalls = [&](auto parity, uint32_t a_addr, bool restart) {
        if constexpr (Cfg::X3) {
            constexpr int P = decltype(parity)::value;
            constexpr int STEPS = KK / Cfg::TEMPS;  // k8 steps per accumulator
#pragma unroll
            for (int kk = 0; kk < KK; ++kk) {
                auto& acc = dt[kk / STEPS];
                wgmma_rs(acc, fs[P][kk], desc_kmajor_sw128(a_addr + kk * 32), restart && kk % STEPS == 0 ? 0u : 1u);
                wgmma_rs(acc, fb[P][kk], desc_kmajor_sw128(a_addr + Cfg::A_BYTES + kk * 32), 1u);
            }
        }
    };
    auto issue_bigs = [&](auto parity, uint32_t a_addr) {
        if constexpr (Cfg::X3) {
            constexpr int P = decltype(parity)::value;
            constexpr int STEPS = KK / Cfg::TEMPS;
#pragma unroll
            for (int kk = 0; kk < KK; ++kk) wgmma_rs(dt[kk / STEPS], fb[P][kk], desc_kmajor_sw128(a_addr + kk * 32), 1u);
        }
    };
    // d += the block's partial sums, in a fixed tree over the TEMPS accumulators.
    auto promote_into_d = [&]() {
        if constexpr (Cfg::X3) {
#pragma unroll
            for (int i = 0; i < Cfg::ACC; ++i) {
#pragma unroll
                for (int u = 0; u < Cfg::TEMPS; ++u) fence_operand(dt[u][i]);
                float sum = dt[0][i];
                if constexpr (Cfg::TEMPS == 2) sum = dt[0][i] + dt[1][i];
                if constexpr (Cfg::TEMPS == 4) sum = (dt[0][i] + dt[1][i]) + (dt[2][i] + dt[3][i]);
                d[i] = fmaf(sum, kX3UnscaleB, d[i]);  // B was split scaled by 2^36
            }
        }
    };

    // fp32x3, a block of one k-tile (PROMOTE = 1, or the odd last k-tile of a run); the
    // next k-tile's fragments load while its wgmmas run.
    auto x3_single = [&](auto parity, int it, bool more) {
        constexpr int P = decltype(parity)::value;
        wgmma_fence();
        issue_smalls(parity, a_stage(it), true);
        issue_bigs(parity, a_stage(it));
        wgmma_commit();
        if (more) load_fragments(Parity<P ^ 1>{}, it + 1);
        wgmma_wait<0>();
        release(parity, it);
        promote_into_d();
    };
    // fp32x3's interleaved order: per k8 step the two small products, then the big one.
    auto issue_interleaved = [&](auto parity, uint32_t a_addr, bool restart) {
        if constexpr (Cfg::X3) {
            constexpr int P = decltype(parity)::value;
#pragma unroll
            for (int kk = 0; kk < KK; ++kk) {
                const uint64_t desc = desc_kmajor_sw128(a_addr + kk * 32);
                auto& acc = dt[0];  // a block of two k-tiles has one accumulator
                wgmma_rs(acc, fs[P][kk], desc, restart && kk == 0 ? 0u : 1u);
                wgmma_rs(acc, fb[P][kk], desc_kmajor_sw128(a_addr + Cfg::A_BYTES + kk * 32), 1u);
                wgmma_rs(acc, fb[P][kk], desc, 1u);
            }
        }
    };
    // fp32x3, a block of two k-tiles (PROMOTE = 2). The first group stays in flight while
    // the second k-tile's fragments load; once all but the last group are done, the first
    // k-tile's stage and fragments are free, and the next block's first fragments load
    // while the last group runs.
    // - A long run (SmallsFirst false): each k-tile's products in the interleaved order,
    //   each k-tile a group.
    // - A short run (SmallsFirst): both k-tiles' small products before either's big ones
    //   (half the error): the first k-tile's small products; the second's and the first's
    //   big ones; the second's big ones. The tensor cores idle a little longer between
    //   blocks: measured, 1% slower on runs of 16-33 k-tiles, 8-15% on runs of 128 or more.
    auto x3_pair = [&](auto smalls_first, int it, bool more) {
        constexpr bool SmallsFirst = decltype(smalls_first)::value;
        wgmma_fence();
        if constexpr (SmallsFirst) {
            issue_smalls(Parity<0>{}, a_stage(it), true);
        } else {
            issue_interleaved(Parity<0>{}, a_stage(it), true);
        }
        wgmma_commit();
        load_fragments(Parity<1>{}, it + 1);
        wgmma_fence();
        if constexpr (SmallsFirst) {
            issue_smalls(Parity<1>{}, a_stage(it + 1), false);
            issue_bigs(Parity<0>{}, a_stage(it));
            wgmma_commit();
            issue_bigs(Parity<1>{}, a_stage(it + 1));
        } else {
            issue_interleaved(Parity<1>{}, a_stage(it + 1), false);
        }
        wgmma_commit();
        wgmma_wait<1>();
        release(Parity<0>{}, it);
        if (more) load_fragments(Parity<0>{}, it + 2);
        wgmma_wait<0>();
        release(Parity<1>{}, it + 1);
        promote_into_d();
    };

    // k-tiles [itb, itb + nk) of the ring into d (which the caller has zeroed).
    auto run_ktiles = [&](int itb, int nk) {
        if (nk > 0) {
            load_fragments(Parity<0>{}, itb);
            if constexpr (!Cfg::X3) {
                for (int j = 0; j < nk; j += 2) {
                    tf32_step(Parity<0>{}, itb, j, nk);
                    if (j + 1 < nk) tf32_step(Parity<1>{}, itb, j + 1, nk);
                }
            } else if constexpr (Cfg::PROMOTE == 1) {
                for (int j = 0; j < nk; j += 2) {
                    x3_single(Parity<0>{}, itb + j, j + 1 < nk);
                    if (j + 1 < nk) x3_single(Parity<1>{}, itb + j + 1, j + 2 < nk);
                }
            } else {
                static_assert(Cfg::TEMPS == 1, "a block of two k-tiles gathers in one accumulator");
                int j = 0;
                if (nk <= Cfg::SHORT_RUN) {
                    for (; j + 1 < nk; j += 2) x3_pair(std::true_type{}, itb + j, j + 2 < nk);
                } else {
                    for (; j + 1 < nk; j += 2) x3_pair(std::false_type{}, itb + j, j + 2 < nk);
                }
                if (j < nk) x3_single(Parity<0>{}, itb + j, false);
            }
        }
        // Nothing is pending here (the last step waited); saying so keeps ptxas from
        // adding a wait of its own before d is read (info C7517).
        wgmma_wait<0>();
    };

    int it0 = 0;  // global index of this tile's first k-tile
    if constexpr (SplitK) {
        // Unit u: k-tiles of split u % S of tile u / S, in the producer's order. The
        // partial tile is parked whole (row-major in slab u % S, rows and columns as C's).
        const int S = slabs.splits;
        for (int u = blockIdx.x; u < ts.full_tiles * S; u += gridDim.x) {
            const int split = u % S;
            const int nk = split_k_begin(split + 1, S, KT) - split_k_begin(split, S, KT);
            int tm, tn;
            grouped_tile(u / S, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
#pragma unroll
            for (int i = 0; i < Cfg::ACC; ++i) d[i] = 0.0f;
            run_ktiles(it0, nk);
            it0 += nk;
#pragma unroll
            for (int i = 0; i < Cfg::ACC; ++i) fence_operand(d[i]);
            float* part = slabs.partial + split * slabs.slab() + int64_t(tm) * BM * slabs.ld + int64_t(tn) * BN;
#pragma unroll
            for (int j = 0; j < BM / 8; ++j)
#pragma unroll
                for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
                    for (int e2 = 0; e2 < 2; ++e2)
                        part[(8 * j + 2 * t + e1) * slabs.ld + 64 * c + n_frag + N_E2 * e2] = d[4 * j + 2 * e2 + e1];
        }
        return;
    }
    const bool c_vec = p.problem.ldc % 4 == 0 && (reinterpret_cast<uintptr_t>(p.C) & 15) == 0;
    for (int tile = blockIdx.x; !Tail && tile < ts.full_tiles; tile += gridDim.x, it0 += KT) {
        int tm, tn;
        grouped_tile(tile, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
        const int64_t m0 = int64_t(tm) * BM, n0 = int64_t(tn) * BN;

#pragma unroll
        for (int i = 0; i < Cfg::ACC; ++i) d[i] = 0.0f;
        run_ktiles(it0, KT);
#pragma unroll
        for (int i = 0; i < Cfg::ACC; ++i) fence_operand(d[i]);
        if constexpr (Checked) {
            // A NaN or an infinity in this warpgroup's part: leave it to the fallback.
            // (__all_sync restates what the barrier already made warp-uniform, in a form
            // ptxas knows: without it the k loop's descriptors left the uniform datapath.)
            if (!__all_sync(0xffffffffu, consumer_all(c, all_finite(d)))) {
                if (threadIdx.x % 128 == 0) list_for_fallback(fallback, m0, n0 + 64 * c);
                continue;
            }
        }

        // d[4j + 2e2 + e1] is C(m0 + 8j + 2t + e1, n0 + 64c + n_frag + N_E2 e2).
        constexpr int CHUNKS = BM / Cfg::EPI_ROWS, JPC = Cfg::EPI_ROWS / 8;
        const int tid = threadIdx.x % 128;
#pragma unroll
        for (int ch = 0; ch < CHUNKS; ++ch) {
            float* buf = epi + (2 * c + (ch & 1)) * (Cfg::EPI_ROWS * 64);
            // Fragment -> buffer (row r = m within the chunk, 16-byte chunk of n swizzled).
#pragma unroll
            for (int jj = 0; jj < JPC; ++jj)
#pragma unroll
                for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
                    for (int e2 = 0; e2 < 2; ++e2) {
                        const int r = 8 * jj + 2 * t + e1;
                        const int n = n_frag + N_E2 * e2;
                        const int q = (n >> 2) ^ ((r >> 1) & 3);
                        buf[r * 64 + q * 4 + (n & 3)] = d[4 * (JPC * ch + jj) + 2 * e2 + e1];
                    }
            consumer_bar(c);
            // Buffer -> C: 16 threads per 64-float row, 8 rows per pass.
#pragma unroll
            for (int pass = 0; pass < Cfg::EPI_ROWS / 8; ++pass) {
                const int r = 8 * pass + tid / 16, q = tid % 16;
                const float4 v = *reinterpret_cast<const float4*>(buf + r * 64 + ((q ^ ((r >> 1) & 3)) * 4));
                const int64_t m = m0 + Cfg::EPI_ROWS * ch + r, n = n0 + 64 * c + 4 * q;
                if (m < p.problem.M) store_c4_clipped(p, m, n, v, c_vec);
            }
            // The next chunk writes the other buffer; the one after this one's
            // writers pass the next chunk's barrier only after these reads.
        }
    }

    // The stream-K tail: this block's segments of the last round's tiles.
    if constexpr (!Tail) return;
    TailWalker walk(ts, KT);
    TailSegment u;
    while (walk.next(u)) {
        const int nk = u.ke - u.kb;
        int tm, tn;
        grouped_tile(ts.full_tiles + u.r, tiles_m, tiles_n, Cfg::GROUP, tm, tn);
#pragma unroll
        for (int i = 0; i < Cfg::ACC; ++i) d[i] = 0.0f;
        run_ktiles(it0, nk);
        it0 += nk;
#pragma unroll
        for (int i = 0; i < Cfg::ACC; ++i) fence_operand(d[i]);
        // Park the partial tile (row-major BM x BN, same element mapping as above).
        constexpr int TILE = BM * BN;
        const float* first = ts.partial + int64_t(u.r) * ts.max_segments * TILE;
        float* part = ts.partial + (int64_t(u.r) * ts.max_segments + u.seg) * TILE;
#pragma unroll
        for (int j = 0; j < BM / 8; ++j)
#pragma unroll
            for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
                for (int e2 = 0; e2 < 2; ++e2)
                    part[(8 * j + 2 * t + e1) * BN + 64 * c + n_frag + N_E2 * e2] = d[4 * j + 2 * e2 + e1];
        __threadfence();
        // *last_segment: 0, this block does not complete the tile; 1, it completes it
        // and sums the partials; 2 (Checked), it completes it and a segment was not
        // finite: the tile goes to the fallback. For the checked kernel the tile's
        // counter counts segments in its low 16 bits and non-finite ones from bit 16 on.
        if constexpr (!Checked) {
            consumers_bar();
            if (threadIdx.x == 128) *last_segment = atomicAdd(&ts.counters[u.r], 1u) == unsigned(u.nseg - 1);
        } else {
            constexpr unsigned kNonfiniteSegment = 1u << 16;
            const bool finite = consumers_all(all_finite(d));
            if (threadIdx.x == 128) {
                const unsigned mine = finite ? 1u : 1u + kNonfiniteSegment;
                const unsigned total = atomicAdd(&ts.counters[u.r], mine) + mine;
                *last_segment = (total & (kNonfiniteSegment - 1)) != unsigned(u.nseg) ? 0
                                : total < kNonfiniteSegment                           ? 1
                                                                                      : 2;
            }
        }
        consumers_bar();
        // (tf32, which does not check, tests != 0: == 1 would change one compare in the
        // SASS of its measured form.)
        if (Checked ? *last_segment == 1 : *last_segment != 0) {
            __threadfence();
            sum_partials<BM, BN, 256>(first, u.nseg, int(threadIdx.x) - 128, p.C, p.problem.ldc, p.problem.M,
                                      p.problem.N, p.problem.alpha, p.problem.beta, int64_t(tm) * BM,
                                      int64_t(tn) * BN);
        } else if (Checked && *last_segment == 2 && threadIdx.x % 128 == 0) {
            list_for_fallback(fallback, int64_t(tm) * BM, int64_t(tn) * BN + 64 * c);
        }
        // The flag is rewritten only after the next segment's first barrier.
    }
#endif
}

}  // namespace cuda
}  // namespace fastgemm
