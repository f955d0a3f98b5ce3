// float4 building blocks of the vectorized step-4 rungs (04_coarse_2d_vec4*.metal): device
// loads and stores of four consecutive elements with a scalar fallback, the threadgroup tile
// layouts those rungs compare, the staging of one K-step's tiles, and the per-thread TM x TN
// multiply on float4 registers.
//
// Alignment. MSL requires a pointer to be aligned to its pointee type, so a device float4
// access needs a 16-byte boundary. The ladder host binds every buffer at offset 0 of an
// MTLBuffer (page-aligned), and so does metal-emu, hence element (r, c) of a stored matrix with
// row stride ld lies on a 16-byte boundary exactly when ld % 4 == 0 and c % 4 == 0. The
// kernels test ld % 4 once per dispatch (a uniform branch: lda/ldb/ldc are not shape
// constraints fastgemm can register) and start every group of four at a column that is a
// multiple of 4; a group that crosses the matrix edge, or any group of a matrix whose ld is
// not a multiple of 4, is read element by element. Hence: any shape, any leading dimension.
// Under metal-emu every float4 device access is checked for alignment (fgemu::check_aligned).
//
// Threadgroup tiles are float4 arrays (aligned for float4 access on every compiler):
//   As = op(A)^T, BK rows of BM floats (so the inner loop reads TM consecutive m at one k),
//   Bs = op(B),   BK rows of BN floats,
// each row padded to a stride of Layout::a_stride4 / b_stride4 float4s, and the float4 that
// holds columns 4*n4..4*n4+3 of a Bs row stored in slot Layout::b_slot(n4).
// Scalar scatters into a float4 tile go through a float view of it: writing one component of
// a threadgroup float4 (`As[i][c] = x`) may compile to a load-modify-store of all 16 bytes,
// which races with the threads writing the other three components.
#pragma once

#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

#if defined(__METAL_EMU__)  // metal-emu's <metal_stdlib> provides fgemu::check_aligned
#define GEMM_CHECK_FLOAT4_ALIGNED(ptr) ::fgemu::check_aligned((ptr), 16, "float4 device access")
#else
#define GEMM_CHECK_FLOAT4_ALIGNED(ptr)
#endif

// ---- device memory ---------------------------------------------------------------------

// X(r, c..c+3) of a stored rows x cols matrix with row stride ld, zero outside it; c % 4 == 0.
// vec_ok (ld % 4 == 0) allows one float4 load when all four elements exist.
inline float4 gemm_load4_or0(device const float* X, uint ld, uint rows, uint cols, uint r,
                             uint c, bool vec_ok) {
    if (r >= rows) return float4(0.0f);
    device const float* row = X + r * ld;
    if (vec_ok && c + 4 <= cols) {
        GEMM_CHECK_FLOAT4_ALIGNED(row + c);
        return *reinterpret_cast<device const float4*>(row + c);
    }
    float4 v = float4(0.0f);
    for (uint q = 0; q < 4; ++q)
        if (c + q < cols) v[q] = row[c + q];
    return v;
}

// C(i, j..j+3) = alpha * acc + beta * C(i, j..j+3) for the columns inside C; j % 4 == 0.
// vec_ok (ldc % 4 == 0) allows one float4 access when all four columns exist.
inline void gemm_store4_checked(device float* C, constant GemmParams& p, uint i, uint j,
                                float4 acc, bool vec_ok) {
    if (i >= p.M) return;
    if (vec_ok && j + 4 <= p.N) {
        device float* c = C + i * p.ldc + j;
        GEMM_CHECK_FLOAT4_ALIGNED(c);
        device float4* c4 = reinterpret_cast<device float4*>(c);
        *c4 = (p.beta == 0.0f) ? p.alpha * acc : p.alpha * acc + p.beta * *c4;
        return;
    }
    for (uint q = 0; q < 4; ++q) gemm_store_checked(C, p, i, j + q, acc[q]);
}

// ---- threadgroup tile layouts --------------------------------------------------------------

// Dense rows: stride BM/4 and BN/4 float4s, Bs slot = column group.
template <uint BM, uint BN>
struct TileLayoutDense {
    static constant constexpr const uint a_stride4 = BM / 4;
    static constant constexpr const uint b_stride4 = BN / 4;
    static uint b_slot(uint n4) { return n4; }
};

// Every row padded by one float4, and the Bs column groups XOR-swizzled:
// slot = n4 ^ bit 3 of n4 (a permutation inside each row, any power-of-two BN >= 8).
// Bank model assumed (Apple does not publish one): 32 banks of 4 bytes, a float4 access served
// in as few 128-byte passes as its distinct addresses allow.
//  - pad: the transposing scatter (A not transposed, B transposed) writes rows k, k+4, ... at
//    once; with stride BM+4 (BN+4) floats rows k and k+4 start 16 banks apart instead of 0
//    (conflict-free at BK 8; at BK 16 rows k and k+8 still share banks: 2-way, not 4-way).
//  - swizzle: with TN = 8 the 16 threads of a row of threads read column groups 0, 2, ..., 30
//    of one Bs row; densely those hit only the even 16-byte bank groups (4 passes), swizzled
//    the even and the odd ones (2 passes, the minimum for 256 bytes). With TN = 4 both are
//    2 passes.
template <uint BM, uint BN>
struct TileLayoutPadSwizzle {
    static constant constexpr const uint a_stride4 = BM / 4 + 1;
    static constant constexpr const uint b_stride4 = BN / 4 + 1;
    static uint b_slot(uint n4) { return n4 ^ ((n4 >> 3) & 1u); }
};

// ---- staging one K-step ------------------------------------------------------------------
// The op(A) tile is BM x BK (rows row0.., columns k0..) and the op(B) tile BK x BN (rows k0..,
// columns col0..). Each is read in float4 groups along the stored matrix's contiguous axis:
// op(A) along k (along m when trans_a), op(B) along n (along k when trans_b). Group e of a
// stored R x W tile starts at column (e % (W/4)) * 4 of row e / (W/4); consecutive threads take
// consecutive groups of one row. Every thread loads NA = BM*BK/(4*THREADS) groups of A and
// NB = BK*BN/(4*THREADS) of B, groups tid, tid + THREADS, ...

template <uint W>
inline uint2 tile_group(uint e) {  // (column, row) in the stored tile, W columns wide
    return uint2((e % (W / 4)) * 4, e / (W / 4));
}

template <uint BM, uint BK, uint THREADS>
inline void load_a_groups(device const float* A, constant GemmParams& p, uint row0, uint k0,
                          uint tid, bool vec_a, thread float4* regs) {
    for (uint r = 0; r < BM * BK / (4 * THREADS); ++r) {
        const uint e = tid + r * THREADS;
        if (p.trans_a) {  // stored K x M: four consecutive m at one k
            const uint2 g = tile_group<BM>(e);
            regs[r] = gemm_load4_or0(A, p.lda, p.K, p.M, k0 + g.y, row0 + g.x, vec_a);
        } else {          // stored M x K: four consecutive k at one m
            const uint2 g = tile_group<BK>(e);
            regs[r] = gemm_load4_or0(A, p.lda, p.M, p.K, row0 + g.y, k0 + g.x, vec_a);
        }
    }
}

template <uint BM, uint BK, uint THREADS, class Layout>
inline void store_a_groups(threadgroup float4* As, constant GemmParams& p, uint tid,
                           const thread float4* regs) {
    threadgroup float* As1 = reinterpret_cast<threadgroup float*>(As);
    for (uint r = 0; r < BM * BK / (4 * THREADS); ++r) {
        const uint e = tid + r * THREADS;
        if (p.trans_a) {  // already along m: one float4 store into row k
            const uint2 g = tile_group<BM>(e);
            As[g.y * Layout::a_stride4 + g.x / 4] = regs[r];
        } else {          // along k: transpose into four rows at column m
            const uint2 g = tile_group<BK>(e);
            for (uint q = 0; q < 4; ++q)
                As1[(g.x + q) * (4 * Layout::a_stride4) + g.y] = regs[r][q];
        }
    }
}

template <uint BK, uint BN, uint THREADS>
inline void load_b_groups(device const float* B, constant GemmParams& p, uint k0, uint col0,
                          uint tid, bool vec_b, thread float4* regs) {
    for (uint r = 0; r < BK * BN / (4 * THREADS); ++r) {
        const uint e = tid + r * THREADS;
        if (p.trans_b) {  // stored N x K: four consecutive k at one n
            const uint2 g = tile_group<BK>(e);
            regs[r] = gemm_load4_or0(B, p.ldb, p.N, p.K, col0 + g.y, k0 + g.x, vec_b);
        } else {          // stored K x N: four consecutive n at one k
            const uint2 g = tile_group<BN>(e);
            regs[r] = gemm_load4_or0(B, p.ldb, p.K, p.N, k0 + g.y, col0 + g.x, vec_b);
        }
    }
}

template <uint BK, uint BN, uint THREADS, class Layout>
inline void store_b_groups(threadgroup float4* Bs, constant GemmParams& p, uint tid,
                           const thread float4* regs) {
    threadgroup float* Bs1 = reinterpret_cast<threadgroup float*>(Bs);
    for (uint r = 0; r < BK * BN / (4 * THREADS); ++r) {
        const uint e = tid + r * THREADS;
        if (p.trans_b) {  // along k: transpose into four rows at column n
            const uint2 g = tile_group<BK>(e);
            const uint n = g.y, slot = Layout::b_slot(n / 4);
            for (uint q = 0; q < 4; ++q)
                Bs1[(g.x + q) * (4 * Layout::b_stride4) + 4 * slot + n % 4] = regs[r][q];
        } else {          // already along n: one float4 store into row k
            const uint2 g = tile_group<BN>(e);
            Bs[g.y * Layout::b_stride4 + Layout::b_slot(g.x / 4)] = regs[r];
        }
    }
}

// ---- the per-thread product ----------------------------------------------------------------
// acc[i * (TN/4) + j] holds C(tRow + i, tCol + 4j .. tCol + 4j + 3). Per k: TM/4 float4 reads
// of As (TM consecutive m) and TN/4 of Bs, then TM * TN/4 float4 multiply-adds.
template <uint BK, uint TM, uint TN, class Layout>
inline void multiply_tiles(const threadgroup float4* As, const threadgroup float4* Bs, uint tRow,
                           uint tCol, thread float4* acc) {
    for (uint k = 0; k < BK; ++k) {
        float4 a[TM / 4], b[TN / 4];
        for (uint i = 0; i < TM / 4; ++i) a[i] = As[k * Layout::a_stride4 + tRow / 4 + i];
        for (uint j = 0; j < TN / 4; ++j)
            b[j] = Bs[k * Layout::b_stride4 + Layout::b_slot(tCol / 4 + j)];
        for (uint i = 0; i < TM; ++i)
            for (uint j = 0; j < TN / 4; ++j) acc[i * (TN / 4) + j] += a[i / 4][i % 4] * b[j];
    }
}
