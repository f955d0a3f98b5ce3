// The direct kernels' avx512 pieces: 6 x 64 rows tiles (24 of 32 zmm accumulators), 4 x 4 dot tiles.
// Compiled with -mavx512f (this file only); used only when cpuid reports the instruction set.
#include "cpu/direct/direct_isa.hpp"

#if defined(__x86_64__) && defined(__AVX512F__)
#include "cpu/simd/vec_avx512.hpp"
#include "cpu/direct/direct_tiles.hpp"

namespace fastgemm {
namespace {

using Rows = RowsTile<Avx512, 6, 4>;
using Dot = DotTile<Avx512, 4, 4>;
const DirectIsa kAvx512{"avx512", CpuIsa::avx512, Rows::MR_, Rows::NR, &Rows::kernel<false>, &Rows::kernel<true>,
                    Dot::MR_, Dot::NR_, &Dot::kernel, &gemv_rows_sum<Avx512>,
                    &gemv_dot_rows<Avx512>};

}  // namespace

const DirectIsa* direct_isa_avx512() { return &kAvx512; }

}  // namespace fastgemm

#else

namespace fastgemm {
const DirectIsa* direct_isa_avx512() { return nullptr; }
}  // namespace fastgemm

#endif
