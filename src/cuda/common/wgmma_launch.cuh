// Host half of the wgmma rungs: prepares operands the TMA cannot read as stored
// (transposed, unaligned rows) or that fp32x3 needs split, builds the tensor maps and
// launches the persistent kernel (wgmma_persistent.cuh). Included by 12_tf32_wgmma.cu
// and 13_fp32x3_wgmma.cu.
#pragma once

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/ladder.hpp"
#include "cuda/common/nonfinite.cuh"
#include "cuda/common/operand_prep.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/common/tma_map.hpp"
#include "cuda/common/wgmma_gemm.cuh"
#include "cuda/common/wgmma_persistent.cuh"

namespace fastgemm {
namespace cuda {

// The three tensor maps a wgmma kernel reads (A, A's small part for fp32x3, B), after
// whatever preparation the operands need, and the layout B's map reads.
struct WgmmaMaps {
    CUtensorMap a, a_small, b;
    BLayout b_layout = BLayout::n_major;
};

// fp32x3: A's pass zeroes `*fallback_count` in stream order (prepare_operand): the count
// of the IEEE fallback's list, which the GEMM queued next appends to.
template <class Cfg>
WgmmaMaps prepare_wgmma_operands(const DeviceOperands& p, cudaStream_t stream, Workspace& ws,
                                 int* fallback_count = nullptr) {
    const Problem& q = p.problem;
    // A: K-major rows for TMA, packed only when it is transposed or its rows are not
    // 16-byte aligned. Its map rounds every value to TF32 on the way to shared memory
    // (TmaElement::tf32): tf32's operand, and fp32x3's big part, whose small part
    // tf32(a - tf32(a)) (the same rounding) a pre-pass writes, packing A on the way
    // when it has to.
    int64_t lda = q.lda;
    const float* a = p.A;
    const float* small = nullptr;
    const int64_t ld_small = round_up4(q.K);
    if (Cfg::X3) {
        const bool pack = q.trans_a || !tma_ready(p.A, q.lda);
        float* packed = pack ? static_cast<float*>(ws.get(0, size_t(q.M) * ld_small * sizeof(float))) : nullptr;
        float* parts = static_cast<float*>(ws.get(1, size_t(q.M) * ld_small * sizeof(float)));
        prepare_operand(p.A, q.lda, q.trans_a, q.M, q.K, packed, parts, ld_small, PrepMode::small, stream,
                        fallback_count);
        if (pack) a = packed, lda = ld_small;
        small = parts;
    } else {
        a = tma_readable(p.A, lda, q.trans_a, q.M, q.K, ws, 0, stream);
    }
    // B: fp32x3 splits each fragment in registers, so it needs the FP32 values as they
    // are; tf32's map rounds them like A's. A transposed B (N x K as stored) is read in
    // place (BLayout::k_major) when its rows start on 16 bytes, else packed.
    const TmaElement b_element = Cfg::X3 ? TmaElement::fp32 : TmaElement::tf32;
    const CUtensorMap map_a =
        make_tma_map_2d(a, q.M, q.K, lda, Cfg::BM, Cfg::BK, TmaLayout::swizzle128, TmaElement::tf32);
    // tf32 reads no small parts: its kernel never uses that map.
    const CUtensorMap map_small = Cfg::X3 ? make_tma_map_2d(small, q.M, q.K, ld_small, Cfg::BM, Cfg::BK) : map_a;
    if (q.trans_b && tma_ready(p.B, q.ldb))
        return {map_a, map_small,
                make_tma_map_2d(p.B, q.N, q.K, q.ldb, Cfg::BN, Cfg::BK, TmaLayout::swizzle128, b_element),
                BLayout::k_major};
    int64_t ldb = q.ldb;
    const float* b = tma_readable(p.B, ldb, q.trans_b, q.K, q.N, ws, 2, stream);
    return {map_a, map_small, make_tma_map_2d(b, q.K, q.N, ldb, Cfg::BK, 32, TmaLayout::swizzle128, b_element),
            BLayout::n_major};
}

// One launch of the kernel for `Schedule`, built for the layout of B's map.
template <class Cfg, WgmmaSchedule Schedule>
void launch_wgmma_kernel(const WgmmaMaps& maps, unsigned blocks, cudaStream_t stream, const DeviceOperands& p,
                         const TailSplit& ts, int* fallback, const SplitKSlabs& slabs) {
    auto kernel = maps.b_layout == BLayout::k_major ? wgmma_persistent_kernel<Cfg, Schedule, BLayout::k_major>
                                                    : wgmma_persistent_kernel<Cfg, Schedule, BLayout::n_major>;
    allow_dynamic_smem(kernel, Cfg::SMEM_BYTES);
    kernel<<<blocks, Cfg::kThreads, Cfg::SMEM_BYTES, stream>>>(maps.a, maps.a_small, maps.b, p, ts, fallback, slabs);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

// Persistent: one block per SM (fewer when there are fewer tiles), each walking its
// share of the tiles (wgmma_persistent.cuh).
template <class Cfg>
void launch_wgmma_persistent(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name) {
    const Problem& q = p.problem;
    require_sm90(name, "wgmma and TMA");
    if (q.M == 0 || q.N == 0) return;
    int dev = 0, sms = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int64_t tiles = ceil_div(q.M, Cfg::BM) * ceil_div(q.N, Cfg::BN);
    // fp32x3: the parts of C (at most two per tile) that the kernel leaves to the IEEE
    // fallback: a count, then (m0, n0) pairs (nonfinite.cuh). Taken before the operand
    // pass, which zeroes the count.
    int* fallback = Cfg::X3 ? fallback_list(ws, 2 * tiles) : nullptr;
    const WgmmaMaps maps = prepare_wgmma_operands<Cfg>(p, stream, ws, fallback);
    const unsigned blocks = unsigned(tiles < sms ? tiles : sms);
    // Stream-K tail (stream_k.cuh) when the last round would leave at least half of the
    // SMs idle: splitting fuller last rounds costs more in partial tiles than it saves
    // (docs/cuda-notes.md#stream-k-tail).
    const TailSplit ts = plan_stream_k_tail(tiles, blocks, ceil_div(q.K, Cfg::BK), blocks / 2,
                                            size_t(Cfg::BM) * Cfg::BN, ws, stream);
    // The whole tiles, then the tail.
    launch_wgmma_kernel<Cfg, WgmmaSchedule::whole_tiles>(maps, blocks, stream, p, ts, fallback, SplitKSlabs{});
    if (ts.tail_tiles > 0)
        launch_wgmma_kernel<Cfg, WgmmaSchedule::stream_k_tail>(maps, blocks, stream, p, ts, fallback, SplitKSlabs{});
    if (Cfg::X3) gemm_ieee_listed(p, fallback, int(2 * tiles), Cfg::BM, 64, stream);
}

// The same product transposed, C^T = op(B)^T op(A)^T: M and N swap, and A and B swap
// roles, each with the opposite transpose flag (op(B)^T is B read as stored when B is
// transposed, and the other way round). C and its row stride are the caller's: only
// the split-K reduction writes C for such a launch, and it writes C^T's element (i, j)
// to C(j, i).
inline DeviceOperands transposed_product(const DeviceOperands& p) {
    DeviceOperands t = p;
    const Problem& o = p.problem;
    Problem& q = t.problem;
    q.M = o.N, q.N = o.M;
    t.A = p.B, q.lda = o.ldb, q.trans_a = !o.trans_b;
    t.B = p.A, q.ldb = o.lda, q.trans_b = !o.trans_a;
    return t;
}

// Split-K (split_k.cuh): every tile's k range in S splits, one work unit each, parked in
// slabs and summed by reduce_split_k in split order; with S = 1 (enough tiles to fill
// the GPU) the whole-tile schedule runs instead. reduce_ktiles: what one partial tile
// costs, in k-tiles of this kernel (plan_split_k). `transpose_of`: p is
// transposed_product(*transpose_of), whose C the reduction writes transposed (even with
// S = 1) and whose regions the IEEE fallback recomputes.
template <class Cfg>
void launch_wgmma_split_k(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name,
                          double reduce_ktiles, const DeviceOperands* transpose_of = nullptr) {
    const Problem& q = p.problem;
    require_sm90(name, "wgmma and TMA");
    if (q.M == 0 || q.N == 0) return;
    int dev = 0, sms = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int64_t tiles = ceil_div(q.M, Cfg::BM) * ceil_div(q.N, Cfg::BN), KT = ceil_div(q.K, Cfg::BK);
    const int S = plan_split_k(tiles, sms, KT, 4, max_split_k(q.M, q.N, Cfg::BM, Cfg::BN), reduce_ktiles);
    if (S <= 1 && !transpose_of) {
        launch_wgmma_persistent<Cfg>(p, stream, ws, name);
        return;
    }
    // fp32x3: the 64 x 64 regions whose sums are not finite go to the IEEE fallback; A's
    // pass zeroes the list's count.
    const int64_t regions = ceil_div(q.M, kSplitKRegion) * ceil_div(q.N, kSplitKRegion);
    int* fallback = Cfg::X3 ? fallback_list(ws, regions) : nullptr;
    const WgmmaMaps maps = prepare_wgmma_operands<Cfg>(p, stream, ws, fallback);
    const SplitKSlabs slabs = reserve_split_k_slabs(ws, S, q.M, q.N, Cfg::BM, Cfg::BN);
    // (Rows are rounded up to the reduction's 64-row regions too: a 16-row tile's slab has
    // more rows than its tiles write, which the reduction never reads.)
    if (slabs.rows < ceil_div(q.M, Cfg::BM) * Cfg::BM || slabs.ld < ceil_div(q.N, Cfg::BN) * Cfg::BN)
        throw KernelError(std::string(name) + ": split-K slabs do not cover the kernel's tiles");
    TailSplit units;  // the kernel's tile count; no tail
    units.full_tiles = int(tiles);
    const int64_t unit_count = tiles * S;
    const unsigned blocks = unsigned(unit_count < sms ? unit_count : sms);
    launch_wgmma_kernel<Cfg, WgmmaSchedule::split_k>(maps, blocks, stream, p, units, nullptr, slabs);
    reduce_split_k(slabs, q.M, q.N, p.C, q.ldc, q.alpha, q.beta, fallback, stream,
                   transpose_of ? SlabsToC::transposed : SlabsToC::same);
    if (Cfg::X3)
        gemm_ieee_listed(transpose_of ? *transpose_of : p, fallback, int(regions), kSplitKRegion, kSplitKRegion, stream);
}

// The few-row tiles (BM <= 64) on a problem with few rows or few columns: at most `most`
// rows run as they are; more rows but at most `most` columns (a tall product, x @ w
// with w a few columns wide) run as C^T = op(B)^T op(A)^T, whose few rows are the
// caller's columns and whose W is the caller's A, read in place when A is stored M x K
// with aligned rows (k_major) or K x M (n_major).
template <class Cfg>
void launch_wgmma_few(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, const char* name,
                      double reduce_ktiles, int64_t most) {
    const Problem& q = p.problem;
    if (q.M <= most) {
        launch_wgmma_split_k<Cfg>(p, stream, ws, name, reduce_ktiles);
    } else if (q.N <= most) {
        launch_wgmma_split_k<Cfg>(transposed_product(p), stream, ws, name, reduce_ktiles, &p);
    } else {
        throw ConstraintError(std::string(name) + ": needs M <= " + std::to_string(most) + " or N <= " +
                              std::to_string(most) + ", got " + q.describe());
    }
}

}  // namespace cuda
}  // namespace fastgemm
