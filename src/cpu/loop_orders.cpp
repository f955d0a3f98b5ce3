// The six loop orders of seed 003 ("All six orders, and the one worse than naive").
//
// Each computes every C(i, j) with one thread. What differs is the innermost loop:
//   inner k (ijk, jik): a dot product; B is walked down a column, one cache line per
//                       element.
//   inner j (ikj, kij): B's row and C's row stream contiguously; the compiler
//                       vectorises the inner loop.
//   inner i (jki, kji): both A and C are walked down columns: the slowest pair.
// Any M, N, K, transposes and leading dimensions; alpha and beta as BLAS defines them
// (alpha == 0 or K == 0 only scales C). The outer loop stops early when Ctrl-C is
// pending (core/interrupt.hpp); the caller then discards C.
#include "cpu/ladder.hpp"
#include "cpu/loop_access.hpp"

namespace fastgemm::cpu {

namespace {

template <bool TA, bool TB>
void ijk_loop(const Problem& p, const float* A, const float* B, float* C) {
    for (int64_t i = 0; i < p.M && !interrupt_requested(); ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
            float sum = 0.0f;
            for (int64_t k = 0; k < p.K; ++k) sum += at<TA>(A, p.lda, i, k) * at<TB>(B, p.ldb, k, j);
            C[i * p.ldc + j] = finish_dot(p, sum, C[i * p.ldc + j]);
        }
    }
}

template <bool TA, bool TB>
void jik_loop(const Problem& p, const float* A, const float* B, float* C) {
    for (int64_t j = 0; j < p.N && !interrupt_requested(); ++j) {
        for (int64_t i = 0; i < p.M; ++i) {
            float sum = 0.0f;
            for (int64_t k = 0; k < p.K; ++k) sum += at<TA>(A, p.lda, i, k) * at<TB>(B, p.ldb, k, j);
            C[i * p.ldc + j] = finish_dot(p, sum, C[i * p.ldc + j]);
        }
    }
}

template <bool TA, bool TB>
void ikj_loop(const Problem& p, const float* A, const float* B, float* C) {
    scale_rows(p, C, 0, p.M);
    for (int64_t i = 0; i < p.M && !interrupt_requested(); ++i) {
        float* c = C + i * p.ldc;
        for (int64_t k = 0; k < p.K; ++k) {
            float a = p.alpha * at<TA>(A, p.lda, i, k);
            for (int64_t j = 0; j < p.N; ++j) c[j] += a * at<TB>(B, p.ldb, k, j);
        }
    }
}

template <bool TA, bool TB>
void kij_loop(const Problem& p, const float* A, const float* B, float* C) {
    scale_rows(p, C, 0, p.M);
    for (int64_t k = 0; k < p.K && !interrupt_requested(); ++k) {
        for (int64_t i = 0; i < p.M; ++i) {
            float a = p.alpha * at<TA>(A, p.lda, i, k);
            float* c = C + i * p.ldc;
            for (int64_t j = 0; j < p.N; ++j) c[j] += a * at<TB>(B, p.ldb, k, j);
        }
    }
}

template <bool TA, bool TB>
void jki_loop(const Problem& p, const float* A, const float* B, float* C) {
    scale_rows(p, C, 0, p.M);
    for (int64_t j = 0; j < p.N; ++j) {
        for (int64_t k = 0; k < p.K; ++k) {
            if (interrupt_requested()) return;  // a column of C is M x K work: too coarse
            float b = p.alpha * at<TB>(B, p.ldb, k, j);
            for (int64_t i = 0; i < p.M; ++i) C[i * p.ldc + j] += at<TA>(A, p.lda, i, k) * b;
        }
    }
}

template <bool TA, bool TB>
void kji_loop(const Problem& p, const float* A, const float* B, float* C) {
    scale_rows(p, C, 0, p.M);
    for (int64_t k = 0; k < p.K; ++k) {
        for (int64_t j = 0; j < p.N; ++j) {
            if (interrupt_requested()) return;  // a k step is all of C: too coarse
            float b = p.alpha * at<TB>(B, p.ldb, k, j);
            for (int64_t i = 0; i < p.M; ++i) C[i * p.ldc + j] += at<TA>(A, p.lda, i, k) * b;
        }
    }
}

}  // namespace

#define FASTGEMM_TRANS_DISPATCH(loop)                                                   \
    void loop(const Problem& p, const float* A, const float* B, float* C) {              \
        if (scale_only(p, C, 0, p.M)) return;                                            \
        with_transposes(p, [&](auto ta, auto tb) {                                       \
            loop##_loop<decltype(ta)::value, decltype(tb)::value>(p, A, B, C);           \
        });                                                                              \
    }

FASTGEMM_TRANS_DISPATCH(ijk)
FASTGEMM_TRANS_DISPATCH(jik)
FASTGEMM_TRANS_DISPATCH(ikj)
FASTGEMM_TRANS_DISPATCH(kij)
FASTGEMM_TRANS_DISPATCH(jki)
FASTGEMM_TRANS_DISPATCH(kji)

#undef FASTGEMM_TRANS_DISPATCH

}  // namespace fastgemm::cpu
