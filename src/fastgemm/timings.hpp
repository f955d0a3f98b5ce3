// Timings: what Context::benchmark (and every fastgemm benchmark) returns. It is the
// core's BenchResult (every timed iteration's device/host/prep time, the verification
// against the float64 reference, median/min/spread/GFLOP/s helpers) plus the optional
// vendor baseline measured on the same inputs in the same call, so a speed claim is a
// ratio from one process and one run, and the evidence for whether that ratio can be
// trusted (docs/measurement.md describes the rules).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel_info.hpp"
#include "core/runner.hpp"

namespace fastgemm {

// When a timed row counts as noisy, and what is done about it.
struct MeasurementPolicy {
    // A row whose spread (relative_spread: IQR / median) exceeds this is noisy.
    double spread_limit = 0.10;
    // After each kernel the baseline and then the kernel are re-timed briefly (the
    // checks). When the baseline's median moved by more than this (max/min - 1) from its
    // previous measurement, or the kernel's from its block, the machine changed around
    // the kernel's block.
    double drift_limit = 0.10;
    int check_iters = 3;  // timed iterations of each check (after one warm-up)
    // A flagged row is re-measured interleaved with its baseline: this many pairs of one
    // baseline iteration then one kernel iteration (ABAB...), at least 3 of them when
    // the kernel's max_seconds cuts the run short.
    int interleaved_rounds = 7;
    // Pause after every baseline run so that a CPU BLAS's worker threads, which spin
    // for about 0.1 s after a call, go idle before the kernel is timed. Negative: the
    // default, 0.15 s after a multi-threaded CPU baseline and none otherwise.
    double settle_seconds = -1.0;
    // Ask the operating system before and after each row of a CPU kernel whether other
    // processes' threads compete for the cores (contention.hpp). Off in tests that
    // script the clock, where the real machine's load must not change the outcome.
    bool watch_contention = true;
};

// The ABAB re-measure of a flagged row: pair i is baseline_s[i] then kernel_s[i].
struct Interleaved {
    std::vector<double> baseline_s, kernel_s;  // device times
    double ratio = 0.0;   // median over pairs of baseline_s[i] / kernel_s[i]
    double spread = 0.0;  // relative_spread of those per-pair ratios
};

// Flags a Timings row can carry (also in every JSON row, in this spelling).
namespace flag {
inline constexpr const char* noisy = "noisy";                    // the kernel's spread > limit
inline constexpr const char* baseline_noisy = "baseline-noisy";  // the baseline's spread > limit
inline constexpr const char* drift = "drift";                    // a check disagreed with its block
inline constexpr const char* busy = "busy";  // other processes competed for the cores throughout the row
inline constexpr const char* remeasured = "remeasured";          // ratio from the interleaved re-measure
inline constexpr const char* disagrees = "disagrees";  // interleaved ratio differs from the block ratio
inline constexpr const char* unstable = "unstable";    // even the interleaved pairs disagree
}  // namespace flag

struct Timings : BenchResult {
    Precision precision = Precision::fp32;
    // Set when a baseline ran: its own timings, the ratio baseline / this kernel (> 1
    // means faster than the baseline) and max |C - C_baseline| on the same inputs.
    std::optional<BenchResult> baseline;
    // The ratio to report: block_ratio for a quiet row, the interleaved ratio for a
    // re-measured one, block_ratio again (with ratio_trusted false) for an unstable one.
    double ratio = 0.0;
    double diff_vs_baseline = 0.0;
    // The baseline's latest median before this kernel (its block, or the previous
    // row's check) / this kernel's block median.
    double block_ratio = 0.0;
    std::optional<BenchResult> baseline_check;  // the baseline re-timed right after the kernel
    std::optional<BenchResult> kernel_check;    // then the kernel again
    double baseline_drift = 0.0;                // see MeasurementPolicy::drift_limit
    double kernel_drift = 0.0;
    // Other processes' runnable threads when the row started and when it ended (-1:
    // unknown, or not watched).
    int others_before = -1, others_after = -1;
    std::optional<Interleaved> interleaved;     // set when the row was re-measured
    std::vector<std::string> flags;             // names from fastgemm::flag, in order
    // False when the ratio could not be measured (flag::unstable, flag::busy): show it
    // as doubtful.
    bool ratio_trusted = true;

    bool has_flag(const std::string& name) const {
        return std::find(flags.begin(), flags.end(), name) != flags.end();
    }
};

struct BenchmarkOptions {
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;
    int warmup = 3;
    int iters = 10;            // >= 1
    bool verify = true;        // poison C, run once, compare with float64 before timing
    double max_seconds = 0.0;  // stop timing a kernel after this long (>= 1 iteration); 0 = no cap
    // "" = no baseline; "auto" = the backend's vendor baseline (openblas, cublas, ...);
    // otherwise the name of a kernel of the same backend.
    std::string baseline;
    uint64_t seed = 0x5eed;    // inputs uniform in [-1, 1) from this seed
    MeasurementPolicy policy;
    TimeSource time_source;    // tests only: a scripted clock (runner.hpp)
};

}  // namespace fastgemm
