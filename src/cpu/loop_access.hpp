// Element access and scalar handling shared by the CPU loop ladder.
//
// The loops are templates on the two transposes, so each of the four combinations
// compiles to its own loop nest with constant strides: the untransposed case keeps the
// exact memory walk the seed measured, and a transposed operand pays only for the walk
// its layout really implies.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/interrupt.hpp"
#include "core/problem.hpp"

namespace fastgemm::cpu {

// X(r, c) of op(X), for X stored row-major with leading dimension ld.
template <bool Trans>
inline float at(const float* X, int64_t ld, int64_t r, int64_t c) {
    return Trans ? X[c * ld + r] : X[r * ld + c];
}

// Calls f(std::bool_constant<trans_a>, std::bool_constant<trans_b>).
template <class F>
inline void with_transposes(const Problem& p, F&& f) {
    using T = std::true_type;
    using N = std::false_type;
    if (p.trans_a) {
        p.trans_b ? f(T{}, T{}) : f(T{}, N{});
    } else {
        p.trans_b ? f(N{}, T{}) : f(N{}, N{});
    }
}

// Loops that accumulate into C start from beta * C. beta == 0 overwrites C without
// reading it (BLAS semantics: NaN already in C does not propagate).
inline void scale_rows(const Problem& p, float* C, int64_t row_begin, int64_t row_end) {
    for (int64_t i = row_begin; i < row_end; ++i) {
        float* c = C + i * p.ldc;
        if (p.beta == 0.0f) {
            for (int64_t j = 0; j < p.N; ++j) c[j] = 0.0f;
        } else if (p.beta != 1.0f) {
            for (int64_t j = 0; j < p.N; ++j) c[j] *= p.beta;
        }
    }
}

// BLAS quick return: alpha == 0 or K == 0 means C = beta * C, and A and B are not read
// (reference sgemm returns early there, so NaN or Inf in A or B does not reach C; OpenBLAS
// does the same). Returns true when rows [row_begin, row_end) are done.
inline bool scale_only(const Problem& p, float* C, int64_t row_begin, int64_t row_end) {
    if (p.alpha != 0.0f && p.K != 0) return false;
    scale_rows(p, C, row_begin, row_end);
    return true;
}

// Loops that form a whole dot product write alpha * sum (+ beta * C).
inline float finish_dot(const Problem& p, float sum, float c_old) {
    float v = p.alpha * sum;
    return p.beta == 0.0f ? v : v + p.beta * c_old;
}

}  // namespace fastgemm::cpu
