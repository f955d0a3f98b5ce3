// ikj split across threads, seed 003's last CPU step: thread t owns a contiguous band of
// rows of C (rows are split as evenly as possible) and runs the ikj body on it. Bands
// share A's rows with nobody and B with everybody, so there is no write sharing; B is
// re-read by every thread. Thread count = fastgemm.get_num_threads(). Any shape.
#include <algorithm>

#include "core/threads.hpp"
#include "cpu/ladder.hpp"
#include "cpu/loop_access.hpp"

namespace fastgemm::cpu {

namespace {

template <bool TA, bool TB>
void band(const Problem& p, const float* A, const float* B, float* C, int64_t i0, int64_t i1) {
    if (scale_only(p, C, i0, i1)) return;
    scale_rows(p, C, i0, i1);
    for (int64_t i = i0; i < i1 && !interrupt_requested(); ++i) {
        float* c = C + i * p.ldc;
        for (int64_t k = 0; k < p.K; ++k) {
            float a = p.alpha * at<TA>(A, p.lda, i, k);
            for (int64_t j = 0; j < p.N; ++j) c[j] += a * at<TB>(B, p.ldb, k, j);
        }
    }
}

}  // namespace

void ikj_threads(const Problem& p, const float* A, const float* B, float* C) {
    int bands = int(std::min<int64_t>(get_num_threads(), std::max<int64_t>(p.M, 1)));
    parallel_for(bands, [&](int t, int n) {
        int64_t i0 = p.M * t / n, i1 = p.M * (t + 1) / n;
        with_transposes(p, [&](auto ta, auto tb) {
            band<decltype(ta)::value, decltype(tb)::value>(p, A, B, C, i0, i1);
        });
    });
}

}  // namespace fastgemm::cpu
