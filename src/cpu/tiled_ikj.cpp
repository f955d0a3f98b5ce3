// Tiled ikj, seed 003's "Tiling, badly": ii / kk / jj blocks of BS x BS around the
// unchanged ikj body. No packing and no register blocking, so the blocks only chop the
// contiguous j-stream into shorter runs: small BS is slower than untiled ikj, and the
// sweep 8..256 climbs back towards it. One thread; any shape (edge blocks are clipped).
#include <algorithm>

#include "cpu/ladder.hpp"
#include "cpu/loop_access.hpp"

namespace fastgemm::cpu {

namespace {

template <int BS, bool TA, bool TB>
void tiled_loop(const Problem& p, const float* A, const float* B, float* C) {
    scale_rows(p, C, 0, p.M);
    for (int64_t ii = 0; ii < p.M; ii += BS) {
        const int64_t i_end = std::min<int64_t>(ii + BS, p.M);
        for (int64_t kk = 0; kk < p.K; kk += BS) {
            const int64_t k_end = std::min<int64_t>(kk + BS, p.K);
            for (int64_t jj = 0; jj < p.N; jj += BS) {
                if (interrupt_requested()) return;  // between BS^3 blocks
                const int64_t j_end = std::min<int64_t>(jj + BS, p.N);
                for (int64_t i = ii; i < i_end; ++i) {
                    float* c = C + i * p.ldc;
                    for (int64_t k = kk; k < k_end; ++k) {
                        float a = p.alpha * at<TA>(A, p.lda, i, k);
                        for (int64_t j = jj; j < j_end; ++j) c[j] += a * at<TB>(B, p.ldb, k, j);
                    }
                }
            }
        }
    }
}

}  // namespace

template <int BS>
void tiled_ikj(const Problem& p, const float* A, const float* B, float* C) {
    if (scale_only(p, C, 0, p.M)) return;
    with_transposes(p, [&](auto ta, auto tb) {
        tiled_loop<BS, decltype(ta)::value, decltype(tb)::value>(p, A, B, C);
    });
}

template void tiled_ikj<8>(const Problem&, const float*, const float*, float*);
template void tiled_ikj<16>(const Problem&, const float*, const float*, float*);
template void tiled_ikj<32>(const Problem&, const float*, const float*, float*);
template void tiled_ikj<64>(const Problem&, const float*, const float*, float*);
template void tiled_ikj<128>(const Problem&, const float*, const float*, float*);
template void tiled_ikj<256>(const Problem&, const float*, const float*, float*);

}  // namespace fastgemm::cpu
