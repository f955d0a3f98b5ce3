// DirectIsa: one instruction set's pieces of the direct kernels (direct_tiles.hpp),
// behind function pointers so the drivers in direct_gemm.cpp stay ISA-neutral, as the
// packed driver does with its micro-kernel.
#pragma once

#include <cstdint>

#include "cpu/packed/cpu_isa.hpp"

namespace fastgemm {

struct DirectIsa {
    const char* name;  // "avx512", "avx2", "portable"
    CpuIsa isa;
    // RowsTile: C[0:m, 0:n] (m <= rows_mr, n <= rows_nr) from op(A) with unit k stride
    // (rows_tile_a_rows: element (i, k) at a[i * sa + k]) or unit i stride
    // (rows_tile_a_cols: at a[k * sa + i]), and op(B) rows of unit stride along j.
    int rows_mr, rows_nr;
    void (*rows_tile_a_rows)(int64_t kc, const float* a, int64_t sa, const float* b, int64_t rs_b,
                             float* c, int64_t ldc, float alpha, float beta, int m, int n);
    void (*rows_tile_a_cols)(int64_t kc, const float* a, int64_t sa, const float* b, int64_t rs_b,
                             float* c, int64_t ldc, float alpha, float beta, int m, int n);
    // DotTile: m <= dot_mr rows of op(A) (unit k stride, row stride lda) against n <=
    // dot_nr columns of op(B) (unit k stride, column stride ldb); C(i, j) at
    // c[i * rs_c + j * cs_c].
    int dot_mr, dot_nr;
    void (*dot_tile)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t rs_c, int64_t cs_c, float alpha, float beta, int m, int n);
    // y[0:n] = sum_k x[k] * b[k * ldb + j] (raw sums; y is overwritten).
    void (*gemv_rows_sum)(int64_t K, int64_t n, const float* x, const float* b, int64_t ldb, float* y);
    // y[r] = sum_k a[r * lda + k] * x[k] for r < rows (raw sums; y is overwritten).
    void (*gemv_dot_rows)(int64_t K, int64_t rows, const float* a, int64_t lda, const float* x, float* y);
};

// nullptr when this build or CPU has no such path.
const DirectIsa* direct_isa_avx512();
const DirectIsa* direct_isa_avx2();
const DirectIsa* direct_isa_portable();  // always available
// The pieces for an instruction set (portable for scalar and neon).
const DirectIsa* direct_isa_for(CpuIsa isa);

}  // namespace fastgemm
