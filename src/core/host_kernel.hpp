// HostKernel: a kernel that is one C++ function over host memory (the CPU ladder and
// the BLAS baselines). Its device and host times are the same steady clock around
// the call.
#pragma once

#include "kernel.hpp"

namespace fastgemm {

using HostGemm = void (*)(const Problem& p, const float* A, const float* B, float* C);

class HostKernel : public Kernel {
public:
    HostKernel(KernelInfo info, HostGemm fn) : Kernel(std::move(info)), fn_(fn), timed_fn_(fn) {}
    // `timed` runs in timed and verified runs (Launch), `fn` in a user's single call: a
    // vendor baseline is timed as one call, as its users make it, while a user's call of
    // it may be cut into interruptible pieces.
    HostKernel(KernelInfo info, HostGemm fn, HostGemm timed)
        : Kernel(std::move(info)), fn_(fn), timed_fn_(timed) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override;
    // A single call is the function itself: no Launch object, no clock.
    void run_direct(const Problem& p, const float* A, const float* B, float* C) const override;

private:
    HostGemm fn_, timed_fn_;
};

}  // namespace fastgemm
