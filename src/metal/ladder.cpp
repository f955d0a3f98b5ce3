// The Metal ladder table (see ladder.hpp). One entry per kernel in shaders/; the numbers
// here (tiles, threads) must match the shader sources, which the metal-emu tests check by
// running every entry through the emulator.
#include "metal/ladder.hpp"

#include <limits>

namespace fastgemm::metal_ladder {

namespace {

using C = Constraint;

struct Spec {
    std::string name;
    std::string function;
    std::string shader;
    int step;
    uint32_t tile_m, tile_n;
    Size3 threads;
    uint32_t simd_width;
    std::vector<Constraint> constraints;
    std::vector<std::pair<std::string, int64_t>> params;
    std::string description;
    Precision precision = Precision::fp32;
    MslVersion msl = MslVersion::metal3_2;
};

std::vector<Constraint> multiples(int64_t m, int64_t n, int64_t k) {
    return {C::multiple_of('M', m), C::multiple_of('N', n), C::multiple_of('K', k)};
}
std::vector<Constraint> plus(std::vector<Constraint> a, const std::vector<Constraint>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
const std::vector<Constraint> kMatrixUnitRules = {C::no_trans_a(), C::no_trans_b(),
                                                  C::plain_scalars()};

std::vector<Spec> specs() {
    std::vector<Spec> s;
    // --- step 1: naive --------------------------------------------------------------------
    s.push_back({"naive", "matmul_naive", "01_naive.metal", 1, 32, 32, {32, 32, 1}, 0, {},
                 {{"threads_x", 32}, {"threads_y", 32}},
                 "one thread per C element, 32x32 threadgroups, x selects the column (seed 000)"});
    s.push_back({"naive_grid", "matmul_naive_grid", "01_naive.metal", 1, 16, 16, {16, 16, 1}, 0,
                 {}, {{"threads_x", 16}, {"threads_y", 16}},
                 "one thread per C element over a 2D grid, 16x16 threadgroups (seed 003)"});
    // --- steps 2-3: threadgroup tiling ---------------------------------------------------
    s.push_back({"tiling_16", "matmul_tiling_16", "02_tiling.metal", 2, 16, 16, {16, 16, 1}, 0,
                 multiples(16, 16, 16), {{"tile", 16}},
                 "16x16 threadgroup tiles of A and B, one C element per thread (seed 000 kernel 2)"});
    s.push_back({"tiled_8", "matmul_tiled_8", "03_tiled_checked.metal", 2, 8, 8, {8, 8, 1}, 0, {},
                 {{"tile", 8}}, "bounds-checked 8x8 threadgroup tiles, any shape (seed 003)"});
    s.push_back({"tiled_16", "matmul_tiled_16", "03_tiled_checked.metal", 2, 16, 16, {16, 16, 1},
                 0, {}, {{"tile", 16}},
                 "bounds-checked 16x16 threadgroup tiles, any shape (seed 003)"});
    s.push_back({"tiling_32", "matmul_tiling_32", "02_tiling.metal", 3, 32, 32, {32, 32, 1}, 0,
                 multiples(32, 32, 32), {{"tile", 32}},
                 "32x32 threadgroup tiles of A and B, one C element per thread (seed 000 kernel 3)"});
    s.push_back({"tiled_32", "matmul_tiled_32", "03_tiled_checked.metal", 3, 32, 32, {32, 32, 1},
                 0, {}, {{"tile", 32}},
                 "bounds-checked 32x32 threadgroup tiles, any shape (seed 003)"});
    // --- step 4: thread coarsening --------------------------------------------------------
    s.push_back({"coarse1d_64x64", "matmul_coarse1d_64x64", "04_coarse_1d.metal", 4, 64, 64,
                 {512, 1, 1}, 0, multiples(64, 64, 8),
                 {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}},
                 "1D thread coarsening: 8 outputs of one column per thread (seed 000 kernel 4)"});
    s.push_back({"coarse1d_64x64_edge", "matmul_coarse1d_64x64_edge", "04_coarse_1d.metal", 4,
                 64, 64, {512, 1, 1}, 0, {}, {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}},
                 "1D thread coarsening with bounds-checked edge tiles, any shape"});
    s.push_back({"tiled16_rb2", "matmul_tiled16_rb2", "04_tiled16_rb2.metal", 4, 32, 32,
                 {16, 16, 1}, 0, {}, {{"tile", 32}, {"TM", 2}, {"TN", 2}},
                 "16x16 threads, 32x32 tile, 2x2 outputs per thread, any shape (seed 003)"});
    s.push_back({"coarse2d_4x4", "matmul_coarse2d_64x64_k16_4x4", "04_coarse_2d.metal", 4, 64,
                 64, {256, 1, 1}, 0, {},
                 {{"BM", 64}, {"BN", 64}, {"BK", 16}, {"TM", 4}, {"TN", 4}},
                 "2D thread coarsening, 4x4 outputs per thread, padded A^T tile, any shape"});
    s.push_back({"coarse2d_8x8", "matmul_coarse2d_128x128_k8_8x8", "04_coarse_2d.metal", 4, 128,
                 128, {256, 1, 1}, 0, {},
                 {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}},
                 "2D thread coarsening, 8x8 outputs per thread, padded A^T tile, any shape"});
    // The same two tilings, one change per rung: float4 device loads/stores and float4
    // threadgroup tiles (dense rows); then a padded + XOR-swizzled tile layout; then double
    // buffering. Any shape and leading dimension: float4 device accesses are taken where
    // ld % 4 == 0 and the four elements exist, element-wise loads elsewhere (gemm_vec4.h).
    struct Coarse2dTiling {
        const char* id;  // "4x4" / "8x8"
        uint32_t bm, bn, bk, tm, tn;
    };
    struct Coarse2dRung {
        const char* name;      // registry name prefix
        const char* function;  // [[host_name]] prefix
        const char* shader;
        const char* what;
        std::vector<std::pair<std::string, int64_t>> extra;
    };
    const Coarse2dTiling tilings[] = {{"4x4", 64, 64, 16, 4, 4}, {"8x8", 128, 128, 8, 8, 8}};
    const Coarse2dRung rungs[] = {
        {"coarse2d_vec4_", "matmul_coarse2d_vec4_", "04_coarse_2d_vec4.metal",
         "float4 device loads and C stores, float4 threadgroup tiles with dense rows (A^T)",
         {{"vec_width", 4}}},
        {"coarse2d_vec4_swizzled_", "matmul_coarse2d_vec4_swizzled_",
         "04_coarse_2d_vec4_swizzled.metal",
         "float4 rung with tile rows padded by 4 floats and XOR-swizzled B columns (layout only)",
         {{"vec_width", 4}, {"tg_pad", 4}, {"swizzle", 1}}},
        {"coarse2d_vec4_db_", "matmul_coarse2d_vec4_db_", "04_coarse_2d_vec4_double_buffer.metal",
         "padded/swizzled float4 rung, double-buffered: next K-tile loaded during the FMAs, one "
         "barrier per K-step",
         {{"vec_width", 4}, {"tg_pad", 4}, {"swizzle", 1}, {"stages", 2}}},
    };
    for (const Coarse2dRung& r : rungs) {
        for (const Coarse2dTiling& t : tilings) {
            const std::string tile = std::to_string(t.bm) + "x" + std::to_string(t.bn) + "_k" +
                                     std::to_string(t.bk) + "_" + t.id;
            const uint32_t threads = (t.bm / t.tm) * (t.bn / t.tn);  // 256 for both tilings
            Spec k{std::string(r.name) + t.id, std::string(r.function) + tile, r.shader, 4,
                   t.bm, t.bn, {threads, 1, 1}, 0, {}, {}, ""};
            k.params = {{"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}, {"TM", t.tm}, {"TN", t.tn}};
            k.params.insert(k.params.end(), r.extra.begin(), r.extra.end());
            k.description = std::string("2D coarsening ") + t.id + " per thread, " + r.what +
                            ", any shape";
            s.push_back(k);
        }
    }
    // --- steps 5-7: SIMD-group matrices ---------------------------------------------------
    s.push_back({"simdgroup_8x8", "simdgroup_8x8", "05_simdgroup_8x8.metal", 5, 8, 8, {32, 1, 1},
                 32, plus(multiples(8, 8, 8), kMatrixUnitRules), {{"tile", 8}, {"simdgroups", 1}},
                 "one SIMD-group per 8x8 C tile, simdgroup_float8x8 straight from device memory "
                 "(seed 004 kernel 5)"});
    s.push_back({"simdgroup_32x32", "simdgroup_32x32", "06_simdgroup_32x32.metal", 6, 32, 32,
                 {128, 1, 1}, 32, plus(multiples(32, 32, 8), kMatrixUnitRules),
                 {{"tile", 32}, {"simdgroups", 4}},
                 "four SIMD-groups, each 16x16 as 2x2 simdgroup matrices (seed 004 kernel 6)"});
    s.push_back({"simdgroup_32x32_shared", "simdgroup_32x32_shared",
                 "07_simdgroup_32x32_shared.metal", 7, 32, 32, {128, 1, 1}, 32,
                 plus(multiples(32, 32, 32), {C::plain_scalars()}),
                 {{"tile", 32}, {"BK", 32}, {"simdgroups", 4}, {"tg_stride", 33}},
                 "kernel 6 with A and B staged in threadgroup memory, stride 33 (seed 004 kernel 7)"});
    s.push_back({"simdgroup_32x32_edge", "simdgroup_32x32_edge",
                 "07_simdgroup_32x32_shared.metal", 7, 32, 32, {128, 1, 1}, 32, {},
                 {{"tile", 32}, {"BK", 32}, {"simdgroups", 4}, {"tg_stride", 33}},
                 "kernel 7 with zero-filled edge staging and a bounds-checked epilogue, any shape"});
    // --- steps 8-9: MPP tensor ops (Metal 4) ----------------------------------------------
    // Precision class tf32: whether matmul2d computes float x float in full FP32 on every M
    // chip is unconfirmed (docs/architecture.md: Tensor ops), so the verifier gets the
    // matrix-unit tolerance. relaxed_precision stays false in the shaders.
    for (auto [tm, tn] : {std::pair<uint32_t, uint32_t>{64, 64}, {64, 128}}) {
        const std::string tile = std::to_string(tm) + "x" + std::to_string(tn);
        Spec k{"", "", "08_tensorops.metal", 8, tm, tn, {128, 1, 1}, 32,
               {C::no_trans_a(), C::no_trans_b(), C::plain_scalars()},
               {{"TM", tm}, {"TN", tn}, {"simdgroups", 4}},
               "", Precision::tf32, MslVersion::metal4_0};
        k.name = "tensorops_" + tile;
        k.function = "matmul_tensorops_" + tile;
        k.description = "MPP matmul2d per " + tile +
                        " C tile over full K, dynamic slices at edges (seed 004 kernel 8)";
        s.push_back(k);
    }
    for (auto [tm, tn] : {std::pair<uint32_t, uint32_t>{64, 64}, {64, 128}, {128, 128}}) {
        for (uint32_t bk : {256u, 512u, 1024u}) {
            const std::string id =
                std::to_string(tm) + "x" + std::to_string(tn) + "_k" + std::to_string(bk);
            Spec k{"", "", "09_tensorops_sync.metal", 9, tm, tn, {128, 1, 1}, 32,
                   plus(multiples(tm, tn, bk), kMatrixUnitRules),
                   {{"TM", tm}, {"TN", tn}, {"BK", bk}, {"simdgroups", 4}},
                   "", Precision::tf32, MslVersion::metal4_0};
            k.name = "tensorops_sync_" + id;
            k.function = "matmul_tensorops_sync_" + id;
            k.description = "MPP matmul2d in BK-wide K chunks with a threadgroup barrier "
                            "between chunks, cooperative accumulator (seed 004 kernel 9)";
            s.push_back(k);
        }
    }
    // --- step 15: precision class fp32_ozaki on MPP int8 matmul2d (Metal 4) ----------------
    // Seven exact int8 residue products, CRT, a certificate per 32 x 32 tile and IEEE FP32
    // where it fails (docs/ozaki.md); one dispatch, any shape.
    s.push_back({"ozaki_int8_32x32", "matmul_ozaki_int8_32x32", "15_ozaki_int8.metal", 15, 32, 32, {128, 1, 1}, 32,
                 {}, {{"TM", 32}, {"TN", 32}, {"BK", 64}, {"moduli", 7}, {"region", 32}, {"simdgroups", 4}},
                 "fp32_ozaki: 7 int8 residue GEMMs on MPP matmul2d (int32 sums), CRT, certified 32x32 tiles, "
                 "IEEE FP32 elsewhere; any shape",
                 Precision::fp32_ozaki, MslVersion::metal4_0});
    return s;
}

std::vector<LadderKernel> build() {
    std::vector<LadderKernel> out;
    for (const Spec& s : specs()) {
        LadderKernel k;
        k.name = s.name;
        k.function = s.function;
        k.shader = s.shader;
        k.msl = s.msl;
        k.tile_m = s.tile_m;
        k.tile_n = s.tile_n;
        k.threads = s.threads;
        k.simd_width = s.simd_width;
        KernelInfo& info = k.info;
        info.name = s.name;
        info.ladder_step = s.step;
        info.precision = s.precision;
        info.constraints = s.constraints;
        info.params = s.params;
        info.source = std::string("shaders/") + s.shader;
        info.description = s.description;
        out.push_back(std::move(k));
    }
    return out;
}

uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

}  // namespace

const std::vector<LadderKernel>& ladder() {
    static const std::vector<LadderKernel> table = build();
    return table;
}

const LadderKernel* find(const std::string& name) {
    for (const LadderKernel& k : ladder())
        if (k.name == name) return &k;
    return nullptr;
}

LaunchGeometry launch_geometry(const LadderKernel& k, const Problem& p) {
    LaunchGeometry g;
    // An empty C still gets one threadgroup per axis so that the dispatch is legal; every
    // kernel guards or is constrained so that such a group writes nothing.
    g.threadgroups.x = p.N > 0 ? ceil_div(p.N, k.tile_n) : 1;
    g.threadgroups.y = p.M > 0 ? ceil_div(p.M, k.tile_m) : 1;
    g.threadgroups.z = 1;
    g.threads_per_threadgroup = k.threads;
    return g;
}

GemmParams make_params(const Problem& p) {
    GemmParams g;
    g.M = uint32_t(p.M);
    g.N = uint32_t(p.N);
    g.K = uint32_t(p.K);
    g.lda = uint32_t(p.lda);
    g.ldb = uint32_t(p.ldb);
    g.ldc = uint32_t(p.ldc);
    g.trans_a = p.trans_a ? 1u : 0u;
    g.trans_b = p.trans_b ? 1u : 0u;
    g.alpha = p.alpha;
    g.beta = p.beta;
    return g;
}

bool fits_32bit(const Problem& p) {
    const int64_t lim = std::numeric_limits<uint32_t>::max();
    for (int64_t v : {p.M, p.N, p.K, p.lda, p.ldb, p.ldc, p.a_span(), p.b_span(), p.c_span()})
        if (v < 0 || v > lim) return false;
    return true;
}

}  // namespace fastgemm::metal_ladder
