// The Hopper tensor-core GEMM behind rungs 11 (tf32_wgmma) and 12 (fp32x3_wgmma): the
// per-tile design, in its first form (one block per output tile, C stored straight from
// the accumulators). The rungs now run wgmma_persistent.cuh, which keeps this tile's
// roles, layouts and fragment mapping and reuses wgmma_rs / Parity from here; this
// kernel stays as the reference the persistent one was measured against.
//
// Roles are swapped so that both operands are read in the layout they are stored in:
// wgmma computes D = Aw * Bw with Aw = B^T (n x k, from registers) and Bw = A^T
// (k x m, from shared memory). TF32 wgmma reads shared operands only K-major; A (row-
// major M x K) is K-major as stored, so TMA brings BM x 32 tiles of it straight in
// (128-byte rows, 128-byte swizzle). B (row-major K x N) is N-major, which wgmma cannot
// read from shared memory for TF32, so it travels as the register operand instead:
// TMA brings 32 x 128 tiles of it (four 32x32 boxes, 128-byte swizzle) and each
// consumer thread loads its TF32 fragment with scalar shared loads.
//
// Block: 384 threads = 1 producer warpgroup (one thread issues TMA) + 2 consumer
// warpgroups. The block owns BM (m) x 128 (n) of C; consumer warpgroup c owns n rows
// [64c, 64c+64) of D^T, i.e. 64 columns of C, as one m64nBMk8 accumulator (BM/2
// registers per thread). Stages of shared memory form a ring guarded by mbarriers
// (full: TMA bytes landed; empty: both consumers done with it).
//
// Which n a fragment row holds is ours to choose (D's rows are just relabelled in the
// epilogue): row g + 8h of warp w maps to n = 32(w>>1) + 8(w&1) + 16(g>>2) + 4h + (g&3),
// which makes the 32 lanes' scalar loads hit 32 distinct banks under the swizzle.
//
// fp32x3 (X3): A arrives pre-split into TF32 big and small parts (two tiles per stage);
// B's fragment is split in registers (big = rna(b), small = rna(b - big)); three
// products big*big + big*small + small*big per k8 step go into a per-k-tile tensor-core
// accumulator that is then added into the FP32 result with round-to-nearest adds.
//
// Per consumer warpgroup and k-tile: wait for the stage, issue the k-tile's wgmmas,
// load the next k-tile's B fragments while they run, wait, release the stage. The two
// consumer warpgroups interleave, so one's wgmmas cover the other's bookkeeping.
//
// Any M, N, K: TMA zero-fills out-of-range boxes and the epilogue checks bounds. Needs
// 16-byte aligned rows (the launcher packs an operand that is not, or is transposed).
#pragma once

#include "cuda/hopper.cuh"
#include "cuda/raster.cuh"
#include "cuda/wgmma_ops.cuh"

namespace fastgemm {
namespace cuda {

template <int BM_, bool X3_>
struct WgmmaConfig {
    static constexpr int BM = BM_, BN = 128, BK = 32;
    static constexpr bool X3 = X3_;
    static constexpr int kThreads = 384;
    static constexpr int A_BYTES = BM * BK * 4;
    static constexpr int B_BOX_BYTES = 32 * BK * 4;  // one 32 (n) x 32 (k) box
    static constexpr int B_BYTES = BK * BN * 4;
    static constexpr int STAGE_BYTES = (X3 ? 2 : 1) * A_BYTES + B_BYTES;
    static constexpr int STAGES_FIT = (225 * 1024) / STAGE_BYTES;
    static constexpr int STAGES = STAGES_FIT > 6 ? 6 : STAGES_FIT;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static constexpr int ACC = BM / 2;  // accumulator registers per consumer thread
    // fp32x3 (X3) adds each k-tile's products into a fresh tensor-core accumulator and then
    // into an FP32 register accumulator with ordinary (round-to-nearest) adds: the
    // tensor cores' own accumulation rounds towards zero, and over K/8 x 3 steps that
    // bias grew the error linearly with K (2.9e-5 at K = 4096, measured).
    static_assert(STAGES >= 2, "need at least two stages");
};

__device__ __forceinline__ void wgmma_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n256k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n128k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}

template <int N>
struct Parity {
    static constexpr int value = N;
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_a_small,
                      const __grid_constant__ CUtensorMap map_b, GemmArgs p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Cfg::STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tiles_m = int(ceil_div(p.M, BM)), tiles_n = int(ceil_div(p.N, BN));
    int tm, tn;
    grouped_tile(blockIdx.x, tiles_m, tiles_n, 8, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int KT = int(ceil_div(p.K, BK));

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
        // Producer: one thread keeps the ring full.
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
                uint8_t* st = smem + s * Cfg::STAGE_BYTES;
                mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
                tma_load_2d(st, &map_a, kt * BK, m0, &full[s]);
                if (Cfg::X3) tma_load_2d(st + Cfg::A_BYTES, &map_a_small, kt * BK, m0, &full[s]);
                uint8_t* bt = st + (Cfg::X3 ? 2 : 1) * Cfg::A_BYTES;
#pragma unroll
                for (int j = 0; j < BN / 32; ++j)
                    tma_load_2d(bt + j * Cfg::B_BOX_BYTES, &map_b, n0 + 32 * j, kt * BK, &full[s]);
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1;  // consumer index: n rows [64c, 64c + 64)
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;

    // Byte offset in the B tile of this thread's fragment element (row half h, k half q)
    // at k8 step 0; step kk adds kk * 8 rows of 128 bytes.
    uint32_t frag_off[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int box = 2 * c + (warp >> 1);
            const int chunk = 2 * (warp & 1) + 4 * (g >> 2) + h;
            const int k = t + 4 * q;
            frag_off[h][q] = box * Cfg::B_BOX_BYTES + k * 128 + ((chunk ^ k) * 16) + (g & 3) * 4;
        }

    float d[Cfg::ACC];                          // the result (FP32 registers)
    float dt[Cfg::X3 ? Cfg::ACC : 1];           // one k-tile's products (fp32x3)
#pragma unroll
    for (int i = 0; i < Cfg::ACC; ++i) d[i] = 0.0f;

    // Fragments of B for one k-tile, double-buffered: while the wgmmas of tile kt read
    // buffer kt&1, the fragments of tile kt+1 are loaded into the other one.
    constexpr int KK = BK / 8;
    uint32_t fb[2][KK][4];                        // TF32 (big part for fp32x3)
    uint32_t fs[2][Cfg::X3 ? KK : 1][4];          // small part (fp32x3)

    auto load_fragments = [&](auto parity, int kt) {
        constexpr int P = decltype(parity)::value;
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        const uint8_t* bt = smem + s * Cfg::STAGE_BYTES + (Cfg::X3 ? 2 : 1) * Cfg::A_BYTES;
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                // a0: (h0, q0), a1: (h1, q0), a2: (h0, q1), a3: (h1, q1)
                const float v = *reinterpret_cast<const float*>(bt + frag_off[r & 1][r >> 1] + kk * 1024);
                fb[P][kk][r] = to_tf32(v);
                if (Cfg::X3) fs[P][kk][r] = to_tf32(v - __uint_as_float(fb[P][kk][r]));
            }
    };

    auto tile_step = [&](auto parity, int kt) {
        constexpr int P = decltype(parity)::value;
        const int s = kt % STAGES;
        const uint32_t a_addr = smem_addr(smem + s * Cfg::STAGE_BYTES);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) {
            const uint64_t desc = desc_kmajor_sw128(a_addr + kk * 32);
            if constexpr (Cfg::X3) {
                const uint64_t desc_small = desc_kmajor_sw128(a_addr + Cfg::A_BYTES + kk * 32);
                wgmma_rs(dt, fs[P][kk], desc, kk == 0 ? 0u : 1u);  // kk == 0 restarts dt
                wgmma_rs(dt, fb[P][kk], desc_small, 1u);
                wgmma_rs(dt, fb[P][kk], desc, 1u);
            } else {
                wgmma_rs(d, fb[P][kk], desc, 1u);
            }
        }
        wgmma_commit();
        if (kt + 1 < KT) load_fragments(Parity<P ^ 1>{}, kt + 1);  // overlaps the wgmmas
        wgmma_wait<0>();
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                fence_operand(fb[P][kk][r]);
                if (Cfg::X3) fence_operand(fs[P][kk][r]);
            }
        if (lane == 0) mbar_arrive(&empty[s]);
        if constexpr (Cfg::X3) {
#pragma unroll
            for (int i = 0; i < Cfg::ACC; ++i) {
                fence_operand(dt[i]);
                d[i] += dt[i];
            }
        }
    };

    if (KT > 0) load_fragments(Parity<0>{}, 0);
    for (int kt = 0; kt < KT; kt += 2) {
        tile_step(Parity<0>{}, kt);
        if (kt + 1 < KT) tile_step(Parity<1>{}, kt + 1);
    }
#pragma unroll
    for (int i = 0; i < Cfg::ACC; ++i) fence_operand(d[i]);

    // Epilogue: d[4j + e] is D^T(row g + 8(e>>1), col 8j + 2t + (e&1)) = C(m, n).
#pragma unroll
    for (int e2 = 0; e2 < 2; ++e2) {
        const int64_t n = n0 + 64 * c + 32 * (warp >> 1) + 8 * (warp & 1) + 16 * (g >> 2) + 4 * e2 + (g & 3);
        if (n >= p.N) continue;
#pragma unroll
        for (int j = 0; j < BM / 8; ++j)
#pragma unroll
            for (int e1 = 0; e1 < 2; ++e1) {
                const int64_t m = m0 + 8 * j + 2 * t + e1;
                if (m < p.M) store_c(p, m, n, d[4 * j + 2 * e2 + e1]);
            }
    }
#endif
}

}  // namespace cuda
}  // namespace fastgemm
