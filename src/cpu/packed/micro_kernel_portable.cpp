// Portable micro-kernels in plain C++ (compiled for the baseline ISA of the build).
//
// regblock (4 x 8): the fallback on CPUs without a SIMD kernel here, and the ladder
// step that shows what register blocking buys on packed panels. One call owns a 4 x 8
// tile held in a local accumulator array that the compiler keeps in registers; each
// A value is used 8 times and each B value 4 times per load. On x86-64 the compiler
// may vectorise the j loop with SSE2, which is what a portable build really gets.
//
// dot (4 x 8 panels, no register blocking): each element of the tile is one dot
// product over k, read straight from the packed panels. It shows what packing alone
// buys (contiguous, unit-stride panels) before any register reuse.
#include "cpu/packed/micro_kernel.hpp"

namespace fastgemm {
namespace {

constexpr int MR = 4, NR = 8;

inline void store_tile(const float (&acc)[MR][NR], float* c, int64_t ldc, float alpha,
                       float beta, int m, int n) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float r = alpha * acc[i][j];
            // beta == 0: C is not read, so NaN in C does not leak into the result.
            c[i * ldc + j] = beta == 0.0f ? r : r + beta * c[i * ldc + j];
        }
}

void regblock_kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                     float alpha, float beta, int m, int n) {
    float acc[MR][NR] = {};
    for (int64_t k = 0; k < kc; ++k) {
        for (int i = 0; i < MR; ++i) {
            const float ai = a[i];
            for (int j = 0; j < NR; ++j) acc[i][j] += ai * b[j];
        }
        a += MR;
        b += NR;
    }
    store_tile(acc, c, ldc, alpha, beta, m, n);
}

void dot_kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
                float beta, int m, int n) {
    float acc[MR][NR];
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int64_t k = 0; k < kc; ++k) sum += a[k * MR + i] * b[k * NR + j];
            acc[i][j] = sum;
        }
    store_tile(acc, c, ldc, alpha, beta, m, n);
}

const MicroKernel kRegblock{"portable", CpuIsa::scalar, MR, NR, regblock_kernel};
const MicroKernel kDot{"dot", CpuIsa::scalar, MR, NR, dot_kernel};

}  // namespace

const MicroKernel* micro_kernel_portable() { return &kRegblock; }
const MicroKernel* micro_kernel_dot() { return &kDot; }

const MicroKernel* micro_kernel_for(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::avx512: return micro_kernel_avx512();
        case CpuIsa::avx2: return micro_kernel_avx2();
        case CpuIsa::neon: return micro_kernel_neon();
        case CpuIsa::scalar: return micro_kernel_portable();
    }
    return nullptr;
}

}  // namespace fastgemm
