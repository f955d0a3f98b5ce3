// The micro-kernel: the only architecture-specific piece of the packed SGEMM.
//
// It computes one MR x NR tile of C from two packed micro-panels, keeping the whole
// tile in registers for the full k loop:
//   a: kc x MR, element (k, i) at a[k * MR + i]   (MR rows of op(A), k-major)
//   b: kc x NR, element (k, j) at b[k * NR + j]   (NR columns of op(B), k-major)
//   C[i][j] (i < m, j < n) = alpha * sum_k a(k,i) b(k,j) + beta * C[i][j]
// m <= MR and n <= NR: edge tiles run the same kernel (the panels are zero-padded, so
// the registers hold a full tile) and only the store is masked, which keeps the
// summation order of every element independent of where it sits. beta == 0 writes C
// without reading it (NaN or garbage in C is ignored, as in BLAS).
#pragma once

#include <cstdint>

#include "cpu/packed/cpu_isa.hpp"

namespace fastgemm {

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                               float alpha, float beta, int m, int n);

struct MicroKernel {
    const char* name;  // "avx512_12x32"
    CpuIsa isa;
    int mr, nr;
    MicroKernelFn fn;
};

// nullptr when this build has no such kernel (other architecture).
const MicroKernel* micro_kernel_avx512();
const MicroKernel* micro_kernel_avx2();
const MicroKernel* micro_kernel_neon();
// Portable C++, register-blocked (ladder step "packed_regblock" and the fallback path).
const MicroKernel* micro_kernel_portable();
// Portable C++, one dot product per element, no register blocking (ladder step
// "packed_scalar": what packing alone buys).
const MicroKernel* micro_kernel_dot();

// The register-blocked kernel of an instruction set (portable for scalar).
const MicroKernel* micro_kernel_for(CpuIsa isa);

}  // namespace fastgemm
