// Runner: verify, then time, every kernel the same way (the seeds' measurement rules).
//
// A Bench holds one problem's inputs: A and B uniform in [-1, 1) from a seed, an
// initial C (used when beta != 0), and a float64 reference for a set of rows. Every
// kernel run on it sees the same inputs, so outputs compare across kernels (the
// seed's "max abs diff vs BLAS") and ratios come from one process and one run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel.hpp"
#include "problem.hpp"

namespace fastgemm {

struct Verification {
    double max_abs_diff = 0.0;  // against the float64 reference, over checked rows
    double rel_err = 0.0;       // ||C - ref||_F / ||ref||_F over checked rows
    double tolerance = 0.0;     // for rel_err, from the precision class and K
    double checksum = 0.0;      // sum of a fixed sample of C (a smoke alarm, not a proof)
    int64_t rows_checked = 0;   // == M unless the reference was sampled
    bool all_finite = true;     // every element of C is a finite number
    // Elements left holding the poison (a NaN of a payload no arithmetic produces, written
    // over C where beta == 0): never written by the kernel. Any one fails the check.
    int64_t unwritten = 0;
    // Elements whose exact value is not a finite float32 (alpha or beta NaN or Inf, or an
    // overflow), or whose partial sums may overflow in some summation order. They are
    // checked by IEEE rules instead of the tolerance: NaN where the reference is NaN; NaN
    // or that infinity where it is infinite; any non-finite value or one within tolerance
    // where only the partial sums may overflow. rel_err covers the other elements.
    int64_t ieee_elements = 0;
    int64_t ieee_mismatches = 0;  // of those, elements breaking the rules above
    bool passed = false;
};

// Replaces the device time of each timed iteration. Tests inject a scripted, noisy
// clock here to drive the flagging logic (timings.hpp) without timing anything; empty
// means the kernel's own clock. It sees the kernel and the time that was measured.
using TimeSource = std::function<double(const KernelInfo& kernel, double measured_s)>;

struct BenchOptions {
    int warmup = 3;
    int iters = 10;
    bool verify = true;
    double max_seconds = 0.0;  // stop timing after this much (at least one iteration); 0 = no cap
    // Asked between iterations; returning true stops the run (Ctrl-C from Python).
    std::function<bool()> should_stop;
    TimeSource time_source;
};

struct BenchResult {
    std::string kernel, backend;
    Problem problem;
    std::vector<double> device_s, host_s, prep_s, launch_s;  // one entry per timed iteration
    int threads = 1;  // get_num_threads() during the run
    Verification verification;
    bool verified = false;
    bool truncated = false;  // max_seconds cut the iteration count

    double device_median() const;
    double device_min() const;
    // Per-call cost in a loop of calls: the larger of the device time and the launch
    // time (Timing::launch_s), each at its minimum.
    double call_min() const;
    double host_median() const;
    double host_min() const;
    double prep_median() const;
    double device_spread() const;  // relative_spread(device_s)
    double host_spread() const;
    double gflops() const;  // from the median device time
};

// Median of samples (NaN when there are none).
double sample_median(std::vector<double> samples);

// The spread of a row: interquartile range / median, with quartiles interpolated
// linearly between order statistics (numpy.percentile's default). One slow sample in
// five leaves it small, so it flags a row only when its median itself is in doubt.
// 0 for fewer than two samples.
double relative_spread(std::vector<double> samples);

// Bytes that benchmarking `p` allocates (A, B and the copies of C a Bench and an
// interleaved re-measure hold), and the memory the machine could still give without swapping (0 when unknown).
double bench_bytes(const Problem& p);
double available_memory_bytes();

// Relative-error tolerance for a precision class at reduction length K.
double tolerance_for(Precision precision, int64_t K);

class Bench {
public:
    // Dense row-major operands for `problem` (its leading dimensions are honoured).
    Bench(const Problem& problem, uint64_t seed = 0x5eed);

    const Problem& problem() const { return problem_; }
    const std::vector<float>& A() const { return A_; }
    const std::vector<float>& B() const { return B_; }
    const std::vector<float>& C_initial() const { return C0_; }
    // Output of the latest run() (or verify()) of each kernel, for cross-kernel diffs.
    const std::vector<float>& last_output() const { return out_; }

    // Poisons C (where beta == 0), runs once, compares with the reference.
    Verification verify(const Kernel& kernel);
    // Verifies (unless opts.verify is false), then warm-up and timed iterations.
    BenchResult run(const Kernel& kernel, const BenchOptions& opts);

    // Max |a - b| over the C region of two outputs of this bench (equal infinities and
    // two NaNs count as agreeing; a NaN against a number or a differing infinity as Inf).
    double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) const;
    double checksum(const std::vector<float>& c) const;
    // Rows that the float64 reference covers (all of them for small problems).
    const std::vector<int64_t>& reference_rows() const { return ref_rows_; }

private:
    Problem problem_;
    std::vector<float> A_, B_, C0_, out_;
    std::vector<int64_t> ref_rows_;
    std::vector<double> ref_;  // ref_rows_.size() x N
    // Per reference element, |alpha| sum|a b| + |beta c|: a bound on every partial sum in
    // any order. Empty when alpha and beta are finite and no element's bound can reach
    // float32's range, which is the case for every ordinary benchmark.
    std::vector<double> ref_bound_;
};

// Float64 reference of rows `rows` of alpha*op(A)op(B) + beta*C0, row-major |rows| x N,
// with BLAS's rules: A and B are not read when alpha == 0 or K == 0, nor C0 when
// beta == 0, so a NaN or Inf there (or in alpha) does not reach the result. With `bound`,
// also fills it with each element's |alpha| sum|a b| + |beta c| under the same rules.
std::vector<double> reference_rows(const Problem& p, const float* A, const float* B, const float* C0,
                                   const std::vector<int64_t>& rows, std::vector<double>* bound = nullptr);

}  // namespace fastgemm
