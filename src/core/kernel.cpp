#include "kernel.hpp"

namespace fastgemm {

std::unique_ptr<Launch> Kernel::bind(const Problem& p, const float* A, const float* B,
                                     float* C) const {
    p.validate();
    info_.check(p);
    return make_launch(p, A, B, C);
}

}  // namespace fastgemm
