// Context::benchmark returns Timings: one entry per timed iteration, a passed
// verification, and (with a baseline) a ratio measured on the same inputs.
#include <cmath>

#include "test_support.hpp"

using namespace fastgemm;

int main() {
    Context ctx("cpu");
    BenchmarkOptions o;
    o.warmup = 1;
    o.iters = 3;
    o.baseline = "auto";
    o.trans_b = true;
    o.alpha = 0.5f;
    o.beta = 2.0f;
    bool has_baseline = false;
    for (const KernelInfo& k : ctx.kernels()) has_baseline |= k.baseline;
    if (!has_baseline) o.baseline.clear();  // a build without BLAS has no cpu baseline

    Timings t = ctx.benchmark("auto", 67, 45, 31, o);
    CHECK(t.backend == "cpu", t.backend);
    CHECK(t.device_s.size() == 3 && t.host_s.size() == 3, "iterations recorded: " << t.device_s.size());
    CHECK(t.verified && t.verification.passed, "verification: rel_err " << t.verification.rel_err);
    CHECK(t.verification.all_finite, "NaN left in C");
    CHECK(t.device_median() > 0 && std::isfinite(t.gflops()), "median " << t.device_median());
    CHECK(t.problem.M == 67 && t.problem.N == 45 && t.problem.K == 31 && t.problem.trans_b, t.problem.describe());
    if (has_baseline) {
        CHECK(t.baseline.has_value() && t.baseline->verification.passed, "baseline did not run or failed");
        CHECK(t.ratio > 0 && std::isfinite(t.ratio), "ratio " << t.ratio);
        CHECK(t.diff_vs_baseline < 1e-3, "diff vs baseline " << t.diff_vs_baseline);
    } else {
        CHECK(!t.baseline.has_value(), "a baseline ran without being asked for");
    }

    // Every cpu kernel through the same harness, no baseline, on a problem it accepts
    // (A @ B^T for the kernels that need it, a vector for the matrix-vector kernel).
    for (const KernelInfo& k : ctx.kernels()) {
        BenchmarkOptions q;
        q.warmup = 0;
        q.iters = 1;
        int64_t M = 33;
        if (!k.accepts(Problem::dense(M, 17, 9))) q.trans_b = true;
        if (!k.accepts(Problem::dense(M, 17, 9, q.trans_a, q.trans_b, 1.0f, 0.0f))) M = 1;
        Timings r = ctx.benchmark(k.name, M, 17, 9, q);
        CHECK(r.kernel == k.name && r.verification.passed, k.name << ": rel_err " << r.verification.rel_err);
        CHECK(r.precision == k.precision, k.name);
    }

    test::expect_throw<NotFoundError>([&] { ctx.benchmark("no_such_kernel", 8, 8, 8); }, "unknown kernel");
    BenchmarkOptions bad;
    bad.iters = 0;
    std::string msg = test::expect_throw<ArgumentError>([&] { ctx.benchmark("auto", 8, 8, 8, bad); }, "iters = 0");
    CHECK(msg.find("iters=0") != std::string::npos, msg);

    // A benchmark whose operands cannot fit is refused before any allocation, with a
    // class that one catch of fastgemm::Error sees (std::bad_alloc would slip past it).
    msg = test::expect_throw<OutOfMemoryError>([&] { ctx.benchmark("ijk", 1 << 20, 1 << 20, 1 << 20); },
                                               "operands of 12 TiB");
    CHECK(msg.find("GiB of memory is available") != std::string::npos, msg);
    test::expect_throw<Error>([&] { ctx.benchmark("ijk", 1 << 20, 1 << 20, 1 << 20); }, "as a fastgemm::Error");
    return test::finish("test_benchmark");
}
