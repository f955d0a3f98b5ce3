// Registers the direct kernels (ladder steps 30-32: direct, direct_dot, gemv) with the
// cpu backend; direct_gemm.hpp says what each one computes and how.
#pragma once

namespace fastgemm {

class Registry;
void register_direct_kernels(Registry& r);

}  // namespace fastgemm
