// BaselineComparison (comparison.hpp) and Context::benchmark, which runs through it.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "comparison.hpp"
#include "contention.hpp"
#include "context.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/registry.hpp"
#include "core/selection.hpp"
#include "core/threads.hpp"

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

bool stop_requested(const BenchOptions& o) {
    return interrupt_requested() || (o.should_stop && o.should_stop());
}

// max(a, b) / min(a, b) - 1: how far apart two medians are, whichever is larger.
double relative_change(double a, double b) {
    double lo = std::min(a, b), hi = std::max(a, b);
    return lo > 0 ? hi / lo - 1.0 : 0.0;
}

}  // namespace

void settle_after_baseline(const KernelInfo& baseline, double settle_seconds) {
    // OpenBLAS's workers spin (yielding) for about 0.1 s after a call, measured as the
    // process's CPU time in 25 ms windows after a call; 0.15 s leaves them asleep.
    double s = settle_seconds >= 0 ? settle_seconds
                                   : (baseline.backend == "cpu" && get_num_threads() > 1 ? 0.15 : 0.0);
    // In short slices, so that Ctrl-C is not held up by the pause.
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
    while (std::chrono::steady_clock::now() < until && !interrupt_requested()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

BaselineComparison::BaselineComparison(Bench& bench, const Kernel* baseline, BenchOptions options,
                                       MeasurementPolicy policy)
    : bench_(bench), base_(baseline), opts_(std::move(options)), policy_(policy) {
    if (opts_.iters < 1 || opts_.warmup < 0) {
        throw ArgumentError("benchmark needs iters >= 1 and warmup >= 0, got iters=" + std::to_string(opts_.iters) +
                         ", warmup=" + std::to_string(opts_.warmup));
    }
    if (!base_) return;
    base_->info().check(bench_.problem());
    base_result_ = bench_.run(*base_, opts_);
    base_out_ = bench_.last_output();
    latest_base_median_ = base_result_->device_median();
    settle();
}

void BaselineComparison::settle() const {
    if (base_) settle_after_baseline(base_->info(), policy_.settle_seconds);
}

std::optional<Timings> BaselineComparison::baseline_row() const {
    if (!base_result_) return std::nullopt;
    Timings t;
    static_cast<BenchResult&>(t) = *base_result_;
    t.precision = base_->info().precision;
    t.ratio = 1.0;
    t.block_ratio = 1.0;
    if (t.device_spread() > policy_.spread_limit) t.flags.push_back(flag::noisy);
    return t;
}

Timings BaselineComparison::measure(const Kernel& kernel) {
    kernel.info().check(bench_.problem());
    // Host-timed backends share the cores with whatever else runs on the machine.
    const std::string& backend = kernel.info().backend;
    bool watch = policy_.watch_contention && (backend == "cpu" || backend == "metal-emu");
    Timings t;
    if (watch) t.others_before = other_runnable_threads();
    static_cast<BenchResult&>(t) = bench_.run(kernel, opts_);
    t.precision = kernel.info().precision;
    if (t.device_spread() > policy_.spread_limit) t.flags.push_back(flag::noisy);
    if (!base_result_) {
        if (watch) t.others_after = other_runnable_threads();
        if (watch && contended(std::min(t.others_before, t.others_after), t.threads)) t.flags.push_back(flag::busy);
        return t;
    }

    t.baseline = base_result_;
    t.diff_vs_baseline = bench_.max_abs_diff(bench_.last_output(), base_out_);
    double before = latest_base_median_;
    t.block_ratio = before / t.device_median();
    t.ratio = t.block_ratio;
    if (base_result_->device_spread() > policy_.spread_limit) t.flags.push_back(flag::baseline_noisy);

    // The checks: the baseline right after the kernel, then the kernel again. A change
    // that began or ended around the kernel's block shows in one of them.
    BenchOptions check = opts_;
    check.verify = false;
    check.warmup = std::min(opts_.warmup, 1);
    check.iters = std::max(policy_.check_iters, 1);
    t.baseline_check = bench_.run(*base_, check);
    settle();
    t.kernel_check = bench_.run(kernel, check);
    if (watch) t.others_after = other_runnable_threads();
    double after = t.baseline_check->device_median();
    t.baseline_drift = relative_change(before, after);
    t.kernel_drift = relative_change(t.device_median(), t.kernel_check->device_median());
    latest_base_median_ = after;
    if (t.baseline_drift > policy_.drift_limit || t.kernel_drift > policy_.drift_limit) t.flags.push_back(flag::drift);

    if (!t.flags.empty()) {
        t.interleaved = interleave(kernel);
        t.ratio = t.interleaved->ratio;
        t.flags.push_back(flag::remeasured);
        if (relative_change(t.ratio, t.block_ratio) > policy_.spread_limit) t.flags.push_back(flag::disagrees);
        if (t.interleaved->spread > policy_.spread_limit) {
            // Pairs that disagree say less than the steady-state blocks: report the block
            // ratio, marked as not a measurement.
            t.flags.push_back(flag::unstable);
            t.ratio_trusted = false;
            t.ratio = t.block_ratio;
        }
    }
    if (watch && contended(std::min(t.others_before, t.others_after), t.threads)) {
        // A load present from the start to the end of the row slows both sides without
        // showing in any spread or check; with different thread counts it still moves
        // their ratio, so the ratio is not that of a quiet machine.
        t.flags.push_back(flag::busy);
        t.ratio_trusted = false;
    }
    return t;
}

Interleaved BaselineComparison::interleave(const Kernel& kernel) {
    const Problem& p = bench_.problem();
    std::vector<float> c_base = bench_.C_initial(), c_kernel = bench_.C_initial();
    auto base_launch = base_->bind(p, bench_.A().data(), bench_.B().data(), c_base.data());
    auto kernel_launch = kernel.bind(p, bench_.A().data(), bench_.B().data(), c_kernel.data());
    // Each slot is a warm call then a timed one, so that neither side is timed cold
    // (a BLAS whose threads went to sleep during the settle pause wakes them first).
    auto timed = [&](Launch& launch, const Kernel& k) {
        if (stop_requested(opts_)) throw KernelError("interrupted");
        launch.run();
        Timing t = launch.run();
        throw_if_interrupted();
        return opts_.time_source ? opts_.time_source(k.info(), t.device_s) : t.device_s;
    };
    Interleaved il;
    auto started = std::chrono::steady_clock::now();
    int rounds = std::max(policy_.interleaved_rounds, 1);
    for (int r = 0; r < rounds; ++r) {
        il.baseline_s.push_back(timed(*base_launch, *base_));
        settle();
        il.kernel_s.push_back(timed(*kernel_launch, kernel));
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (opts_.max_seconds > 0 && elapsed > opts_.max_seconds && r + 1 >= 3) break;
    }
    base_launch->finish();
    kernel_launch->finish();
    throw_if_interrupted();

    std::vector<double> ratios;
    for (size_t i = 0; i < il.kernel_s.size(); ++i) {
        if (il.kernel_s[i] > 0) ratios.push_back(il.baseline_s[i] / il.kernel_s[i]);
    }
    il.ratio = sample_median(ratios);
    il.spread = relative_spread(ratios);
    return il;
}

Timings benchmark_on(Bench& bench, const Kernel& kernel, const Kernel* baseline, const BenchOptions& options,
                     const MeasurementPolicy& policy) {
    kernel.info().check(bench.problem());  // before the baseline spends time on a problem the kernel rejects
    BaselineComparison comparison(bench, baseline, options, policy);
    return comparison.measure(kernel);
}

Timings Context::benchmark(const std::string& kernel, int64_t M, int64_t N, int64_t K,
                           const BenchmarkOptions& o) const {
    if (o.iters < 1 || o.warmup < 0) {
        throw ArgumentError("benchmark needs iters >= 1 and warmup >= 0, got iters=" + std::to_string(o.iters) +
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
    run_opts.time_source = o.time_source;

    Bench bench(p, o.seed);
    return benchmark_on(bench, k, base, run_opts, o.policy);
}

}  // namespace fastgemm
