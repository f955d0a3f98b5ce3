#include "problem.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "errors.hpp"

namespace fastgemm {

Problem Problem::dense(int64_t M, int64_t N, int64_t K) {
    return dense(M, N, K, false, false, 1.0f, 0.0f);
}

Problem Problem::dense(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha,
                       float beta) {
    Problem p;
    p.M = M, p.N = N, p.K = K;
    p.trans_a = trans_a, p.trans_b = trans_b;
    p.alpha = alpha, p.beta = beta;
    p.lda = std::max<int64_t>(1, p.a_cols());
    p.ldb = std::max<int64_t>(1, p.b_cols());
    p.ldc = std::max<int64_t>(1, N);
    return p;
}

static int64_t span(int64_t rows, int64_t cols, int64_t ld) {
    return (rows == 0 || cols == 0) ? 0 : (rows - 1) * ld + cols;
}
int64_t Problem::a_span() const { return span(a_rows(), a_cols(), lda); }
int64_t Problem::b_span() const { return span(b_rows(), b_cols(), ldb); }
int64_t Problem::c_span() const { return span(M, N, ldc); }

void Problem::validate() const {
    if (M < 0 || N < 0 || K < 0) {
        throw ShapeError("dimensions must be non-negative, got " + describe());
    }
    auto check_ld = [](const char* name, int64_t ld, int64_t cols) {
        if (ld < std::max<int64_t>(1, cols)) {
            std::ostringstream os;
            os << name << " = " << ld << " is smaller than the row length " << cols
               << " (leading dimensions count elements between rows and must be >= max(1, cols))";
            throw ShapeError(os.str());
        }
    };
    check_ld("lda", lda, a_cols());
    check_ld("ldb", ldb, b_cols());
    check_ld("ldc", ldc, N);
    // Spans are computed as (rows - 1) * ld + cols in int64 and then as bytes: refuse
    // sizes whose byte count does not fit, instead of overflowing into a wrong offset.
    const int64_t max_elements = std::numeric_limits<int64_t>::max() / int64_t(sizeof(float));
    auto check_span = [&](const char* name, int64_t rows, int64_t cols, int64_t ld) {
        if (rows <= 0 || cols <= 0) return;
        // cols > max_elements first: (max_elements - cols) would be negative, and its
        // quotient round to zero, which lets a single row of any length through.
        if (cols > max_elements || rows - 1 > (max_elements - cols) / ld) {
            std::ostringstream os;
            os << name << " spans " << rows << " rows of " << cols << " elements, leading dimension " << ld
               << ": more bytes than a 64-bit offset can address (" << describe() << ")";
            throw ShapeError(os.str());
        }
    };
    check_span("A", a_rows(), a_cols(), lda);
    check_span("B", b_rows(), b_cols(), ldb);
    check_span("C", M, N, ldc);
}

std::string Problem::describe() const {
    std::ostringstream os;
    os << M << "x" << N << "x" << K << " (M x N x K)";
    if (trans_a) os << ", trans_a";
    if (trans_b) os << ", trans_b";
    if (alpha != 1.0f) os << ", alpha=" << alpha;
    if (beta != 0.0f) os << ", beta=" << beta;
    return os.str();
}

}  // namespace fastgemm
