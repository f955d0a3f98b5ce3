// BaselineComparison: the one place where fastgemm times kernels against a baseline.
// Context::benchmark, fastgemm.benchmark and the `fastgemm` command all measure through
// it, so every ratio comes from the same steps:
//
//   1. the baseline is verified and timed once, on the Bench's inputs, then settles;
//   2. each kernel is verified and timed on the same inputs; its output is compared
//      with the baseline's, and its ratio is the baseline's latest median over its own;
//   3. the checks: the baseline, then the kernel, re-timed briefly right after, so each
//      kernel's block is bracketed by measurements of both, and a machine that changed
//      during the block shows as drift in one of them;
//   4. a row whose kernel or baseline spread, or whose drift, is above the policy's
//      limits is re-measured interleaved with the baseline (ABAB..., each slot a warm
//      call then a timed one), and its ratio is the median of the per-pair ratios; when
//      even those pairs disagree the row is flagged unstable and its ratio is not to be
//      trusted;
//   5. for CPU kernels, other processes' runnable threads are counted before and after
//      the row (contention.hpp); a row that shared its cores throughout is flagged busy
//      and its ratio is not trusted either.
//
// The flags and every sample are kept in the returned Timings (docs/measurement.md).
#pragma once

#include <optional>
#include <vector>

#include "core/kernel.hpp"
#include "core/runner.hpp"
#include "timings.hpp"

namespace fastgemm {

class BaselineComparison {
public:
    // Runs step 1 now when `baseline` is given (null: kernels are timed alone and carry
    // only their own spread flag). `bench` must outlive this object.
    BaselineComparison(Bench& bench, const Kernel* baseline, BenchOptions options,
                       MeasurementPolicy policy = {});

    const Problem& problem() const { return bench_.problem(); }

    // The baseline's own row (with its noisy flag), or nullopt without a baseline.
    std::optional<Timings> baseline_row() const;

    // Steps 2-4 for one kernel; throws ConstraintError before running anything when the
    // kernel's constraints reject the Bench's problem.
    Timings measure(const Kernel& kernel);

private:
    void settle() const;
    Interleaved interleave(const Kernel& kernel);

    Bench& bench_;
    const Kernel* base_;
    BenchOptions opts_;
    MeasurementPolicy policy_;
    std::optional<BenchResult> base_result_;
    std::vector<float> base_out_;
    double latest_base_median_ = 0.0;  // the first block's, then each check's
};

// One kernel against an optional baseline on `bench`: a BaselineComparison used once.
// The kernel's constraints are checked before the baseline spends any time.
Timings benchmark_on(Bench& bench, const Kernel& kernel, const Kernel* baseline, const BenchOptions& options,
                     const MeasurementPolicy& policy = {});

// Sleeps as MeasurementPolicy::settle_seconds says after a run of `baseline`.
void settle_after_baseline(const KernelInfo& baseline, double settle_seconds = -1.0);

}  // namespace fastgemm
