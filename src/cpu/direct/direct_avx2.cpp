// The direct kernels' avx2 pieces: 6 x 16 rows tiles (12 of 16 ymm accumulators), 3 x 3 dot tiles.
// Compiled with -mavx2 -mfma (this file only); used only when cpuid reports the instruction set.
#include "cpu/direct/direct_isa.hpp"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include "cpu/simd/vec_avx2.hpp"
#include "cpu/direct/direct_tiles.hpp"

namespace fastgemm {
namespace {

using Rows = RowsTile<Avx2, 6, 2>;
using Dot = DotTile<Avx2, 3, 3>;
const DirectIsa kAvx2{"avx2", CpuIsa::avx2, Rows::MR_, Rows::NR, &Rows::kernel<false>, &Rows::kernel<true>,
                    Dot::MR_, Dot::NR_, &Dot::kernel, &gemv_rows_sum<Avx2>,
                    &gemv_dot_rows<Avx2>};

}  // namespace

const DirectIsa* direct_isa_avx2() { return &kAvx2; }

}  // namespace fastgemm

#else

namespace fastgemm {
const DirectIsa* direct_isa_avx2() { return nullptr; }
}  // namespace fastgemm

#endif
