// The cuda ladder table (see ladder.hpp) and the small host utilities the launchers
// share: workspace memory, alignment checks, the sm_90 test.
#include <cstdint>
#include <mutex>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

std::vector<Constraint> tiles(int bm, int bn, int bk) {
    return {Constraint::multiple_of('M', bm), Constraint::multiple_of('N', bn), Constraint::multiple_of('K', bk),
            Constraint::no_trans_a(), Constraint::no_trans_b()};
}

std::vector<LadderEntry> build() {
    const std::string dir = "src/cuda/";
    std::vector<LadderEntry> l;
    auto add = [&](LadderEntry e) { l.push_back(std::move(e)); };
    // Naive rungs are ~100x slower than the rest: benchmarks skip them above 2^35 FLOPs
    // (4096^3 is 1.4e11) unless asked.
    add({"naive", 1, false, Precision::fp32, 0, launch_naive, {}, {{"block", 32}}, dir + "01_naive.cu",
         "one thread per C element, threads down a column (uncoalesced)", false, 2.0e11});
    add({"coalesced", 2, false, Precision::fp32, 0, launch_coalesced, {}, {{"block", 32}},
         dir + "02_coalesced.cu", "one thread per C element, threads along a row (coalesced)", false, 2.0e11});
    add({"smem_tiling", 3, false, Precision::fp32, 0, launch_smem_tiling, {}, {{"tile", 32}},
         dir + "03_smem_tiling.cu", "32x32 shared-memory tiles, one output per thread", false, 0});
    add({"blocktile_1d", 4, false, Precision::fp32, 0, launch_blocktile_1d, tiles(64, 64, 8),
         {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}}, dir + "04_blocktile_1d.cu",
         "64x64 block tile, 8 outputs per thread down a column", false, 0});
    add({"blocktile_2d", 5, false, Precision::fp32, 0, launch_blocktile_2d, tiles(128, 128, 8),
         {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}, dir + "05_blocktile_2d.cu",
         "128x128 block tile, 8x8 outputs per thread", false, 0});
    add({"vectorized", 6, false, Precision::fp32, 0, launch_vectorized, tiles(128, 128, 8),
         {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}, dir + "06_vectorized.cu",
         "2D tiling with float4 loads/stores and a transposed A tile", false, 0});
    add({"bank_conflict_free", 7, false, Precision::fp32, 0, launch_bank_conflict_free, tiles(128, 128, 8),
         {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}, dir + "07_bank_conflict_free.cu",
         "vectorized 2D tiling with conflict-free shared layouts (split columns, padded A)", false, 0});
    add({"warptiling", 8, false, Precision::fp32, 0, launch_warptiling, tiles(128, 128, 16),
         {{"BM", 128}, {"BN", 128}, {"BK", 16}, {"WM", 64}, {"WN", 32}, {"TM", 8}, {"TN", 8}},
         dir + "08_warptiling.cu", "warp tiles of 64x32, lanes 8x4 with 4x4 groups, broadcast reads", false, 0});
    add({"async_multistage", 9, false, Precision::fp32, 0, launch_async_128x128, tiles(128, 128, 16),
         {{"BM", 128}, {"BN", 128}, {"BK", 16}, {"stages", 3}, {"TM", 8}, {"TN", 8}},
         dir + "09_async_multistage.cu", "warp tiling fed by a 3-stage cp.async ring", true, 0});
    add({"async_multistage_128x256", 9, false, Precision::fp32, 0, launch_async_128x256, tiles(128, 256, 16),
         {{"BM", 128}, {"BN", 256}, {"BK", 16}, {"stages", 3}, {"TM", 8}, {"TN", 16}},
         dir + "09_async_multistage.cu", "3-stage cp.async, 128x256 tile, 8x16 per lane", true, 0});
    add({"async_multistage_256x128", 9, false, Precision::fp32, 0, launch_async_256x128, tiles(256, 128, 16),
         {{"BM", 256}, {"BN", 128}, {"BK", 16}, {"stages", 3}, {"TM", 16}, {"TN", 8}},
         dir + "09_async_multistage.cu", "3-stage cp.async, 256x128 tile, 16x8 per lane", true, 0});
    add({"async_multistage_bk32", 9, false, Precision::fp32, 0, launch_async_128x128_bk32, tiles(128, 128, 32),
         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 3}, {"TM", 8}, {"TN", 8}},
         dir + "09_async_multistage.cu", "3-stage cp.async, 128x128x32 tile", true, 0});
    add({"async_multistage_bk8", 9, false, Precision::fp32, 0, launch_async_128x128_bk8, tiles(128, 128, 8),
         {{"BM", 128}, {"BN", 128}, {"BK", 8}, {"stages", 4}, {"TM", 8}, {"TN", 8}},
         dir + "09_async_multistage.cu", "4-stage cp.async, 128x128x8 tile", false, 0});
    add({"async_tma", 9, false, Precision::fp32, 90, launch_async_tma_128x256, {},
         {{"BM", 128}, {"BN", 256}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 16}}, dir + "09_async_tma.cu",
         "TMA copies of A^T and B into a 4-stage mbarrier ring, no block barriers, 128x256 tile, 8x16 per lane; "
         "any shape", true, 0});
    add({"async_tma_256x128", 9, false, Precision::fp32, 90, launch_async_tma_256x128, {},
         {{"BM", 256}, {"BN", 128}, {"BK", 32}, {"stages", 4}, {"TM", 8}, {"TN", 16}}, dir + "09_async_tma.cu",
         "TMA + mbarrier ring (A^T, B), 256x128 tile, 8x16 per lane; any shape", true, 0});
    add({"async_tma_128x128", 9, false, Precision::fp32, 90, launch_async_tma_128x128, {},
         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 3}, {"TM", 8}, {"TN", 8}}, dir + "09_async_tma.cu",
         "TMA + mbarrier ring (A^T, B), 128x128 tile, 8x8 per lane, two blocks per SM, "
         "stream-K tail; any shape", true, 0});
    add({"tf32_mma_sync", 10, false, Precision::tf32, 0, launch_tf32_mma_sync, {},
         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WM", 64}, {"WN", 32}}, dir + "10_tf32_mma_sync.cu",
         "mma.sync m16n8k8 TF32, double-buffered shared tiles; any shape", true, 0});
    add({"tf32_wgmma", 11, false, Precision::tf32, 90, launch_tf32_wgmma, {},
         {{"BM", 256}, {"BN", 128}, {"BK", 32}, {"stages", 4}}, dir + "11_tf32_wgmma.cu",
         "wgmma m64n256k8 TF32 + TMA (rounding both operands to TF32), 4-stage mbarrier ring, warp-specialised, "
         "persistent, smem-staged epilogue; any shape", true, 0});
    add({"fp32x3_wgmma", 12, false, Precision::fp32x3, 90, launch_fp32x3_wgmma, {},
         {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"stages", 4}}, dir + "12_fp32x3_wgmma.cu",
         "3xTF32 split products on wgmma (A's big part rounded by TMA, its small part from a pre-pass, B split "
         "in registers), FP32 promotion every two k-tiles, persistent; any shape",
         true, 0});
    add({"cublas", 0, true, Precision::fp32, 0, launch_cublas, {}, {}, dir + "cublas_baseline.cpp",
         "cuBLAS SGEMM, CUBLAS_DEFAULT_MATH (no TF32)", false, 0});
    add({"cublas_tf32", 0, true, Precision::tf32, 0, launch_cublas_tf32, {}, {}, dir + "cublas_baseline.cpp",
         "cuBLAS SGEMM, CUBLAS_TF32_TENSOR_OP_MATH", false, 0});
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

void require_vector_alignment(const GemmArgs& p, const char* kernel, bool a, bool b, bool c) {
    auto aligned = [](const void* ptr, int64_t ld) {
        return ld % 4 == 0 && reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
    };
    const char* what = nullptr;
    if (a && !aligned(p.A, p.lda)) what = "A";
    else if (b && !aligned(p.B, p.ldb)) what = "B";
    else if (c && !aligned(p.C, p.ldc)) what = "C";
    if (what)
        throw ConstraintError(std::string(kernel) + " needs 16-byte aligned rows: " + what +
                              "'s pointer and leading dimension must be multiples of 16 bytes / 4 elements");
}

bool device_is_sm90() {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return false;
    // sm_90a code runs on compute capability 9.0 only.
    return major == 9 && minor == 0;
}

Workspace::~Workspace() {
    for (void* p : ptr_)
        if (p) cudaFree(p);
}

void* Workspace::get(int slot, size_t bytes) {
    if (bytes == 0) bytes = 256;
    if (size_[slot] < bytes) {
        if (ptr_[slot]) {
            // The old buffer may still be read by queued work: wait before freeing it.
            FASTGEMM_CUDA_CHECK(cudaDeviceSynchronize());
            FASTGEMM_CUDA_CHECK(cudaFree(ptr_[slot]));
            ptr_[slot] = nullptr;
            size_[slot] = 0;
        }
        FASTGEMM_CUDA_CHECK(cudaMalloc(&ptr_[slot], bytes));
        size_[slot] = bytes;
    }
    return ptr_[slot];
}

}  // namespace cuda
}  // namespace fastgemm
