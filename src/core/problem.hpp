// Problem: one SGEMM call, C = alpha * op(A) @ op(B) + beta * C, row-major storage.
//
// op(A) is M x K and op(B) is K x N whatever the transposes; the leading dimensions
// describe the arrays as stored (A is M x K, or K x M when trans_a). Offsets are
// 64-bit everywhere so that element counts past 2^31 index correctly.
#pragma once

#include <cstdint>
#include <string>

namespace fastgemm {

struct Problem {
    int64_t M = 0, N = 0, K = 0;
    int64_t lda = 0, ldb = 0, ldc = 0;  // row stride of the stored A, B, C, in elements
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;

    // Densely packed row-major operands, no transposes, alpha = 1, beta = 0.
    static Problem dense(int64_t M, int64_t N, int64_t K);
    // Densely packed with the given transposes and scalars.
    static Problem dense(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                         float alpha, float beta);

    int64_t a_rows() const { return trans_a ? K : M; }
    int64_t a_cols() const { return trans_a ? M : K; }
    int64_t b_rows() const { return trans_b ? N : K; }
    int64_t b_cols() const { return trans_b ? K : N; }

    // Elements the stored arrays span, (rows - 1) * ld + cols; 0 for an empty operand.
    int64_t a_span() const;
    int64_t b_span() const;
    int64_t c_span() const;

    double flops() const { return 2.0 * double(M) * double(N) * double(K); }
    bool is_plain() const { return !trans_a && !trans_b && alpha == 1.0f && beta == 0.0f; }

    // Throws ShapeError when a dimension is negative or a leading dimension is too small.
    void validate() const;
    std::string describe() const;  // "1024x1024x1024 (M x N x K), trans_b, alpha=2"
};

// op(A)(i, k) and op(B)(k, j) for loops that read operands element by element.
inline float op_a(const Problem& p, const float* A, int64_t i, int64_t k) {
    return p.trans_a ? A[k * p.lda + i] : A[i * p.lda + k];
}
inline float op_b(const Problem& p, const float* B, int64_t k, int64_t j) {
    return p.trans_b ? B[j * p.ldb + k] : B[k * p.ldb + j];
}

}  // namespace fastgemm
