// Helpers shared by the C++ tests: a CHECK that counts failures instead of aborting
// (so one run reports every broken kernel), random operands in [-1, 1), and a float64
// reference over strided row-major storage.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fastgemm/fastgemm.hpp>

namespace test {

inline int& failures() {
    static int n = 0;
    return n;
}

#define CHECK(cond, what)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            ++test::failures();                                                              \
            std::cerr << __FILE__ << ":" << __LINE__ << ": FAILED: " #cond " -- " << what    \
                      << std::endl;                                                          \
        }                                                                                    \
    } while (0)

// Runs body, which must throw E; returns what() ("" and a failure when it does not).
template <class E, class Body>
std::string expect_throw(Body&& body, const std::string& what) {
    try {
        body();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        CHECK(false, what << ": threw the wrong type: " << e.what());
        return "";
    }
    CHECK(false, what << ": did not throw");
    return "";
}

inline int finish(const char* name) {
    if (failures()) {
        std::cerr << name << ": " << failures() << " check(s) FAILED" << std::endl;
        return 1;
    }
    std::cout << name << ": all checks passed" << std::endl;
    return 0;
}

inline std::vector<float> random_matrix(int64_t elements, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(size_t(std::max<int64_t>(elements, 1)));
    for (auto& x : v) x = dist(rng);
    return v;
}

// One sgemm call's operands, stored row-major with padded leading dimensions so that
// a kernel that ignores ld reads or writes the wrong elements.
struct Case {
    int64_t M, N, K;
    bool ta = false, tb = false;
    float alpha = 1.0f, beta = 0.0f;
    int64_t pad = 0;  // extra elements per row in A, B and C
    int64_t lda() const { return std::max<int64_t>(1, ta ? M : K) + pad; }
    int64_t ldb() const { return std::max<int64_t>(1, tb ? K : N) + pad; }
    int64_t ldc() const { return std::max<int64_t>(1, N) + pad; }
    int64_t a_rows() const { return ta ? K : M; }
    int64_t b_rows() const { return tb ? N : K; }
    std::string describe() const {
        std::ostringstream os;
        os << M << "x" << N << "x" << K << (ta ? " ta" : "") << (tb ? " tb" : "") << " alpha=" << alpha
           << " beta=" << beta << " pad=" << pad;
        return os.str();
    }
};

struct Operands {
    std::vector<float> A, B, C0;
    explicit Operands(const Case& c, uint64_t seed = 1)
        : A(random_matrix(c.a_rows() * c.lda(), seed)),
          B(random_matrix(c.b_rows() * c.ldb(), seed + 1)),
          C0(random_matrix(c.M * c.ldc(), seed + 2)) {}
};

// ||C - ref||_F / ||ref||_F over the M x N region, with ref in float64; +inf when C
// has a NaN/Inf or the padding between rows was written.
inline double rel_err(const Case& c, const Operands& o, const std::vector<float>& C) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < c.M; ++i) {
        for (int64_t j = 0; j < c.N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < c.K; ++k) {
                double a = c.ta ? o.A[size_t(k * c.lda() + i)] : o.A[size_t(i * c.lda() + k)];
                double b = c.tb ? o.B[size_t(j * c.ldb() + k)] : o.B[size_t(k * c.ldb() + j)];
                acc += a * b;
            }
            double ref = c.alpha * acc;
            if (c.beta != 0.0f) ref += double(c.beta) * o.C0[size_t(i * c.ldc() + j)];
            double got = C[size_t(i * c.ldc() + j)];
            if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
            num += (got - ref) * (got - ref);
            den += ref * ref;
        }
        for (int64_t j = c.N; j < c.ldc(); ++j) {  // padding must be left alone
            if (i * c.ldc() + j < int64_t(C.size()) && C[size_t(i * c.ldc() + j)] != o.C0[size_t(i * c.ldc() + j)])
                return std::numeric_limits<double>::infinity();
        }
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// C as the kernel should receive it: the random initial values, with the M x N region
// poisoned with NaN when beta == 0 (so an unwritten element fails, and beta == 0 must
// not read C).
inline std::vector<float> initial_c(const Case& c, const Operands& o) {
    std::vector<float> C = o.C0;
    if (c.beta == 0.0f) {
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) C[size_t(i * c.ldc() + j)] = std::numeric_limits<float>::quiet_NaN();
    }
    return C;
}

inline fastgemm::Trans tr(bool t) { return t ? fastgemm::Trans::T : fastgemm::Trans::N; }

}  // namespace test
