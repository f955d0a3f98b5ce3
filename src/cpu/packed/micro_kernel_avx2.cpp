// AVX2 + FMA micro-kernel, MR x NR = 6 x 16 (two ymm vectors per row of the C tile).
//
// 12 accumulators (of 16 ymm registers) hold the tile for the whole k loop, leaving 2
// for the B vectors and 1 for the broadcast A value. Per k step, two loads of the B
// micro-panel and 6 broadcasts of the A micro-panel feed 12 FMAs: enough independent
// chains to cover a 4-cycle FMA latency on 2 pipes. The tile loop and its edge handling
// are micro_tile_x86.hpp's; a ragged last vector uses vmaskmov loads/stores.
// Compiled with -mavx2 -mfma (this file only); called only when cpuid reports both.
#include "cpu/packed/micro_kernel.hpp"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#ifndef FASTGEMM_AVX2_MR
#define FASTGEMM_AVX2_MR 6
#endif
#ifndef FASTGEMM_AVX2_NV
#define FASTGEMM_AVX2_NV 2
#endif

#include "cpu/simd/vec_avx2.hpp"
#include "cpu/packed/micro_tile_x86.hpp"

namespace fastgemm {
namespace {

using Tile = X86MicroTile<Avx2, FASTGEMM_AVX2_MR, FASTGEMM_AVX2_NV>;
const MicroKernel kAvx2{"avx2", CpuIsa::avx2, Tile::MR_, Tile::NR, Tile::kernel};

}  // namespace

const MicroKernel* micro_kernel_avx2() { return &kAvx2; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_avx2() { return nullptr; }
}  // namespace fastgemm

#endif
