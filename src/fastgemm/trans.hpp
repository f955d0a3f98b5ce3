// Operand flags of the BLAS-like entry points: op(X) = X or X^T, and whether the
// caller's matrices are stored row by row (fastgemm's native layout) or column by
// column (Fortran/BLAS). Plain enums rather than bools, so a call site reads like
// cblas_sgemm and two adjacent flags cannot be swapped silently.
#pragma once

namespace fastgemm {

enum class Trans { N, T };  // N: op(X) = X;  T: op(X) = X^T

enum class Layout { RowMajor, ColMajor };

}  // namespace fastgemm
