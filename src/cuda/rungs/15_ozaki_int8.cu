// Rung 15, fp32_ozaki on INT8 wgmma: an FP32-accurate product from exact integer products
// of the operands' residues (src/ozaki/ozaki_scheme.hpp; design and guarantee in
// docs/ozaki.md). NOT YET RUN ON A GPU: it is compiled and checked for spills here, and stays
// out of kernel="auto" (auto_candidate = false in ladder_table.cpp) until tests/test_cuda.py
// has passed on an H200 (docs/cuda-kernels.md, "Rung 15").
//
// - Operand pass (common/ozaki_operands.cu): per line of op(A) and op(B) the scale, the seven
//   int8 residue planes (K-major, so one kernel serves every transpose) and the bound terms.
// - Owns: a block owns 128 x 256 tiles of C in turn (persistent, one block per SM, grouped
//   rasterisation); for each tile it runs the K loop once per modulus, seven times.
// - Roles (384 threads): warp 0 produces (one thread issues TMA: a 128 x 128-byte box of A's
//   plane l and a 256 x 128-byte box of B's into a 4-stage ring of 48 KB stages); warpgroups
//   1 and 2 multiply (wgmma m64n256k32 s8 x s8 -> s32, both operands from shared memory,
//   warpgroup c owning rows [64c, 64c + 64) of the tile, 128 accumulators a thread); warps 1-3
//   reconstruct, so that the CRT, the certificate and the stores of one tile overlap the next
//   tile's products. (Reconstruction gets no warpgroup of its own: ptxas compiles every role
//   within the launch's register share, 65536 / threads, and the multipliers' 128
//   accumulators need more than the 128 a 512-thread block leaves.)
// - After each modulus the multipliers reduce their accumulators mod m (exact: step 3 of the
//   scheme) and store the residues, four to a word, in the block's stash in global memory
//   (L2-resident: 8 planes of 32 words x 256 threads, 256 KB a block; each thread writes
//   and later reads its own words, coalesced by thread). K beyond 2^17 is reduced mod m
//   every 1024 k-tiles inside the loop.
// - The reconstruction warps wait for a tile's seven planes, rebuilds every C' (int64),
//   unscales it, sums bound^2 and result^2 per 64 x 64 region, stores the certified regions
//   (alpha c + beta C) and lists the others for the IEEE FP32 kernel of nonfinite.cuh, which
//   runs after this kernel. Lines with NaN or Inf have NaN scales, so their regions are
//   never certified. The stash is handed over with two mbarriers (full: all seven planes of
//   a tile written; free: the reconstruction done with them); modulus 0 alternates between
//   two planes so that the multipliers wait, if at all, only before their second plane.
// The result equals ozaki_reference's (src/cpu/ozaki_reference.cpp) bit for bit wherever
// beta == 0 (the certificate's sums are added in another order, which can change a verdict
// only for a region within 2^-40 of its threshold).
// Constraints: any shape and transposes; an sm_90 GPU.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/hopper.cuh"
#include "cuda/common/launch_checks.hpp"
#include "cuda/common/nonfinite.cuh"
#include "cuda/common/ozaki_operands.cuh"
#include "cuda/common/ozaki_wgmma.cuh"
#include "cuda/common/raster.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/scale_c.cuh"
#include "cuda/ladder.hpp"
#include "ozaki/ozaki_scheme.hpp"

namespace fastgemm {
namespace cuda {

namespace {

namespace oz = fastgemm::ozaki;

struct Ozaki128x256 {
    static constexpr int BM = 128, BN = 256, BK = 128;  // BK in int8 elements: one 128-byte row
    static constexpr int STAGES = 4, kThreads = 384, GROUP = 8;
    static constexpr int RECONSTRUCTORS = 96;  // warps 1-3
    static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int CHUNK_KTILES = int(oz::kExactChunk / BK);  // exact int32 sums per chunk
    static constexpr int MULTIPLIERS = 256;                          // threads of warpgroups 1-2
    static constexpr int WORDS = 32;                                 // stash words a thread, per plane
    static constexpr int PLANE_WORDS = WORDS * MULTIPLIERS;
    static constexpr int SLOTS = oz::kModuli + 1;  // modulus 0 alternates between slots 0 and 7
    static constexpr int LINE_BYTES = (BM + BN) * 3 * 8;  // the tile's rows and columns: inverse, e, n
    static constexpr int SUM_BYTES = 8 * 3 * 2 * 8;        // 8 regions x 3 warps x 2 sums
    static constexpr int BAR_BYTES = (2 * STAGES + 2) * 8;
    static constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + LINE_BYTES + SUM_BYTES + BAR_BYTES;
    static_assert(SMEM_BYTES <= 227 * 1024, "over the sm_90 shared-memory limit per block");
    static_assert(oz::kExactChunk % BK == 0, "chunks of whole k-tiles");
};
using Cfg = Ozaki128x256;

struct OzakiArgs {
    DeviceOperands p;
    const OzakiLine* rows;
    const OzakiLine* cols;
    uint32_t* stash;  // SLOTS x PLANE_WORDS words per block
    int* fallback;    // a count, then (m0, n0) of each region left to the IEEE kernel
    int tiles_m, tiles_n, KT;
};

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
        : "memory");
}

// Barrier among the 96 reconstruction threads (id 1; 0 is __syncthreads).
__device__ __forceinline__ void reconstruction_bar() { asm volatile("bar.sync 1, 96;\n" ::: "memory"); }

// The slot of modulus l of the i-th tile this block handles.
__device__ __forceinline__ int stash_slot(int l, int i) { return l == 0 && (i & 1) ? oz::kModuli : l; }

// x mod m in [-(m-1)/2, (m-1)/2] (odd m) or [-128, 127] (m = 256), exact for every int32 x:
// the canonical residue of oz::symmetric_residue, from FP32 instructions: x = hi 2^16 + lo,
// y = hi (2^16 mod m) + lo is below 2^24 in magnitude, so y, q = rint(y / m) and y - q m are
// exact in FP32; q may be off by one when y / m lies within 2^-7 of a half-integer, which
// the last two selects correct.
struct Modulus {
    int32_t m, c16, half;
    float mf, inv;
};
__device__ __forceinline__ Modulus modulus_constants(int l) {
    const int32_t m = oz::modulus(l);
    return {m, (1 << 16) % m, (m - 1) / 2, float(m), 1.0f / float(m)};
}
__device__ __forceinline__ int32_t residue(int32_t x, const Modulus& md) {
    if (md.m == 256) return int32_t(int8_t(uint8_t(uint32_t(x) & 0xFFu)));
    const float y = float((x >> 16) * md.c16 + (x & 0xFFFF));
    float r = fmaf(-rintf(y * md.inv), md.mf, y);
    r = r > float(md.half) ? r - md.mf : r;
    r = r < -float(md.half) ? r + md.mf : r;
    return int32_t(r);
}

// Byte e of a word of packed residues, sign-extended.
__device__ __forceinline__ int32_t residue_byte(uint32_t word, int e) { return int32_t(int8_t(uint8_t(word >> (8 * e)))); }

__global__ void __launch_bounds__(Cfg::kThreads, 1)
    ozaki_int8_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const OzakiArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = align_smem_1024(smem_raw);
    double* line_data = reinterpret_cast<double*>(smem + STAGES * Cfg::STAGE_BYTES);  // [3][BM + BN]
    double* sums = line_data + 3 * (BM + BN);                                            // [8][3][2]
    uint64_t* full = reinterpret_cast<uint64_t*>(sums + 8 * 3 * 2);
    uint64_t* empty = full + STAGES;
    uint64_t* stash_full = empty + STAGES;
    uint64_t* stash_free = stash_full + 1;

    const Problem& q = args.p.problem;
    const int tiles = args.tiles_m * args.tiles_n, KT = args.KT;
    auto stage_of = [](int it) { return int(unsigned(it) % STAGES); };
    auto phase_of = [](int it) { return (unsigned(it) / STAGES) & 1u; };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8);  // one arrival per multiplier warp
        }
        mbar_init(stash_full, Cfg::MULTIPLIERS);
        mbar_init(stash_free, Cfg::RECONSTRUCTORS);
        mbar_fence_init();
    }
    __syncthreads();

    const int wg = threadIdx.x / 128;
    uint32_t* const stash = args.stash + int64_t(blockIdx.x) * Cfg::SLOTS * Cfg::PLANE_WORDS;

    if (threadIdx.x < 32) {
        // Producer: one thread keeps the ring full over every (tile, modulus, k-tile).
        if (threadIdx.x == 0) {
            int it = 0;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                grouped_tile(tile, args.tiles_m, args.tiles_n, Cfg::GROUP, tm, tn);
                for (int l = 0; l < oz::kModuli; ++l)
                    for (int kt = 0; kt < KT; ++kt, ++it) {
                        const int s = stage_of(it);
                        if (it >= STAGES) mbar_wait(&empty[s], phase_of(it - STAGES));
                        uint8_t* st = smem + s * Cfg::STAGE_BYTES;
                        mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
                        tma_load_3d(st, &map_a, kt * BK, tm * BM, l, &full[s]);
                        tma_load_3d(st + Cfg::A_BYTES, &map_b, kt * BK, tn * BN, l, &full[s]);
                    }
            }
        }
        return;
    }

    if (wg >= 1) {
        // Multipliers: warpgroup c owns rows [64c, 64c + 64) of the tile.
        const int c = wg - 1, tid = threadIdx.x - 128, lane = threadIdx.x % 32;
        uint32_t acc[128];  // the first wgmma of every modulus overwrites it (scale_d = 0)
#pragma unroll
        for (int r = 0; r < 128; ++r) acc[r] = 0;
        int it = 0, i = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++i) {
            for (int l = 0; l < oz::kModuli; ++l) {
                const Modulus md = modulus_constants(l);
                auto release = [&](int done) {
                    if (lane == 0) mbar_arrive(&empty[stage_of(done)]);
                };
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = stage_of(it);
                    mbar_wait(&full[s], phase_of(it));
                    const uint32_t a_addr = smem_addr(smem + s * Cfg::STAGE_BYTES) + c * 64 * BK;
                    const uint32_t b_addr = smem_addr(smem + s * Cfg::STAGE_BYTES + Cfg::A_BYTES);
                    wgmma_fence();
#pragma unroll
                    for (int kk = 0; kk < BK / 32; ++kk)
                        wgmma_m64n256k32_s8(acc, desc_kmajor_sw128(a_addr + 32 * kk),
                                            desc_kmajor_sw128(b_addr + 32 * kk), kt == 0 && kk == 0 ? 0u : 1u);
                    wgmma_commit();
                    wgmma_wait<1>();  // the previous k-tile is done: its stage is free
                    if (kt > 0) release(it - 1);
                    if ((kt + 1) % Cfg::CHUNK_KTILES == 0 && kt + 1 < KT) {
                        // 2^17 products summed: reduce before the next chunk could overflow.
                        wgmma_wait<0>();
#pragma unroll
                        for (int r = 0; r < 128; ++r) {
                            fence_operand(acc[r]);
                            acc[r] = uint32_t(residue(int32_t(acc[r]), md));
                        }
                    }
                }
                wgmma_wait<0>();
                release(it - 1);
#pragma unroll
                for (int r = 0; r < 128; ++r) fence_operand(acc[r]);

                // Residues, four to a word, into this tile's plane for modulus l. Before the
                // second plane, the reconstruction of the previous tile must be done with
                // the shared planes.
                if (l == 1 && i > 0) mbar_wait(stash_free, unsigned(i - 1) & 1u);
                uint32_t* plane = stash + stash_slot(l, i) * Cfg::PLANE_WORDS + tid;
#pragma unroll
                for (int w = 0; w < Cfg::WORDS; ++w) {
                    uint32_t word = 0;
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        word |= uint32_t(uint8_t(int8_t(residue(int32_t(acc[4 * w + e]), md)))) << (8 * e);
                    plane[w * Cfg::MULTIPLIERS] = word;
                }
            }
            mbar_arrive(stash_full);  // this thread's seven planes of the tile are written
        }
        return;
    }

    // Reconstruction (warps 1-3). A region of C (64 x 64) is the words w in [8qr, 8qr + 8) of
    // the 128 multiplier threads of warpgroup c: 1024 units of four elements, unit u (owner
    // u % 128, word 8qr + u / 128) handled by thread u % 96, so that neighbouring threads read
    // neighbouring words. Every sum runs in a fixed order: the verdicts do not vary by run.
    const int t = threadIdx.x - 32, lane = t % 32, warp = t / 32;
    const float alpha = q.alpha, beta = q.beta;
    const bool c_pairs = q.ldc % 2 == 0 && (reinterpret_cast<uintptr_t>(args.p.C) & 7) == 0;
    constexpr int LINES = BM + BN, UNITS = 1024;
    int i = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++i) {
        int tm, tn;
        grouped_tile(tile, args.tiles_m, args.tiles_n, Cfg::GROUP, tm, tn);
        const int64_t m0 = int64_t(tm) * BM, n0 = int64_t(tn) * BN;
        // The tile's lines: rows 0..BM-1, then columns; zeros outside C.
        for (int x = t; x < LINES; x += Cfg::RECONSTRUCTORS) {
            const int64_t at = x < BM ? m0 + x : n0 + (x - BM);
            const bool in = x < BM ? at < q.M : at < q.N;
            const OzakiLine* src = x < BM ? args.rows + at : args.cols + at;
            line_data[x] = in ? src->inverse : 0.0;
            line_data[LINES + x] = in ? src->e : 0.0;
            line_data[2 * LINES + x] = in ? src->n : 0.0;
        }
        reconstruction_bar();
        mbar_wait(stash_full, unsigned(i) & 1u);

        uint32_t certified = 0;  // bit r: region r = 4c + qr (rows 64c.., columns 64qr..)
        for (int r = 0; r < 8; ++r) {
            const int c = r / 4, qr = r % 4;
            double sum_result_sq = 0.0, sum_bound_sq = 0.0;
            for (int u = t; u < UNITS; u += Cfg::RECONSTRUCTORS) {
                const int local = u % 128, owner = 128 * c + local, w = 8 * qr + u / 128;
                const int g = (local % 32) >> 2, tq = local & 3;
                const int row0 = 64 * c + 16 * (local / 32) + g;  // rows row0 and row0 + 8 of the tile
                uint32_t words[oz::kModuli];
#pragma unroll
                for (int l = 0; l < oz::kModuli; ++l)
                    words[l] = stash[stash_slot(l, i) * Cfg::PLANE_WORDS + w * Cfg::MULTIPLIERS + owner];
                float v[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int row = row0 + 8 * (e >> 1), col = 8 * w + 2 * tq + (e & 1);
                    int32_t res[oz::kModuli];
#pragma unroll
                    for (int l = 0; l < oz::kModuli; ++l) res[l] = residue_byte(words[l], e);
                    v[e] = oz::unscale(oz::crt_reconstruct(res), line_data[row], line_data[BM + col]);
                    const double bound =
                        oz::element_error_bound({line_data[LINES + row], line_data[2 * LINES + row]},
                                                {line_data[LINES + BM + col], line_data[2 * LINES + BM + col]}, q.K);
                    if (m0 + row < q.M && n0 + col < q.N) {
                        sum_result_sq += double(v[e]) * double(v[e]);
                        sum_bound_sq += bound * bound;
                    }
                }
                // The results go where residues 1-4 of these elements were, for the stores.
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    stash[stash_slot(1 + e, i) * Cfg::PLANE_WORDS + w * Cfg::MULTIPLIERS + owner] = __float_as_uint(v[e]);
            }
            // The region's sums over the 96 threads: within each warp, then warps 0-2.
#pragma unroll
            for (int s = 16; s >= 1; s /= 2) {
                sum_result_sq += __shfl_xor_sync(0xffffffffu, sum_result_sq, s);
                sum_bound_sq += __shfl_xor_sync(0xffffffffu, sum_bound_sq, s);
            }
            double* slot = sums + r * 6;
            if (lane == 0) slot[2 * warp] = sum_result_sq, slot[2 * warp + 1] = sum_bound_sq;
            reconstruction_bar();
            if (oz::region_certified((slot[1] + slot[3]) + slot[5], (slot[0] + slot[2]) + slot[4], q.K))
                certified |= 1u << r;
        }

        // Certified regions go to C; the others to the IEEE kernel.
        for (int r = 0; r < 8; ++r) {
            if (!(certified >> r & 1u)) continue;
            const int c = r / 4, qr = r % 4;
            for (int u = t; u < UNITS; u += Cfg::RECONSTRUCTORS) {
                const int local = u % 128, owner = 128 * c + local, w = 8 * qr + u / 128;
                const int g = (local % 32) >> 2, tq = local & 3;
                float v[4];
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    v[e] = __uint_as_float(stash[stash_slot(1 + e, i) * Cfg::PLANE_WORDS + w * Cfg::MULTIPLIERS + owner]);
                const int64_t n = n0 + 8 * w + 2 * tq;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int64_t m = m0 + 64 * c + 16 * (local / 32) + g + 8 * h;
                    if (m >= q.M || n >= q.N) continue;
                    float* out = args.p.C + m * q.ldc + n;
                    if (c_pairs && n + 1 < q.N) {
                        const float2 old = beta == 0.0f ? make_float2(0.0f, 0.0f) : *reinterpret_cast<float2*>(out);
                        *reinterpret_cast<float2*>(out) =
                            beta == 0.0f ? make_float2(alpha * v[2 * h], alpha * v[2 * h + 1])
                                         : make_float2(fmaf(alpha, v[2 * h], beta * old.x),
                                                       fmaf(alpha, v[2 * h + 1], beta * old.y));
                    } else {
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (n + e < q.N)
                                out[e] = beta == 0.0f ? alpha * v[2 * h + e] : fmaf(alpha, v[2 * h + e], beta * out[e]);
                    }
                }
            }
        }
        if (t == 0)
            for (int r = 0; r < 8; ++r) {
                const int64_t rm = m0 + 64 * (r / 4), rn = n0 + 64 * (r % 4);
                if (!(certified >> r & 1u) && rm < q.M && rn < q.N) {
                    const int k = atomicAdd(args.fallback, 1);
                    args.fallback[1 + 2 * k] = int(rm);
                    args.fallback[2 + 2 * k] = int(rn);
                }
            }
        mbar_arrive(stash_free);  // this thread is done with the tile's planes
    }
#endif
}

}  // namespace

void launch_ozaki_int8_128x256(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    const Problem& q = p.problem;
    require_sm90("ozaki_int8_128x256", "wgmma and TMA");
    if (q.M == 0 || q.N == 0) return;
    if (q.K == 0 || q.alpha == 0.0f) {  // BLAS quick return: A and B are not read
        scale_c(p.C, q.M, q.N, q.ldc, q.beta, stream);
        return;
    }
    const OzakiOperands ops = prepare_ozaki_operands(p, stream, ws);
    const CUtensorMap map_a = make_residue_map(ops.a_planes, q.M, ops.kp, Cfg::BM);
    const CUtensorMap map_b = make_residue_map(ops.b_planes, q.N, ops.kp, Cfg::BN);
    int dev = 0, sms = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    OzakiArgs args;
    args.p = p;
    args.rows = ops.rows, args.cols = ops.cols;
    args.tiles_m = int(ceil_div(q.M, Cfg::BM)), args.tiles_n = int(ceil_div(q.N, Cfg::BN));
    args.KT = int(ceil_div(q.K, Cfg::BK));
    const int64_t tiles = int64_t(args.tiles_m) * args.tiles_n;
    const unsigned blocks = unsigned(tiles < sms ? tiles : sms);
    args.stash = static_cast<uint32_t*>(ws.get(3, size_t(blocks) * Cfg::SLOTS * Cfg::PLANE_WORDS * sizeof(uint32_t)));
    // The regions of C (64 x 64) the certificate may leave to the IEEE kernel: a count, then
    // (m0, n0) pairs.
    const int64_t regions = ceil_div(q.M, oz::kRegion) * ceil_div(q.N, oz::kRegion);
    args.fallback = static_cast<int*>(ws.get(7, size_t(1 + 2 * regions) * sizeof(int)));
    FASTGEMM_CUDA_CHECK(cudaMemsetAsync(args.fallback, 0, sizeof(int), stream));
    allow_dynamic_smem(ozaki_int8_kernel, Cfg::SMEM_BYTES);
    ozaki_int8_kernel<<<blocks, Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(map_a, map_b, args);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    gemm_ieee_listed(p, args.fallback, int(regions), oz::kRegion, oz::kRegion, stream);
}

}  // namespace cuda
}  // namespace fastgemm
