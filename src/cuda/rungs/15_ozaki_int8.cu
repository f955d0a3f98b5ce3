// Rung 15, fp32_ozaki on INT8 wgmma: an FP32-accurate product from exact integer products
// of the operands' residues (src/ozaki/ozaki_scheme.hpp; design and guarantee in
// docs/ozaki.md). An auto candidate (ladder_table.cpp): the tuning race takes it where it
// beats fp32x3, from about 4096^3 up.
//
// - Operand pass (common/ozaki_operands.cu): per line of op(A) and op(B) the scale, the seven
//   int8 residue planes (K-major, so one kernel serves every transpose) and the bound terms.
// - Owns: a block owns 128 x 256 tiles of C in turn (persistent, one block per SM, grouped
//   rasterisation); for each tile it runs the K loop once per modulus, seven times. Blocks
//   run in clusters of two (four from kQuadClusterTiles tiles on) on vertically adjacent
//   tiles: each loads its own A box and its share of the common B box, multicast to all of
//   them, so that B is read from L2 once per cluster.
// - Roles (384 threads): warp 0 produces (one thread issues TMA: a 128 x 128-byte box of A's
//   plane l and its share of the 256 x 128-byte box of B's into a 4-stage ring of 48 KB
//   stages); warpgroups 1 and 2 multiply (wgmma m64n256k32 s8 x s8 -> s32, both operands
//   from shared memory, warpgroup c owning rows [64c, 64c + 64) of the tile, 128
//   accumulators a thread); warps 1-3 reconstruct, so that the CRT, the certificate and the
//   stores of one tile overlap the next tile's products. (Reconstruction gets no warpgroup of
//   its own: ptxas compiles every role within the launch's register share, 65536 / threads,
//   and the multipliers' 128 accumulators need more than the 128 a 512-thread block leaves.)
// - A stage is refilled once the multipliers of every block of the cluster have released it:
//   each multiplier warp arrives on the empty barrier of its own block and of its partners'.
// - After each modulus the multipliers reduce their accumulators mod m (exact: step 3 of the
//   scheme) and store the residues, four to a word, in the block's stash in global memory
//   (2 x 7 planes of 32 words x 256 threads, 448 KB a block: two tiles' planes, so that one
//   tile is rebuilt while the next one's are written; each thread writes its own words,
//   coalesced by thread). K beyond 2^17 is reduced mod m every 1024 k-tiles inside the loop.
// - The reconstruction warps wait for a tile's seven planes, rebuild every C' (int64),
//   unscale it, sum result^2 per 64 x 64 region (the regions' bounds follow in closed form
//   from sums over their lines), store the results and list the uncertified regions for the
//   IEEE FP32 kernel of nonfinite.cuh, which runs after this kernel and rewrites them. Lines
//   with NaN or Inf have NaN scales, so their regions are never certified. The stash is
//   handed over with two pairs of mbarriers (full: a tile's seven planes written; free: the
//   reconstruction done with them), one pair per half of the stash.
// The result equals ozaki_reference's (src/cpu/ozaki_reference.cpp) bit for bit wherever
// beta == 0 (the certificate's sums are added in another order, which can change a verdict
// only for a region within 2^-40 of its threshold).
// Constraints: any shape and transposes; an sm_90 GPU.
#include <string>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/hopper.cuh"
#include "cuda/common/launch_checks.hpp"
#include "cuda/common/nonfinite.cuh"
#include "cuda/common/ozaki_operands.cuh"
#include "cuda/common/ozaki_residue.cuh"
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
    static constexpr int SLOTS = 2 * oz::kModuli;  // two tiles' planes: one rebuilt while the next is written
    static constexpr int LINE_BYTES = (BM + BN) * 8;   // 1 / f of the tile's rows and columns
    // Six line blocks' bound sums, every reconstruction thread's partial sum per region, verdicts.
    static constexpr int SUM_BYTES = (6 * 6 + 8 * RECONSTRUCTORS + 8) * 8;
    static constexpr int BAR_BYTES = (2 * STAGES + 4) * 8;
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


// The seven planes of the i-th tile this block handles: tiles take turns between the two
// halves of the block's stash.
__device__ __forceinline__ uint32_t* tile_planes(uint32_t* stash, int i) {
    return stash + (i & 1) * oz::kModuli * Cfg::PLANE_WORDS;
}

// x mod m for the accumulators, exact for every int32 x (ozaki_residue.cuh): x = hi 2^17 +
// lo and u = hi (2^17 mod m) + lo, below 2^21 + 2^17 in magnitude. u + 1.5 x 2^23 comes from
// one integer multiply-add on the float's bits (lo | the constant's bits is lo + them, their
// low 22 bits being zero). residue_bits returns the bits of the canonical residue r plus
// 1.5 x 2^23, whose low byte is what the stash packs; for m = 256 the low byte of x is the
// residue, and x is returned. Seven instructions an accumulator.
struct Modulus {
    int32_t m, c17;
    OddModulus odd;
};
__host__ __device__ constexpr Modulus modulus_of(int l) {
    return {oz::modulus(l), symmetric_pow2_mod(17, oz::modulus(l)), odd_modulus(oz::modulus(l))};
}
// A table, so that no modulus's constants are computed (1 / m would be a division with a
// divergent slow path, which ptxas answers by serializing every wgmma of the kernel).
__constant__ const Modulus kModulusConstants[oz::kModuli] = {modulus_of(0), modulus_of(1), modulus_of(2), modulus_of(3),
                                                             modulus_of(4), modulus_of(5), modulus_of(6)};
__device__ __forceinline__ Modulus modulus_constants(int l) { return kModulusConstants[l]; }
__device__ __forceinline__ int32_t residue_bits(int32_t x, const Modulus& md) {
    if (md.m == 256) return x;
    const float y_biased = __int_as_float((x >> 17) * md.c17 + ((x & 0x1FFFF) | kSmallIntMagicBits));
    return odd_residue_bits(y_biased - kSmallIntMagic, y_biased, md.odd);
}
// The residue itself, in [-128, 127].
__device__ __forceinline__ int32_t residue(int32_t x, const Modulus& md) {
    return md.m == 256 ? int32_t(int8_t(uint8_t(uint32_t(x) & 0xFFu))) : residue_bits(x, md) - kSmallIntMagicBits;
}

// The accumulators, reduced mod m, into the thread's 32 words of a stash plane (four residues
// a word, packed by byte permutes). The caller has waited for the modulus's products.
__device__ __forceinline__ void stash_residues(uint32_t (&acc)[128], const Modulus& md, uint32_t* plane) {
#pragma unroll
    for (int r = 0; r < 128; ++r) fence_operand(acc[r]);
#pragma unroll
    for (int w = 0; w < Cfg::WORDS; ++w)
        plane[w * Cfg::MULTIPLIERS] =
            pack_low_bytes(residue_bits(int32_t(acc[4 * w]), md), residue_bits(int32_t(acc[4 * w + 1]), md),
                           residue_bits(int32_t(acc[4 * w + 2]), md), residue_bits(int32_t(acc[4 * w + 3]), md));
}

// C' of one element (oz::crt_reconstruct's integer) from byte e of the seven stash words,
// with every step a full-rate instruction. The residues are biased to u = r + 128 in
// [0, 255] (one xor per word), so that a byte permute extracts u (no sign extension) and
// another one builds the float 2^23 + u (no I2F); S = sum u E_l mod 2^64 takes one wide
// multiply-add of E_l's low word and one 32-bit multiply-add of its high word per modulus;
// the quotient is rounded by a magic-number add (no FRND, F2I). The bias leaves S as a
// constant, 128 sum E_l, and leaves the estimate as 128 sum hi_l (exact: sum u hi_l is a sum
// of multiples of 2^-12 below 2^11, so (sum u hi_l) - 128 sum hi_l is crt_reconstruct's
// exact part to the bit) and 128 sum lo_l, after which the rest differs from
// crt_reconstruct's by less than 2^-20: the estimate stays inside step 5's margin of 2^-13,
// so q is the true quotient there as here, and C' = S - q P is the same integer
// (tests/test_ozaki.py models both estimates with these IEEE operations).
struct CrtBias {
    uint64_t s;
    float hi, lo;
};
__host__ __device__ constexpr CrtBias crt_bias() {
    CrtBias b{0, 0.0f, 0.0f};
    double lo = 0.0;
    for (int l = 0; l < oz::kModuli; ++l) {
        b.s += 128 * oz::crt_basis(l);
        b.hi += 128.0f * oz::quotient_hi(l);
        lo += 128.0 * double(oz::quotient_lo(l));
    }
    b.lo = float(lo);
    return b;
}
__device__ __forceinline__ int64_t crt_from_biased(const uint32_t (&biased)[oz::kModuli], int e) {
    constexpr CrtBias bias = crt_bias();
    uint64_t s = 0;
    uint32_t s_high = 0;
    float exact = 0.0f, rest = 0.0f;
#pragma unroll
    for (int l = 0; l < oz::kModuli; ++l) {
        const uint32_t u = __byte_perm(biased[l], 0u, 0x4440u | uint32_t(e));
        const float uf = __int_as_float(__byte_perm(biased[l], 0x4B000000u, 0x7540u | uint32_t(e))) - 8388608.0f;
        s += uint64_t(u) * uint32_t(oz::crt_basis(l));
        s_high += u * uint32_t(oz::crt_basis(l) >> 32);
        exact = fmaf(uf, oz::quotient_hi(l), exact);
        rest = fmaf(uf, oz::quotient_lo(l), rest);
    }
    s += uint64_t(s_high) << 32;
    const float estimate = (exact - bias.hi) + (rest - bias.lo);
    const int32_t q = __float_as_int(estimate + kSmallIntMagic) - kSmallIntMagicBits;  // rint, |q| < 2^10
    return int64_t(s - bias.s - uint64_t(int64_t(q)) * oz::kP);
}

// The tiles a block handles, in turn. A cluster of CM blocks takes stacks of CM tiles along
// M (grouped rasterisation over the stacks); block `rank` of the cluster takes tile `rank`
// of each stack, and the cluster shares the stack's B tile. Every role of every block of a
// cluster walks the same stacks in the same order, which keeps the ring's phases and the
// stash's hand-overs in step.
template <int CM>
struct TileOrder {
    int stacks, first, step, rank, stacks_m, tiles_n;
    __device__ TileOrder(int tiles_m, int tiles_n_)
        : stacks(((tiles_m + CM - 1) / CM) * tiles_n_),
          first(int(blockIdx.x) / CM),  // clusters are runs of CM consecutive blocks
          step(int(gridDim.x) / CM),
          rank(int(blockIdx.x) % CM),
          stacks_m((tiles_m + CM - 1) / CM),
          tiles_n(tiles_n_) {}
    __device__ void tile(int stack, int& tm, int& tn) const {
        int sm;
        grouped_tile(stack, stacks_m, tiles_n, Cfg::GROUP / CM, sm, tn);
        tm = sm * CM + rank;
    }
};

// The sums over a block of 64 lines from which the error bounds of a region follow in
// closed form. The bound of element (i, j) is e_i a_j + n_i e_j + t, with a_j = K e_j + n_j
// and t = 2^-149 (oz::element_error_bound), so over the rows i and columns j of a region
//   sum bound^2 = S(x^2) T(x^2) + S(y^2) T(y^2) + 2 S(xy) T(xy) + 2t (S(x) T(x) + S(y) T(y))
//                 + t^2 S(1) T(1),
// with (x, y) = (e, n) for rows (S) and (a, e) for columns (T), lines outside C left out.
// Every term is non-negative, so the closed form differs from the element-by-element sum
// only by rounding (relative 2^-45 at most), far inside the certificate's 2^-20 of slack.
struct LineBlockSums {
    double xx, yy, xy, x, y, count;
};
__device__ __forceinline__ double region_bound_sq(const LineBlockSums& s, const LineBlockSums& t) {
    constexpr double tiny = 0x1p-149;
    return fma(s.xx, t.xx, fma(s.yy, t.yy, 2.0 * s.xy * t.xy)) + 2.0 * tiny * fma(s.x, t.x, s.y * t.y) +
           tiny * tiny * s.count * t.count;
}

// Barrier among the reconstruction warps (id 1; 0 is __syncthreads).
__device__ __forceinline__ void reconstruction_bar() { asm volatile("bar.sync 1, 96;\n" ::: "memory"); }

// What the reconstruction reads of a tile besides its stash planes, in shared memory.
struct TileLines {
    double* inverse;        // [BM + BN]: 1 / f of the tile's rows, then of its columns
    LineBlockSums* blocks;  // 2 row blocks, then 4 column blocks, of 64 lines
    double* partial;        // [8][RECONSTRUCTORS]: each thread's sum of result^2 per region
    int* verdicts;          // [8]
};

// The tile's lines (rows 0..BM-1, then columns): 1 / f for every element, and each 64-line
// block's sums for the bounds. Thread t < 96 sums lines t % 16 + 16 k of block t / 16 in
// increasing k; the 16 threads of a block then combine by a fixed tree.
__device__ __forceinline__ void load_tile_lines(const OzakiArgs& args, int64_t m0, int64_t n0, const TileLines& lines,
                                                int t) {
    constexpr int BM = Cfg::BM;
    const Problem& q = args.p.problem;
    const int b = t / 16, part = t % 16;
    LineBlockSums s{0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int k = 0; k < 4; ++k) {
        const int x = 64 * b + part + 16 * k;
        const int64_t at = x < BM ? m0 + x : n0 + (x - BM);
        const bool in = x < BM ? at < q.M : at < q.N;
        const OzakiLine* src = x < BM ? args.rows + at : args.cols + at;
        lines.inverse[x] = in ? src->inverse : 0.0;
        if (!in) continue;
        const oz::LineBound lb = oz::line_bound(src->inverse, src->inexact != 0, int64_t(src->norm1));
        const double e = lb.e, n = lb.n;
        const double xv = x < BM ? e : fma(double(q.K), e, n), yv = x < BM ? n : e;
        s.xx = fma(xv, xv, s.xx), s.yy = fma(yv, yv, s.yy), s.xy = fma(xv, yv, s.xy);
        s.x += xv, s.y += yv, s.count += 1.0;
    }
#pragma unroll
    for (int d = 8; d >= 1; d /= 2) {
        s.xx += __shfl_xor_sync(0xffffffffu, s.xx, d), s.yy += __shfl_xor_sync(0xffffffffu, s.yy, d);
        s.xy += __shfl_xor_sync(0xffffffffu, s.xy, d), s.x += __shfl_xor_sync(0xffffffffu, s.x, d);
        s.y += __shfl_xor_sync(0xffffffffu, s.y, d), s.count += __shfl_xor_sync(0xffffffffu, s.count, d);
    }
    if (part == 0) lines.blocks[b] = s;
}

// Rebuild one tile of C from its seven stash planes, certify its regions and store it, by
// the reconstruction threads t = 0..T-1 (T = 96). The work is split in groups of four
// neighbouring multiplier threads' words (one 16-byte load per plane): group G in
// [0, 2048) is region r = G / 256 (rows 64 (r / 4).., columns 64 (r % 4)..), word
// w = 8 (r % 4) + (G % 256) / 32 of owners 128 (r / 4) + 4 (G % 32) + k, i.e. rows row0 and
// row0 + 8 of the tile and the eight columns 8w..8w + 7, which the thread stores as
// float4s. Thread t takes G = t, t + T, ...; it loads the next group's words before it
// rebuilds the current one's, so that the stash's latency overlaps the arithmetic (a
// thread's loads are latency-bound: four words a load keep four times as many bytes in
// flight as one; docs/ozaki.md). Each thread keeps its sum of result^2 per region (T < 256,
// so it has groups in every region); a region's T partial sums are added in a fixed order,
// so the verdicts do not vary by run. With beta == 0 the results go to C at once (a region
// that fails its certificate is rewritten whole by the IEEE kernel afterwards); with
// beta != 0 C must stay as given until the verdict, so a second pass rebuilds the
// certified regions and stores alpha c + beta C.
__device__ __forceinline__ void rebuild_tile(const OzakiArgs& args, int64_t m0, int64_t n0, const uint32_t* tile_stash,
                                             const TileLines& lines, int t) {
    constexpr int BM = Cfg::BM, GROUPS = 2048, T = Cfg::RECONSTRUCTORS;
    const Problem& q = args.p.problem;
    const float alpha = q.alpha, beta = q.beta;
    const bool c_quads = q.ldc % 4 == 0 && (reinterpret_cast<uintptr_t>(args.p.C) & 15) == 0;
    const double* inverse = lines.inverse;

    auto load_words = [&](int G, uint4 (&words)[oz::kModuli]) {
        const int r = G >> 8, j = G & 255;
        const int at = (8 * (r % 4) + (j >> 5)) * Cfg::MULTIPLIERS + 128 * (r / 4) + 4 * (j & 31);
#pragma unroll
        for (int l = 0; l < oz::kModuli; ++l)
            words[l] = *reinterpret_cast<const uint4*>(tile_stash + l * Cfg::PLANE_WORDS + at);
    };
    // v[h][x]: row row0 + 8h, column col0 + x of the tile. Word k of a plane is owner 4 (G %
    // 32) + k, whose byte e is its accumulator 4w + e: row + 8 (e / 2), column 2k + e % 2.
    auto rebuild = [&](int G, const uint4 (&words)[oz::kModuli], float (&v)[2][8], int& row0, int& col0) {
        const int r = G >> 8, j = G & 255, quad = j & 31;
        row0 = 64 * (r / 4) + 16 * (quad / 8) + quad % 8;
        col0 = 8 * (8 * (r % 4) + (j >> 5));
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            uint32_t biased[oz::kModuli];
#pragma unroll
            for (int l = 0; l < oz::kModuli; ++l) {
                const uint4& q4 = words[l];
                biased[l] = (k == 0 ? q4.x : k == 1 ? q4.y : k == 2 ? q4.z : q4.w) ^ 0x80808080u;
            }
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[e >> 1][2 * k + (e & 1)] = oz::unscale(crt_from_biased(biased, e), inverse[row0 + 8 * (e >> 1)],
                                                         inverse[BM + col0 + 2 * k + (e & 1)]);
        }
    };
    // alpha c (+ beta C) for the group's elements inside C.
    auto store = [&](const float (&v)[2][8], int row0, int col0) {
        const int64_t n = n0 + col0;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t m = m0 + row0 + 8 * h;
            if (m >= q.M) continue;
            float* out = args.p.C + m * q.ldc + n;
            if (c_quads && n + 7 < q.N) {
#pragma unroll
                for (int x = 0; x < 8; x += 4) {
                    float4 o = beta == 0.0f ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : *reinterpret_cast<float4*>(out + x);
                    o.x = beta == 0.0f ? alpha * v[h][x] : fmaf(alpha, v[h][x], beta * o.x);
                    o.y = beta == 0.0f ? alpha * v[h][x + 1] : fmaf(alpha, v[h][x + 1], beta * o.y);
                    o.z = beta == 0.0f ? alpha * v[h][x + 2] : fmaf(alpha, v[h][x + 2], beta * o.z);
                    o.w = beta == 0.0f ? alpha * v[h][x + 3] : fmaf(alpha, v[h][x + 3], beta * o.w);
                    *reinterpret_cast<float4*>(out + x) = o;
                }
            } else {
#pragma unroll
                for (int x = 0; x < 8; ++x)
                    if (n + x < q.N) out[x] = beta == 0.0f ? alpha * v[h][x] : fmaf(alpha, v[h][x], beta * out[x]);
            }
        }
    };

    static_assert(T < GROUPS / 8, "every thread has a group in every region");
    static_assert(T % 8 == 0, "eight threads add a region's partial sums, T / 8 each");
    int region = 0;
    double sum_result_sq = 0.0;
    uint4 words[oz::kModuli];
    load_words(t, words);
    for (int G = t; G < GROUPS; G += T) {
        uint4 next[oz::kModuli];
        if (G + T < GROUPS) load_words(G + T, next);
        if ((G >> 8) != region) {
            lines.partial[region * T + t] = sum_result_sq;
            sum_result_sq = 0.0, region = G >> 8;
        }
        float v[2][8];
        int row0, col0;
        rebuild(G, words, v, row0, col0);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int x = 0; x < 8; ++x)
                if (m0 + row0 + 8 * h < q.M && n0 + col0 + x < q.N) sum_result_sq += double(v[h][x]) * double(v[h][x]);
        if (beta == 0.0f) store(v, row0, col0);
#pragma unroll
        for (int l = 0; l < oz::kModuli; ++l) words[l] = next[l];
    }
    lines.partial[region * T + t] = sum_result_sq;
    reconstruction_bar();
    // Region r's sum: threads 8r..8r+7 add T / 8 partial sums each, then a fixed tree.
    if (t < 64) {
        const int r = t / 8, part = t % 8;
        double s = 0.0;
        for (int k = 0; k < T / 8; ++k) s += lines.partial[r * T + part + 8 * k];
#pragma unroll
        for (int d = 4; d >= 1; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
        if (part == 0) {
            const double bound_sq = region_bound_sq(lines.blocks[r / 4], lines.blocks[2 + r % 4]);
            lines.verdicts[r] = oz::region_certified(bound_sq, s, q.K);
        }
    }
    reconstruction_bar();
    uint32_t certified = 0;  // bit r: region r = 4c + qr (rows 64c.., columns 64qr..)
#pragma unroll
    for (int r = 0; r < 8; ++r) certified |= uint32_t(lines.verdicts[r] != 0) << r;

    if (beta != 0.0f)
        for (int G = t; G < GROUPS; G += T) {
            if (!(certified >> (G >> 8) & 1u)) continue;
            float v[2][8];
            int row0, col0;
            load_words(G, words);
            rebuild(G, words, v, row0, col0);
            store(v, row0, col0);
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
}

// Reconstruction (warps 1-3): for every tile of the block, its lines, then its planes once
// the multipliers have written them; then the planes' half of the stash is handed back.
template <int CM>
__device__ __forceinline__ void reconstruct(const OzakiArgs& args, const TileOrder<CM>& order, const TileLines& lines,
                                            uint32_t* stash, uint64_t* stash_full, uint64_t* stash_free) {
    const int t = threadIdx.x - 32;
    int i = 0;
    for (int stack = order.first; stack < order.stacks; stack += order.step, ++i) {
        int tm, tn;
        order.tile(stack, tm, tn);
        const int64_t m0 = int64_t(tm) * Cfg::BM, n0 = int64_t(tn) * Cfg::BN;
        reconstruction_bar();  // the previous tile's verdicts and stores are done with the lines
        load_tile_lines(args, m0, n0, lines, t);
        reconstruction_bar();
        mbar_wait(&stash_full[i & 1], unsigned(i >> 1) & 1u);
        rebuild_tile(args, m0, n0, tile_planes(stash, i), lines, t);
        mbar_arrive(&stash_free[i & 1]);  // this thread is done with the tile's planes
    }
}

template <int CM>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    ozaki_int8_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const OzakiArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
    constexpr int B_SLICE = Cfg::B_BYTES / CM, BN_SLICE = BN / CM;  // what each block of a cluster loads of B
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = align_smem_1024(smem_raw);
    double* inverse = reinterpret_cast<double*>(smem + STAGES * Cfg::STAGE_BYTES);  // [BM + BN]
    double* sums = inverse + (BM + BN);                                               // Cfg::SUM_BYTES
    uint64_t* full = reinterpret_cast<uint64_t*>(sums + Cfg::SUM_BYTES / 8);
    const TileLines lines{inverse, reinterpret_cast<LineBlockSums*>(sums), sums + 6 * 6,
                          reinterpret_cast<int*>(sums + 6 * 6 + 8 * Cfg::RECONSTRUCTORS)};
    uint64_t* empty = full + STAGES;
    uint64_t* stash_full = empty + STAGES;
    uint64_t* stash_free = stash_full + 2;

    const TileOrder<CM> order(args.tiles_m, args.tiles_n);
    const int KT = args.KT;
    auto stage_of = [](int it) { return int(unsigned(it) % STAGES); };
    auto phase_of = [](int it) { return (unsigned(it) / STAGES) & 1u; };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8 * CM);  // one arrival per multiplier warp of every block of the cluster
        }
        for (int b = 0; b < 2; ++b) {
            mbar_init(&stash_full[b], Cfg::MULTIPLIERS);
            mbar_init(&stash_free[b], Cfg::RECONSTRUCTORS);
        }
        mbar_fence_init();
    }
    __syncthreads();
    if (CM > 1) cluster_sync();  // the peers' barriers exist before anything lands on them

    const int wg = threadIdx.x / 128;
    uint32_t* const stash = args.stash + int64_t(blockIdx.x) * Cfg::SLOTS * Cfg::PLANE_WORDS;

    if (threadIdx.x == 0) {
        // Producer: one thread keeps the ring full over every (tile, modulus, k-tile). Its
        // A box is its own; its slice of B goes to every block of the cluster, so a stage
        // is refilled only once all of them have released it (empty counts their warps).
        int it = 0;
        for (int stack = order.first; stack < order.stacks; stack += order.step) {
            int tm, tn;
            order.tile(stack, tm, tn);
            for (int l = 0; l < oz::kModuli; ++l)
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = stage_of(it);
                    if (it >= STAGES) mbar_wait(&empty[s], phase_of(it - STAGES));
                    uint8_t* st = smem + s * Cfg::STAGE_BYTES;
                    mbar_expect_tx(&full[s], Cfg::STAGE_BYTES);
                    tma_load_3d(st, &map_a, kt * BK, tm * BM, l, &full[s]);
                    if (CM == 1)
                        tma_load_3d(st + Cfg::A_BYTES, &map_b, kt * BK, tn * BN, l, &full[s]);
                    else
                        tma_load_3d_multicast(st + Cfg::A_BYTES + order.rank * B_SLICE, &map_b, kt * BK,
                                              tn * BN + order.rank * BN_SLICE, l, &full[s], uint16_t((1u << CM) - 1));
                }
        }
    } else if (wg >= 1) {
        // Multipliers: warpgroup c owns rows [64c, 64c + 64) of the tile.
        const int c = wg - 1, tid = threadIdx.x - 128, lane = threadIdx.x % 32;
        uint32_t acc[128];  // the first wgmma of every modulus overwrites it (scale_d = 0)
#pragma unroll
        for (int r = 0; r < 128; ++r) acc[r] = 0;
        auto release = [&](int done) {
            if (lane == 0) {
                mbar_arrive(&empty[stage_of(done)]);
#pragma unroll
                for (int peer = 1; peer < CM; ++peer) mbar_arrive_in(&empty[stage_of(done)], (order.rank + peer) % CM);
            }
        };
        int it = 0, i = 0;
        for (int stack = order.first; stack < order.stacks; stack += order.step, ++i) {
            for (int l = 0; l < oz::kModuli; ++l) {
                const Modulus md = modulus_constants(l);
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
                // Residues into this tile's plane for modulus l. Tiles take turns between the
                // two halves of the stash: before the first plane, the reconstruction of the
                // tile two back must be done with this half.
                if (l == 0 && i >= 2) mbar_wait(&stash_free[i & 1], unsigned((i >> 1) - 1) & 1u);
                stash_residues(acc, md, tile_planes(stash, i) + l * Cfg::PLANE_WORDS + tid);
            }
            mbar_arrive(&stash_full[i & 1]);  // this thread's seven planes of the tile are written
        }
    } else if (threadIdx.x >= 32) {
        reconstruct<CM>(args, order, lines, stash, stash_full, stash_free);
    }
    if (CM > 1) cluster_sync();  // no block leaves while a peer may still signal its barriers
#endif
}

}  // namespace

// The persistent kernel with clusters of CM blocks: as many clusters as fit at once (one
// block per SM), at most one per stack of tiles.
template <int CM>
void launch_residue_products(const OzakiOperands& ops, OzakiArgs args, cudaStream_t stream, Workspace& ws) {
    const Problem& q = args.p.problem;
    const CUtensorMap map_a = make_residue_map(ops.a_planes, q.M, ops.kp, Cfg::BM);
    const CUtensorMap map_b = make_residue_map(ops.b_planes, q.N, ops.kp, Cfg::BN / CM);
    auto* kernel = ozaki_int8_kernel<CM>;
    const int64_t clusters = resident_clusters(kernel, Cfg::kThreads, Cfg::SMEM_BYTES, CM);
    if (clusters < 1) throw KernelError("ozaki_int8_128x256: no cluster of " + std::to_string(CM) + " blocks fits");
    const int64_t stacks = ceil_div(args.tiles_m, CM) * int64_t(args.tiles_n);
    const unsigned blocks = unsigned(CM * (stacks < clusters ? stacks : clusters));
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = CM, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(Cfg::kThreads);
    config.dynamicSmemBytes = Cfg::SMEM_BYTES;
    config.stream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
    args.stash = static_cast<uint32_t*>(ws.get(3, size_t(blocks) * Cfg::SLOTS * Cfg::PLANE_WORDS * sizeof(uint32_t)));
    FASTGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, map_a, map_b, args));
}

namespace {

// Clusters of four blocks share each B tile among four SMs instead of two: a quarter of B's
// L2 reads per block instead of half, at the price of four blocks waiting on each stage
// instead of two. Measured, it pays only on the largest problems (docs/ozaki.md, "Cluster
// size"): from kQuadClusterTiles tiles of C on, 16384^2 and up for squares.
constexpr int64_t kQuadClusterTiles = 8192;

// The rung with clusters of `cluster` blocks (2 or 4) along M; a single row of tiles has no
// partner and runs without clusters.
void run_ozaki_int8(const char* name, const DeviceOperands& p, cudaStream_t stream, Workspace& ws, int cluster,
                    OperandPass pass = OperandPass::two_kernels) {
    const Problem& q = p.problem;
    require_sm90(name, "wgmma and TMA");
    if (q.M == 0 || q.N == 0) return;
    if (q.K == 0 || q.alpha == 0.0f) {  // BLAS quick return: A and B are not read
        scale_c(p.C, q.M, q.N, q.ldc, q.beta, stream);
        return;
    }
    const OzakiOperands ops = prepare_ozaki_operands(p, stream, ws, pass);
    OzakiArgs args;
    args.p = p;
    args.rows = ops.rows, args.cols = ops.cols;
    args.tiles_m = int(ceil_div(q.M, Cfg::BM)), args.tiles_n = int(ceil_div(q.N, Cfg::BN));
    args.KT = int(ceil_div(q.K, Cfg::BK));
    // The regions of C (64 x 64) the certificate may leave to the IEEE kernel: a count, then
    // (m0, n0) pairs.
    const int64_t regions = ceil_div(q.M, oz::kRegion) * ceil_div(q.N, oz::kRegion);
    args.fallback = fallback_list(ws, regions);
    FASTGEMM_CUDA_CHECK(cudaMemsetAsync(args.fallback, 0, sizeof(int), stream));
    if (args.tiles_m == 1)
        launch_residue_products<1>(ops, args, stream, ws);
    else if (cluster == 4)
        launch_residue_products<4>(ops, args, stream, ws);
    else
        launch_residue_products<2>(ops, args, stream, ws);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    gemm_ieee_listed(p, args.fallback, int(regions), oz::kRegion, oz::kRegion, stream);
}

// Clusters of four for the largest problems, of two below.
int cluster_for(const Problem& q) {
    const int64_t tiles_m = ceil_div(q.M, Cfg::BM), tiles = tiles_m * ceil_div(q.N, Cfg::BN);
    return tiles >= kQuadClusterTiles && tiles_m >= 4 ? 4 : 2;
}

}  // namespace

void launch_ozaki_int8_128x256(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    run_ozaki_int8("ozaki_int8_128x256", p, stream, ws, cluster_for(p.problem));
}

void launch_ozaki_int8_128x256_fused_rows(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    run_ozaki_int8("ozaki_int8_128x256_fused_rows", p, stream, ws, cluster_for(p.problem), OperandPass::fused_rows);
}

void launch_ozaki_int8_128x256_resident(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    run_ozaki_int8("ozaki_int8_128x256_resident", p, stream, ws, cluster_for(p.problem), OperandPass::resident);
}

void launch_ozaki_int8_128x256_c4(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    run_ozaki_int8("ozaki_int8_128x256_c4", p, stream, ws, 4);
}

}  // namespace cuda
}  // namespace fastgemm
