// The cuda ladder table (see ladder.hpp): every kernel's entry, in ladder order.
#include <string>
#include <utility>

#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

using Params = std::vector<std::pair<std::string, int64_t>>;

// The rules of a tiled rung without bounds checks: whole tiles, no transposes.
std::vector<Constraint> whole_tiles(int bm, int bn, int bk) {
    return {Constraint::multiple_of('M', bm), Constraint::multiple_of('N', bn), Constraint::multiple_of('K', bk),
            Constraint::no_trans_a(), Constraint::no_trans_b()};
}

LadderEntry rung(std::string name, int step, Precision precision, Launcher launch, const std::string& file,
                 std::string description, Params params) {
    LadderEntry e;
    e.name = std::move(name);
    e.ladder_step = step;
    e.precision = precision;
    e.launch = launch;
    e.source = "src/cuda/rungs/" + file;
    e.description = std::move(description);
    e.params = std::move(params);
    return e;
}

LadderEntry with_constraints(LadderEntry e, std::vector<Constraint> c) {
    e.constraints = std::move(c);
    return e;
}
LadderEntry hopper_only(LadderEntry e) {
    e.min_sm = 90;
    return e;
}
LadderEntry auto_candidate(LadderEntry e) {
    e.auto_candidate = true;
    return e;
}

std::vector<LadderEntry> build() {
    const Precision fp32 = Precision::fp32, tf32 = Precision::tf32, fp32x3 = Precision::fp32x3;
    std::vector<LadderEntry> l;
    auto add = [&](LadderEntry e) { l.push_back(std::move(e)); };

    // Rungs 1-2 pay per element far more than a real GEMM: benchmarks skip them above
    // 2e11 FLOPs (4096^3 is 1.4e11) unless asked.
    LadderEntry naive = rung("naive", 1, fp32, launch_naive, "01_naive.cu",
                             "one thread per C element, threads down a column (uncoalesced)", {{"block", 32}});
    naive.bench_flops_cap = 2.0e11;
    add(naive);
    LadderEntry coalesced = rung("coalesced", 2, fp32, launch_coalesced, "02_coalesced.cu",
                                 "one thread per C element, threads along a row (coalesced)", {{"block", 32}});
    coalesced.bench_flops_cap = 2.0e11;
    add(coalesced);
    add(rung("smem_tiling_32x32", 3, fp32, launch_smem_tiling_32x32, "03_smem_tiling.cu",
             "32x32 shared-memory tiles, one output per thread", {{"BM", 32}, {"BN", 32}, {"BK", 32}}));
    add(with_constraints(rung("blocktile_1d_64x64", 4, fp32, launch_blocktile_1d_64x64, "04_blocktile_1d.cu",
                              "64x64 block tile, 8 outputs per thread down a column",
                              {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}}),
                         whole_tiles(64, 64, 8)));
    add(with_constraints(rung("blocktile_2d_128x128", 5, fp32, launch_blocktile_2d_128x128, "05_blocktile_2d.cu",
                              "128x128 block tile, 8x8 outputs per thread",
                              {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}),
                         whole_tiles(128, 128, 8)));
    add(with_constraints(rung("vectorized_128x128", 6, fp32, launch_vectorized_128x128, "06_vectorized.cu",
                              "2D tiling with float4 loads/stores and a transposed A tile",
                              {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}),
                         whole_tiles(128, 128, 8)));
    add(with_constraints(rung("bank_conflict_free_128x128", 7, fp32, launch_bank_conflict_free_128x128,
                              "07_bank_conflict_free.cu",
                              "vectorized 2D tiling with conflict-free shared layouts (split columns, padded A)",
                              {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}),
                         whole_tiles(128, 128, 8)));
    add(with_constraints(rung("warptiling_128x128", 8, fp32, launch_warptiling_128x128, "08_warptiling.cu",
                              "warp tiles of 64x32, lanes 8x4 with 4x4 groups, broadcast reads",
                              {{"BM", 128}, {"BN", 128}, {"BK", 16}, {"WM", 64}, {"WN", 32}, {"TM", 8}, {"TN", 8}}),
                         whole_tiles(128, 128, 16)));

    // Rungs 1-8 teach; rung 9 onwards each kernel can win somewhere (rung 9 and 11 where
    // no TMA is available, before Hopper), so they are candidates for kernel="auto".
    // Rung 9: one design (warp tiles fed by a cp.async ring), five tiles.
    struct Multistage {
        const char* name;
        Launcher launch;
        int bm, bn, bk, stages, tm, tn;
    };
    for (const Multistage& v : {
             Multistage{"async_multistage_128x128", launch_async_multistage_128x128, 128, 128, 16, 3, 8, 8},
             Multistage{"async_multistage_128x256", launch_async_multistage_128x256, 128, 256, 16, 3, 8, 16},
             Multistage{"async_multistage_256x128", launch_async_multistage_256x128, 256, 128, 16, 3, 16, 8},
             Multistage{"async_multistage_128x128_bk32", launch_async_multistage_128x128_bk32, 128, 128, 32, 3, 8, 8},
             Multistage{"async_multistage_128x128_bk8", launch_async_multistage_128x128_bk8, 128, 128, 8, 4, 8, 8},
         }) {
        LadderEntry e = with_constraints(
            rung(v.name, 9, fp32, v.launch, "09_async_multistage.cu",
                 std::to_string(v.stages) + "-stage cp.async ring into warp tiles, " + std::to_string(v.bm) + "x" +
                     std::to_string(v.bn) + "x" + std::to_string(v.bk) + " tile, " + std::to_string(v.tm) + "x" +
                     std::to_string(v.tn) + " per lane",
                 {{"BM", v.bm}, {"BN", v.bn}, {"BK", v.bk}, {"stages", v.stages}, {"TM", v.tm}, {"TN", v.tn}}),
            whole_tiles(v.bm, v.bn, v.bk));
        e.auto_candidate = v.bk != 8;  // BK = 8: twice the barriers per k of BK = 16, same tile
        add(e);
    }

    // Rung 10: TMA copies into an mbarrier ring, FFMA. Any shape.
    add(auto_candidate(hopper_only(rung("async_tma_128x256", 10, fp32, launch_async_tma_128x256, "10_async_tma.cu",
                         "TMA copies of A^T and B into a 4-stage mbarrier ring, warps in lockstep, 8x16 per lane, "
                         "graded tail; any shape",
                         {{"BM", 128}, {"BN", 256}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 16}}))));
    add(auto_candidate(hopper_only(rung("async_tma_256x128", 10, fp32, launch_async_tma_256x128, "10_async_tma.cu",
                         "TMA + mbarrier ring (A^T, B), 8x16 per lane, graded tail; any shape",
                         {{"BM", 256}, {"BN", 128}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 16}}))));
    add(auto_candidate(hopper_only(rung("async_tma_128x128", 10, fp32, launch_async_tma_128x128, "10_async_tma.cu",
                         "TMA + mbarrier ring (A^T, B), 8x8 per lane, two blocks per SM, stream-K tail; any shape",
                         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 3}, {"TM", 8}, {"TN", 8}}))));

    add(auto_candidate(hopper_only(rung("async_tma_128x256_splitk", 10, fp32, launch_async_tma_128x256_splitk,
                                        "10_async_tma.cu",
                                        "async_tma_128x256 with every tile's k range in splits where the tiles "
                                        "cannot fill the GPU, summed in a fixed order by the reduction kernel, "
                                        "k-contiguous operands read in place where a transpose pass would cost "
                                        "more; any shape",
                                        {{"BM", 128}, {"BN", 256}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 16}}))));
    add(auto_candidate(hopper_only(rung("async_tma_128x128_splitk", 10, fp32, launch_async_tma_128x128_splitk,
                                        "10_async_tma.cu",
                                        "a 128 x 128 split tile (8x8 per lane, one block per SM) for K-heavy "
                                        "problems whose sides are not multiples of 256, k-contiguous operands read "
                                        "in place where a transpose pass would cost more; any shape",
                                        {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 8}}))));
    add(auto_candidate(hopper_only(rung("async_tma_64x256_splitk", 10, fp32, launch_async_tma_64x256_splitk,
                                        "10_async_tma.cu",
                                        "a 64-row tile (eight warps along n, 8x8 per lane) for problems with few "
                                        "rows, k split where the tiles cannot fill the GPU, k-contiguous operands "
                                        "read in place where a transpose pass would cost more; any shape",
                                        {{"BM", 64}, {"BN", 256}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 8}}))));
    add(auto_candidate(hopper_only(rung("async_tma_256x64_splitk", 10, fp32, launch_async_tma_256x64_splitk,
                                        "10_async_tma.cu",
                                        "a 64-column tile (eight warps along m, 4x16 per lane) for problems with "
                                        "few columns, k split where the tiles cannot fill the GPU, k-contiguous "
                                        "operands read in place where a transpose pass would cost more; any shape",
                                        {{"BM", 256}, {"BN", 64}, {"BK", 32}, {"stages", 4}, {"TM", 4}, {"TN", 16}}))));

    add(auto_candidate(rung("tf32_mma_sync_128x128", 11, tf32, launch_tf32_mma_sync_128x128, "11_tf32_mma_sync.cu",
             "mma.sync m16n8k8 TF32, double-buffered shared tiles; any shape",
             {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WM", 64}, {"WN", 32}})));
    add(auto_candidate(hopper_only(rung("tf32_wgmma_256x128", 12, tf32, launch_tf32_wgmma_256x128, "12_tf32_wgmma.cu",
                         "wgmma m64n256k8 TF32 + TMA (rounding both operands to TF32), mbarrier ring, "
                         "warp-specialised, persistent, smem-staged epilogue; any shape",
                         {{"BM", 256}, {"BN", 128}, {"BK", 32}, {"stages", 4}}))));
    add(auto_candidate(hopper_only(rung("tf32_wgmma_256x128_splitk", 12, tf32, launch_tf32_wgmma_256x128_splitk,
                                        "12_tf32_wgmma.cu",
                                        "tf32_wgmma_256x128 with every tile's k range in splits where the tiles "
                                        "cannot fill the GPU, summed in split order by a second kernel; any shape",
                                        {{"BM", 256}, {"BN", 128}, {"BK", 32}, {"stages", 4}}))));
    add(auto_candidate(hopper_only(rung("tf32_wgmma_128x128_splitk", 12, tf32, launch_tf32_wgmma_128x128_splitk,
                                        "12_tf32_wgmma.cu",
                                        "128-row tiles (wgmma m64n128k8 per consumer), k split where the tiles "
                                        "cannot fill the GPU, summed in split order; any shape",
                                        {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 6}}))));
    add(auto_candidate(with_constraints(
        hopper_only(rung("tf32_wgmma_64x128_splitk", 12, tf32, launch_tf32_wgmma_64x128_splitk, "12_tf32_wgmma.cu",
                         "64-row tiles (wgmma m64n64k8) for problems of at most 128 rows (or columns: computed as "
                         "C^T), B^T read in place, k split where the tiles cannot fill the GPU, summed in split order",
                         {{"BM", 64}, {"BN", 128}, {"BK", 32}, {"stages", 6}})),
        {Constraint::few_rows_or_columns(128)})));
    add(auto_candidate(hopper_only(rung("fp32x3_wgmma_128x128", 13, fp32x3, launch_fp32x3_wgmma_128x128,
                                        "13_fp32x3_wgmma.cu",
                         "3xTF32 split products on wgmma (A's big part rounded by TMA, its small part from a "
                         "pre-pass, B split in registers), FP32 promotion every two k-tiles, persistent; any shape",
                         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 4}}))));
    add(auto_candidate(hopper_only(rung("fp32x3_wgmma_128x128_splitk", 13, fp32x3,
                                        launch_fp32x3_wgmma_128x128_splitk, "13_fp32x3_wgmma.cu",
                                        "fp32x3_wgmma_128x128 with every tile's k range in splits where the tiles "
                                        "cannot fill the GPU, summed in split order (non-finite sums to the IEEE "
                                        "fallback); any shape",
                                        {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 4}}))));
    // The few-row fp32x3 tiles: each takes up to `most` rows, or as many columns (computed
    // as C^T); the 16- and 32-row ones are memory-bound and keep more stages of W in flight.
    struct FewRows {
        const char* name;
        Launcher launch;
        int rows, most, stages;
    };
    for (const FewRows& v : {FewRows{"fp32x3_wgmma_64x128_splitk", launch_fp32x3_wgmma_64x128_splitk, 64, 128, 6},
                             FewRows{"fp32x3_wgmma_32x128_splitk", launch_fp32x3_wgmma_32x128_splitk, 32, 32, 8},
                             FewRows{"fp32x3_wgmma_16x128_splitk", launch_fp32x3_wgmma_16x128_splitk, 16, 16, 10}}) {
        const std::string rows = std::to_string(v.rows), most = std::to_string(v.most);
        add(auto_candidate(with_constraints(
            hopper_only(rung(v.name, 13, fp32x3, v.launch, "13_fp32x3_wgmma.cu",
                             rows + "-row tiles (three wgmma m64n" + rows + "k8 per k8 step), " +
                                 std::to_string(v.stages) + " stages; at most " + most +
                                 " rows (or columns: computed as C^T), B^T read in place, k split where the "
                                 "tiles cannot fill the GPU, summed in split order (non-finite sums to the IEEE "
                                 "fallback)",
                             {{"BM", v.rows}, {"BN", 128}, {"BK", 32}, {"stages", v.stages}})),
            {Constraint::few_rows_or_columns(v.most)})));
    }

    // Rung 14: memory-bound skinny problems, either small dimension, every transpose.
    add(auto_candidate(with_constraints(
        rung("skinny_m64", 14, fp32, launch_skinny_m64, "14_skinny.cu",
             "M <= 64: B read once in 16-byte loads from global memory, 4, 8 or 16 rows of op(A) per block in "
             "shared memory (up to 32 rows against B^T: two or four columns of C per warp, op(A) through L1), split K "
             "summed in order; any layout",
             {{"max_M", 64}, {"reuse_m", 16}, {"reuse_n", 32}, {"threads", 256}}),
        {Constraint::at_most('M', 64)})));
    add(auto_candidate(with_constraints(
        rung("skinny_n64", 14, fp32, launch_skinny_n64, "14_skinny.cu",
             "N <= 64: A read once in 16-byte loads from global memory, 4, 8 or 16 columns of op(B) per block in "
             "shared memory (up to 32 columns against A: two or four rows of C per warp, op(B) through L1), split K "
             "summed in order; any layout",
             {{"max_N", 64}, {"reuse_m", 32}, {"reuse_n", 16}, {"threads", 256}}),
        {Constraint::at_most('N', 64)})));
    // The same problems FP32-accurate on tensor cores, where the big operand has rows along k.
    add(auto_candidate(with_constraints(
        rung("fp32x3_skinny_m64", 14, fp32x3, launch_fp32x3_skinny_m64, "14_skinny_fp32x3.cu",
             "M <= 64 against B^T (x @ W^T): mma.sync m16n8k8 on TF32 parts (3 products), 16 rows of op(A) "
             "against 32 rows of B^T per warp, B^T read once in 16-byte loads, split K summed in order and "
             "checked for the IEEE fallback; other layouts run skinny_m64's FFMA kernels",
             {{"max_M", 64}, {"reuse_m", 16}, {"reuse_n", 32}, {"threads", 256}}),
        {Constraint::at_most('M', 64)})));
    add(auto_candidate(with_constraints(
        rung("fp32x3_skinny_n64", 14, fp32x3, launch_fp32x3_skinny_n64, "14_skinny_fp32x3.cu",
             "N <= 64 against A with rows along k: mma.sync m16n8k8 on TF32 parts (3 products), 16 columns of "
             "op(B) against 32 rows of A per warp, A read once in 16-byte loads, split K summed in order and "
             "checked for the IEEE fallback; other layouts run skinny_n64's FFMA kernels",
             {{"max_N", 64}, {"reuse_m", 32}, {"reuse_n", 16}, {"threads", 256}}),
        {Constraint::at_most('N', 64)})));

    // Rung 15: fp32_ozaki, FP32 accuracy from exact INT8 residue products. A candidate for
    // kernel="auto": the tuning race decides per shape class (faster than fp32x3 from about
    // 4096^3 up, several times slower on small and skinny shapes); its four-block form and
    // its forms with other operand passes are the same product and stay out.
    add(auto_candidate(hopper_only(
        rung("ozaki_int8_128x256", 15, Precision::fp32_ozaki, launch_ozaki_int8_128x256, "15_ozaki_int8.cu",
             "7 int8 residue GEMMs (wgmma m64n256k32 s8 x s8, TMA ring) summed exactly, reduced mod m "
             "per modulus, CRT and certificate in warps beside the MMAs, IEEE FP32 for uncertified "
             "64x64 regions; clusters of 2 blocks share B, of 4 from 8192 tiles of C on; any shape",
             {{"BM", 128}, {"BN", 256}, {"BK", 128}, {"stages", 4}, {"moduli", 7}, {"region", 64}}))));
    add(hopper_only(rung("ozaki_int8_128x256_c4", 15, Precision::fp32_ozaki, launch_ozaki_int8_128x256_c4,
                         "15_ozaki_int8.cu",
                         "ozaki_int8_128x256 with clusters of 4 blocks sharing each B tile at every size (the "
                         "large-problem form, runnable and verified on its own); any shape",
                         {{"BM", 128}, {"BN", 256}, {"BK", 128}, {"stages", 4}, {"moduli", 7}, {"region", 64},
                          {"cluster", 4}})));
    add(hopper_only(rung("ozaki_int8_128x256_fused_rows", 15, Precision::fp32_ozaki,
                         launch_ozaki_int8_128x256_fused_rows, "15_ozaki_int8.cu",
                         "ozaki_int8_128x256 whose operand pass scales and splits lines along k in one "
                         "kernel (from 2048 such lines on), reading each from memory once; the same "
                         "bits; any shape",
                         {{"BM", 128}, {"BN", 256}, {"BK", 128}, {"stages", 4}, {"moduli", 7}, {"region", 64}})));
    add(hopper_only(rung("ozaki_int8_128x256_resident", 15, Precision::fp32_ozaki,
                         launch_ozaki_int8_128x256_resident, "15_ozaki_int8.cu",
                         "ozaki_int8_128x256 whose operand pass reads each operand from memory once: "
                         "clusters of up to 8 blocks hold 32 lines' k in shared memory, carry the line "
                         "sums from block to block in k order and split from there (K <= 8192; the "
                         "same bits); any shape",
                         {{"BM", 128}, {"BN", 256}, {"BK", 128}, {"stages", 4}, {"moduli", 7}, {"region", 64}})));

    // Rung 16: small problems, tiles small enough to give the GPU blocks; every layout.
    struct SmallTile {
        const char* name;
        Launcher launch;
        int tile, bk, per_thread;
    };
    for (const SmallTile& v : {SmallTile{"small_tile_32x32", launch_small_tile_32x32, 32, 32, 2},
                               SmallTile{"small_tile_64x64", launch_small_tile_64x64, 64, 16, 4}}) {
        const std::string tile = std::to_string(v.tile), sub = std::to_string(v.per_thread);
        add(auto_candidate(with_constraints(
            rung(v.name, 16, fp32, v.launch, "16_small_tile.cu",
                 tile + "x" + tile + " tile, " + sub + "x" + sub +
                     " per thread, k-major shared tiles double-buffered through registers; M and N up to 1024, "
                     "any K and layout",
                 {{"BM", v.tile}, {"BN", v.tile}, {"BK", v.bk}, {"TM", v.per_thread}, {"TN", v.per_thread},
                  {"threads", 256}}),
            {Constraint::at_most('M', 1024), Constraint::at_most('N', 1024)})));
    }

    LadderEntry cublas;
    cublas.name = "cublas";
    cublas.baseline = true;
    cublas.launch = launch_cublas;
    cublas.source = "src/cuda/cublas_baseline.cpp";
    cublas.description = "cuBLAS SGEMM, CUBLAS_DEFAULT_MATH (no TF32)";
    // The baselines are candidates too: "auto" is never slower than the vendor call it replaces.
    cublas.auto_candidate = true;
    add(cublas);
    LadderEntry cublas_tf32 = cublas;
    cublas_tf32.name = "cublas_tf32";
    cublas_tf32.precision = tf32;
    cublas_tf32.launch = launch_cublas_tf32;
    cublas_tf32.description = "cuBLAS SGEMM, CUBLAS_TF32_TENSOR_OP_MATH";
    add(cublas_tf32);
    return l;
}

}  // namespace

const std::vector<LadderEntry>& ladder() {
    static const std::vector<LadderEntry> l = build();
    return l;
}

const LadderEntry* find_entry(const std::string& name) {
    for (const auto& e : ladder())
        if (e.name == name) return &e;
    return nullptr;
}

}  // namespace cuda
}  // namespace fastgemm
