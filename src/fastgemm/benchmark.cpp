// Context::benchmark: the core's Bench (random inputs, float64 reference, native
// timing loop) on one backend, with the baseline run first on the same inputs, as the
// Python fastgemm.benchmark and `fastgemm bench` do.
#include <utility>

#include "context.hpp"
#include "core/selection.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"

namespace fastgemm {

namespace {

const Kernel& resolve(const std::string& backend, const std::string& name, const Problem& p) {
    if (name.empty() || name == "auto") return select_kernel(backend, p);
    return Registry::global().resolve_kernel(backend, name);
}

const Kernel& resolve_baseline(const std::string& backend, const std::string& name) {
    if (name != "auto") return Registry::global().kernel(backend, name);
    for (const Kernel* k : Registry::global().kernels(backend)) {
        if (k->info().baseline) return *k;
    }
    throw NotFoundError("backend '" + backend + "' has no baseline kernel");
}

}  // namespace

Timings Context::benchmark(const std::string& kernel, int64_t M, int64_t N, int64_t K,
                           const BenchmarkOptions& o) const {
    if (o.iters < 1 || o.warmup < 0) {
        throw ShapeError("benchmark needs iters >= 1 and warmup >= 0, got iters=" + std::to_string(o.iters) +
                         ", warmup=" + std::to_string(o.warmup));
    }
    Problem p = Problem::dense(M, N, K, o.trans_a, o.trans_b, o.alpha, o.beta);
    p.validate();
    const Kernel& k = resolve(backend_, kernel, p);
    // The baseline comes from the backend of the kernel it is compared with.
    const Kernel* base = o.baseline.empty() ? nullptr : &resolve_baseline(k.info().backend, o.baseline);
    k.info().check(p);  // before the baseline spends time on a problem the kernel rejects

    BenchOptions run_opts;
    run_opts.warmup = o.warmup;
    run_opts.iters = o.iters;
    run_opts.verify = o.verify;
    run_opts.max_seconds = o.max_seconds;

    Bench bench(p, o.seed);
    Timings t;
    std::vector<float> base_out;
    if (base) {
        t.baseline = bench.run(*base, run_opts);
        base_out = bench.last_output();
    }
    static_cast<BenchResult&>(t) = bench.run(k, run_opts);
    t.precision = k.info().precision;
    if (base) {
        t.ratio = t.baseline->device_median() / t.device_median();
        t.diff_vs_baseline = bench.max_abs_diff(bench.last_output(), base_out);
    }
    return t;
}

}  // namespace fastgemm
