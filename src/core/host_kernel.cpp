#include "host_kernel.hpp"

#include <chrono>

namespace fastgemm {

namespace {

class HostLaunch : public Launch {
public:
    HostLaunch(HostGemm fn, const Problem& p, const float* A, const float* B, float* C)
        : fn_(fn), p_(p), A_(A), B_(B), C_(C) {}

    Timing run() override {
        using Clock = std::chrono::steady_clock;
        auto t0 = Clock::now();
        fn_(p_, A_, B_, C_);
        double s = std::chrono::duration<double>(Clock::now() - t0).count();
        return {s, s, 0.0};
    }

private:
    HostGemm fn_;
    Problem p_;
    const float* A_;
    const float* B_;
    float* C_;
};

}  // namespace

std::unique_ptr<Launch> HostKernel::make_launch(const Problem& p, const float* A, const float* B,
                                                float* C) const {
    return std::make_unique<HostLaunch>(timed_fn_, p, A, B, C);
}

void HostKernel::run_direct(const Problem& p, const float* A, const float* B, float* C) const {
    fn_(p, A, B, C);
}

}  // namespace fastgemm
