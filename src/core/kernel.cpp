#include "kernel.hpp"

#include "interrupt.hpp"

#include <algorithm>
#include <chrono>

namespace fastgemm {

namespace {

// BLAS quick return, shared by every backend: with alpha == 0 or K == 0 the product
// is not formed and A and B are not read (reference sgemm returns early, so NaN or Inf
// in A or B never reaches C), leaving C = beta * C; beta == 0 writes zeros without
// reading C. M == 0 or N == 0 leaves nothing to do.
class ScaleOnlyLaunch : public Launch {
public:
    ScaleOnlyLaunch(const Problem& p, float* C) : p_(p), C_(C) {}

    Timing run() override {
        auto t0 = std::chrono::steady_clock::now();
        if (p_.beta != 1.0f) {
            for (int64_t i = 0; i < p_.M; ++i) {
                float* row = C_ + i * p_.ldc;
                for (int64_t j = 0; j < p_.N; ++j) row[j] = p_.beta == 0.0f ? 0.0f : p_.beta * row[j];
            }
        }
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return {s, s, 0.0};
    }

private:
    Problem p_;
    float* C_;
};

}  // namespace

RepeatTiming Launch::run_repeated(int calls) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) run();
    finish();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / std::max(calls, 1), 0.0};
}

std::unique_ptr<Launch> Kernel::bind(const Problem& p, const float* A, const float* B,
                                     float* C) const {
    p.validate();
    info_.check(p);
    if (p.alpha == 0.0f || p.K == 0 || p.M == 0 || p.N == 0) {
        return std::make_unique<ScaleOnlyLaunch>(p, C);
    }
    return make_launch(p, A, B, C);
}

void Kernel::run_once(const Problem& p, const float* A, const float* B, float* C) const {
    p.validate();
    info_.check(p);
    if (p.alpha == 0.0f || p.K == 0 || p.M == 0 || p.N == 0) {
        ScaleOnlyLaunch(p, C).run();
        return;
    }
    run_direct(p, A, B, C);
    throw_if_interrupted();  // a loop that returned early left C incomplete
}

void Kernel::run_direct(const Problem& p, const float* A, const float* B, float* C) const {
    auto launch = make_launch(p, A, B, C);
    launch->run();
    launch->finish();
}

}  // namespace fastgemm
