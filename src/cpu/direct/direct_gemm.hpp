// Drivers of the direct kernels: small, skinny and vector problems computed from the
// operands where they lie (direct_tiles.hpp explains the tiles).
//
//   direct_gemm      any problem. op(A) is read in place whichever way it is stored;
//                    op(B) too when its rows run along N (B not transposed), else each
//                    kc x nc block of op(B) is copied into a row-major scratch block
//                    first (the one copy, and only of B).
//   direct_dot_gemm  A not transposed, B transposed (x @ W^T, PyTorch Linear's layout):
//                    op(A)'s rows and op(B)'s columns both run along K, so tiles of dot
//                    products read both in place; the big operand streams through once.
//   direct_gemv      M == 1 or N == 1: matrix-vector products at memory speed, the
//                    matrix read once front to back (rows-form sums for a matrix whose
//                    rows run along the output, dot products for one whose rows run
//                    along K).
//
// Threads: each driver splits the output into contiguous ranges, one per thread, and
// only when the problem is big enough to pay for waking them (direct_threads). No
// element's summation order depends on the thread count or the range it fell in, so
// results are bit-identical for every thread count.
#pragma once

#include "core/problem.hpp"
#include "cpu/direct/direct_isa.hpp"

namespace fastgemm {

void direct_gemm(const DirectIsa& isa, const Problem& p, const float* A, const float* B, float* C,
                 int max_threads);
void direct_dot_gemm(const DirectIsa& isa, const Problem& p, const float* A, const float* B, float* C,
                     int max_threads);
void direct_gemv(const DirectIsa& isa, const Problem& p, const float* A, const float* B, float* C,
                 int max_threads);

// Threads worth using for `work` units when each extra thread needs `per_thread` of
// them to pay for itself: 1 for small problems, never more than max_threads.
int direct_threads(double work, double per_thread, int max_threads);

}  // namespace fastgemm
