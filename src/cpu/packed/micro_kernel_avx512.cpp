// AVX-512 micro-kernel, MR x NR = 12 x 32 (two zmm vectors per row of the C tile).
//
// The 24 accumulators (of 32 zmm registers) hold the tile for the whole k loop. Per k
// step, two vector loads of the B micro-panel and 12 broadcasts of the A micro-panel
// feed 24 FMAs; each B vector is used 12 times, each broadcast twice. Zen 4 executes a
// 512-bit FMA as two 256-bit halves, so the win over the 6x16 AVX2 kernel is fewer loads
// and instructions per FMA, not wider math. The tile loop and its edge handling are
// micro_tile_x86.hpp's; a ragged last vector uses masked loads/stores.
// Compiled with -mavx512f (this file only); called only when cpuid reports AVX-512F.
#include "cpu/packed/micro_kernel.hpp"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#ifndef FASTGEMM_AVX512_MR
#define FASTGEMM_AVX512_MR 12
#endif
#ifndef FASTGEMM_AVX512_NV
#define FASTGEMM_AVX512_NV 2
#endif

#include "cpu/simd/vec_avx512.hpp"
#include "cpu/packed/micro_tile_x86.hpp"

namespace fastgemm {
namespace {

using Tile = X86MicroTile<Avx512, FASTGEMM_AVX512_MR, FASTGEMM_AVX512_NV>;
const MicroKernel kAvx512{"avx512", CpuIsa::avx512, Tile::MR_, Tile::NR, Tile::kernel};

}  // namespace

const MicroKernel* micro_kernel_avx512() { return &kAvx512; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_avx512() { return nullptr; }
}  // namespace fastgemm

#endif
