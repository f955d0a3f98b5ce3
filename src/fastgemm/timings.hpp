// Timings: what Context::benchmark returns. It is the core's BenchResult (every timed
// iteration's device/host/prep time, the verification against the float64 reference,
// median/min/GFLOP/s helpers) plus the optional vendor baseline measured on the same
// inputs in the same call, so a speed claim is a ratio from one process and one run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/kernel_info.hpp"
#include "core/runner.hpp"

namespace fastgemm {

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
};

struct Timings : BenchResult {
    Precision precision = Precision::fp32;
    // Set when a baseline ran: its own timings, baseline median / this median (> 1 means
    // faster than the baseline) and max |C - C_baseline| on the same inputs.
    std::optional<BenchResult> baseline;
    double ratio = 0.0;
    double diff_vs_baseline = 0.0;
};

}  // namespace fastgemm
