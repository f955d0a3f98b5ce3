// Every kernel of every available backend, called through the public C++ API on raw
// pointers: edge shapes (1, primes, K = 0), all four transposes, alpha/beta, padded
// leading dimensions, NaN-poisoned C, and the column-major overload. Checked against a
// float64 reference with the tolerance of the kernel's precision class.
#include <vector>

#include "test_support.hpp"

using namespace fastgemm;

namespace {

std::vector<test::Case> cases() {
    std::vector<test::Case> out;
    out.push_back({1, 1, 1});
    for (bool ta : {false, true})
        for (bool tb : {false, true}) out.push_back({37, 29, 23, ta, tb});
    out.push_back({37, 29, 23, true, false, -1.5f, 0.75f, 3});
    out.push_back({5, 7, 0, false, false, 1.0f, 0.5f});  // K = 0: C = beta * C
    out.push_back({64, 64, 64});
    out.push_back({128, 96, 64, false, true, 2.0f, 0.5f, 5});
    return out;
}

// Runs one case through ctx.sgemm (row-major, or the column-major overload with the
// operands swapped, which must give the same memory) and checks the result.
void run_case(const Context& ctx, const KernelInfo& k, const test::Case& c, bool col_major) {
    test::Operands o(c, 11 + c.M);
    std::vector<float> C = test::initial_c(c, o);
    const KernelInfo* ran;
    if (!col_major) {
        ran = &ctx.sgemm(test::tr(c.ta), test::tr(c.tb), c.M, c.N, c.K, c.alpha, o.A.data(), c.lda(),
                         o.B.data(), c.ldb(), c.beta, C.data(), c.ldc(), k.name);
    } else {
        // Row-major C (M x N) is column-major C^T (N x M) = op(B)^T op(A)^T.
        ran = &ctx.sgemm(Layout::ColMajor, test::tr(c.tb), test::tr(c.ta), c.N, c.M, c.K, c.alpha, o.B.data(),
                         c.ldb(), o.A.data(), c.lda(), c.beta, C.data(), c.ldc(), k.name);
    }
    CHECK(ran->name == k.name, "sgemm reports kernel " << ran->name << ", asked for " << k.name);
    double err = test::rel_err(c, o, C);
    double tol = tolerance_for(k.precision, c.K);
    CHECK(err <= tol, k.backend << "/" << k.name << " " << c.describe() << (col_major ? " (col-major)" : "")
                                << ": rel_err " << err << " > tolerance " << tol);
}

}  // namespace

int main() {
    int backends_tested = 0;
    for (const BackendStatus& b : backends()) {
        if (!b.available) {
            std::cout << "backend " << b.name << " unavailable: " << b.reason << "\n";
            continue;
        }
        Context ctx(b.name);
        CHECK(ctx.backend() == b.name, "Context(" << b.name << ").backend() is " << ctx.backend());
        int kernels_tested = 0;
        for (const KernelInfo& k : ctx.kernels()) {
            int ran = 0;
            for (const test::Case& c : cases()) {
                Problem p = Problem::dense(c.M, c.N, c.K, c.ta, c.tb, c.alpha, c.beta);
                if (!k.accepts(p)) continue;
                run_case(ctx, k, c, false);
                run_case(ctx, k, c, true);
                ++ran;
            }
            std::cout << b.name << "/" << k.name << ": " << ran << " cases\n";
            kernels_tested += ran > 0;
        }
        CHECK(kernels_tested > 0, "no kernel of backend " << b.name << " accepted any test case");

        // kernel = "auto" and the process-wide fastgemm::sgemm.
        test::Case c{37, 29, 23, false, true, 1.0f, 0.0f, 2};
        test::Operands o(c);
        std::vector<float> C = test::initial_c(c, o);
        const KernelInfo& chosen = ctx.sgemm(Trans::N, Trans::T, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(),
                                             o.B.data(), c.ldb(), 0.0f, C.data(), c.ldc());
        CHECK(test::rel_err(c, o, C) <= tolerance_for(chosen.precision, c.K), "auto picked " << chosen.name);
        CHECK(chosen.name == ctx.select(c.M, c.N, c.K, Trans::N, Trans::T).name,
              "select() disagrees with the kernel auto ran: " << chosen.name);
        ++backends_tested;
    }
    CHECK(backends_tested > 0, "no backend available (cpu always should be)");

    // The default context's sgemm, and an empty problem that must not touch C.
    test::Case c{17, 13, 11};
    test::Operands o(c);
    std::vector<float> C = test::initial_c(c, o);
    const KernelInfo& k = sgemm(Trans::N, Trans::N, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(), o.B.data(),
                                c.ldb(), 0.0f, C.data(), c.ldc());
    CHECK(test::rel_err(c, o, C) <= tolerance_for(k.precision, c.K), "fastgemm::sgemm via " << k.name);
    float sentinel = 42.0f;
    sgemm(Trans::N, Trans::N, 0, 1, 5, 1.0f, o.A.data(), 5, o.B.data(), 1, 0.0f, &sentinel, 1);
    CHECK(sentinel == 42.0f, "M = 0 wrote C");
    return test::finish("test_sgemm");
}
