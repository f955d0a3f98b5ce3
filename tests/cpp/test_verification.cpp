// Bench::verify holds every element to a rule: within the precision class's tolerance
// where the exact result and its partial sums stay in float32's range, IEEE's rules where
// they do not (alpha or beta NaN or Inf, an overflow). A kernel that follows BLAS and IEEE
// passes in every case; one that skips an element, turns a NaN into a number, gets an
// infinity's sign wrong, or leaves an overflow-free element infinite fails, even where
// the right answer itself is NaN.
#include <cmath>
#include <limits>

#include "core/host_kernel.hpp"
#include "test_support.hpp"

using namespace fastgemm;

namespace {

// BLAS semantics with IEEE arithmetic, as a float32 kernel would compute them: the product
// only when alpha != 0 and K > 0, C read only when beta != 0.
float element(const Problem& p, const float* A, const float* B, const float* C, int64_t i, int64_t j) {
    float sum = 0.0f;
    for (int64_t k = 0; k < p.K; ++k) sum += A[i * p.lda + k] * B[k * p.ldb + j];
    float c = (p.alpha != 0.0f && p.K > 0) ? p.alpha * sum : 0.0f;
    if (p.beta != 0.0f) c += p.beta * C[i * p.ldc + j];
    return c;
}

void ieee_kernel(const Problem& p, const float* A, const float* B, float* C) {
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) C[i * p.ldc + j] = element(p, A, B, C, i, j);
}
// Right everywhere but one element, which it never writes.
void skips_one(const Problem& p, const float* A, const float* B, float* C) {
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j)
            if (i != p.M / 2 || j != p.N / 2) C[i * p.ldc + j] = element(p, A, B, C, i, j);
}
// Writes 0 where the result is NaN (a kernel that "cleans" its output).
void nan_to_zero(const Problem& p, const float* A, const float* B, float* C) {
    ieee_kernel(p, A, B, C);
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j)
            if (std::isnan(C[i * p.ldc + j])) C[i * p.ldc + j] = 0.0f;
}
// Flips the sign of every infinity.
void flips_infinities(const Problem& p, const float* A, const float* B, float* C) {
    ieee_kernel(p, A, B, C);
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j)
            if (std::isinf(C[i * p.ldc + j])) C[i * p.ldc + j] = -C[i * p.ldc + j];
}
// Right, except one element set to +Inf.
void one_infinity(const Problem& p, const float* A, const float* B, float* C) {
    ieee_kernel(p, A, B, C);
    if (p.M && p.N) C[(p.M - 1) * p.ldc + p.N - 1] = std::numeric_limits<float>::infinity();
}

Verification verify_with(HostGemm fn, const Problem& p) {
    KernelInfo info;
    info.name = "verification_probe";
    info.backend = "cpu";
    info.source = "tests/cpp/test_verification.cpp";
    HostKernel kernel(std::move(info), fn);
    Bench bench(p);
    return bench.verify(kernel);
}

}  // namespace

int main() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    struct Scalars {
        const char* what;
        float alpha, beta;
        bool ieee;  // some element is outside float32's ordinary range
    };
    const Scalars cases[] = {
        {"alpha = 1, beta = 0", 1.0f, 0.0f, false},      {"alpha = 1, beta = 0.5", 1.0f, 0.5f, false},
        {"alpha = NaN, beta = 0", nan, 0.0f, true},      {"alpha = NaN, beta = 1", nan, 1.0f, true},
        {"alpha = Inf, beta = 0", inf, 0.0f, true},      {"alpha = -Inf, beta = 1", -inf, 1.0f, true},
        {"alpha = 1, beta = NaN", 1.0f, nan, true},      {"alpha = 1, beta = -Inf", 1.0f, -inf, true},
        {"alpha = 3e38 (overflow), beta = 0", 3e38f, 0.0f, true},
    };
    for (const Scalars& s : cases) {
        const Problem p = Problem::dense(37, 29, 23, false, false, s.alpha, s.beta);
        Verification v = verify_with(ieee_kernel, p);
        CHECK(v.passed, s.what << ": an IEEE kernel failed (rel_err " << v.rel_err << ", mismatches "
                               << v.ieee_mismatches << ", unwritten " << v.unwritten << ")");
        CHECK((v.ieee_elements > 0) == s.ieee, s.what << ": " << v.ieee_elements << " IEEE elements");

        v = verify_with(skips_one, p);
        CHECK(!v.passed, s.what << ": a kernel that skips an element passed");
        if (s.beta == 0.0f) CHECK(v.unwritten == 1, s.what << ": unwritten " << v.unwritten);

        if (!s.ieee) {
            CHECK(!verify_with(one_infinity, p).passed, s.what << ": an infinity in an overflow-free product passed");
        }
    }
    // A NaN turned into a number, an infinity of the wrong sign: both fail.
    CHECK(!verify_with(nan_to_zero, Problem::dense(37, 29, 23, false, false, nan, 0.0f)).passed,
          "NaN results written as 0 passed");
    CHECK(!verify_with(flips_infinities, Problem::dense(37, 29, 23, false, false, inf, 0.0f)).passed,
          "infinities of the wrong sign passed");
    // K = 0: BLAS forms no product, so a NaN alpha does not reach C = beta * C.
    Verification v = verify_with(ieee_kernel, Problem::dense(5, 7, 0, false, false, nan, 1.0f));
    CHECK(v.passed && v.ieee_elements == 0, "K = 0 with alpha = NaN: passed " << v.passed);
    return test::finish("test_verification");
}
