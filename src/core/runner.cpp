#include "runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <limits>

#include "errors.hpp"
#include "interrupt.hpp"
#include "threads.hpp"

#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace fastgemm {

double sample_median(std::vector<double> v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + mid, v.end());
    double hi = v[mid];
    if (v.size() % 2) return hi;
    return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + mid));
}

double relative_spread(std::vector<double> v) {
    if (v.size() < 2) return 0.0;
    std::sort(v.begin(), v.end());
    auto quantile = [&](double q) {
        double at = q * double(v.size() - 1);
        size_t lo = size_t(at);
        size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
    };
    double median = quantile(0.5), iqr = quantile(0.75) - quantile(0.25);
    if (median > 0) return iqr / median;
    return iqr > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

namespace {

double min_of(const std::vector<double>& v) {
    return v.empty() ? std::numeric_limits<double>::quiet_NaN() : *std::min_element(v.begin(), v.end());
}

// The float64 reference costs rows * N * K multiply-adds; above this budget it covers a
// sample of rows (first, last, and evenly spread ones) instead of all of them.
constexpr double kReferenceBudget = double(1 << 27);

std::vector<int64_t> choose_reference_rows(const Problem& p) {
    std::vector<int64_t> rows;
    double per_row = std::max(1.0, double(p.N) * double(p.K));
    int64_t want = int64_t(kReferenceBudget / per_row);
    if (want >= p.M) {
        for (int64_t i = 0; i < p.M; ++i) rows.push_back(i);
        return rows;
    }
    want = std::max<int64_t>(want, 8);
    for (int64_t r = 0; r < want; ++r) rows.push_back(r * (p.M - 1) / (want - 1));
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

}  // namespace

double available_memory_bytes() {
#if defined(__linux__)
    if (FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        double kib = 0.0;
        while (std::fgets(line, sizeof line, f)) {
            if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
        }
        std::fclose(f);
        if (kib > 0) return kib * 1024.0;
    }
#endif
#if defined(_SC_PHYS_PAGES)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return double(pages) * double(page);
#endif
    return 0.0;
}

double bench_bytes(const Problem& p) {
    // A and B, and up to six copies of C: the initial C, the latest output, a working C,
    // the verification's poisoned copy and the two of an interleaved re-measure.
    return sizeof(float) * (double(p.a_span()) + double(p.b_span()) + 6.0 * double(p.c_span()));
}

namespace {

// With overcommitting allocators a too-large request "succeeds" and the process is
// killed while filling it, so refuse up front, with the numbers, instead.
void check_memory_for(const Problem& p) {
    double bytes = bench_bytes(p);
    double available = available_memory_bytes();
    if (available > 0 && bytes > 0.9 * available) {
        char msg[320];
        std::snprintf(msg, sizeof msg,
                      "benchmark of %s needs %.2f GiB for its operands, but only %.2f GiB of memory "
                      "is available; use a smaller problem",
                      p.describe().c_str(), bytes / double(1ull << 30), available / double(1ull << 30));
        throw OutOfMemoryError(msg);
    }
}

}  // namespace

double BenchResult::device_median() const { return sample_median(device_s); }
double BenchResult::device_min() const { return min_of(device_s); }
double BenchResult::host_median() const { return sample_median(host_s); }
double BenchResult::host_min() const { return min_of(host_s); }
double BenchResult::call_min() const { return std::max(device_min(), launch_s.empty() ? 0.0 : min_of(launch_s)); }
double BenchResult::prep_median() const { return sample_median(prep_s); }
double BenchResult::device_spread() const { return relative_spread(device_s); }
double BenchResult::host_spread() const { return relative_spread(host_s); }
double BenchResult::gflops() const { return problem.flops() / device_median() * 1e-9; }

double tolerance_for(Precision precision, int64_t K) {
    // Random-sign sums grow their rounding error like sqrt(K) unit roundoffs; the factor
    // 8 leaves room for any summation order while a wrong tile or a skipped k-block
    // still lands orders of magnitude above it.
    const double eps32 = std::ldexp(1.0, -23);
    double fp32 = 8.0 * eps32 * std::sqrt(double(std::max<int64_t>(K, 1))) + 1e-6;
    switch (precision) {
        case Precision::fp32: return fp32;
        case Precision::fp32x3: return 2.0 * fp32;
        case Precision::fp32_ozaki: return 2.0 * fp32;
        case Precision::tf32: return 4.0 * std::ldexp(1.0, -11) + fp32;  // inputs keep 10 mantissa bits
    }
    return fp32;
}

std::vector<double> reference_rows(const Problem& p, const float* A, const float* B, const float* C0,
                                   const std::vector<int64_t>& rows, std::vector<double>* bound) {
    const size_t n = rows.size() * size_t(p.N);
    std::vector<double> ref(n, 0.0);
    if (bound) bound->assign(n, 0.0);
    const bool product = p.alpha != 0.0f && p.K > 0;  // else A and B are not read (BLAS)
    for (size_t r = 0; r < rows.size(); ++r) {
        int64_t i = rows[r];
        double* out = &ref[r * size_t(p.N)];
        double* mag = bound ? &(*bound)[r * size_t(p.N)] : nullptr;
        for (int64_t k = 0; product && k < p.K; ++k) {
            double a = op_a(p, A, i, k);
            for (int64_t j = 0; j < p.N; ++j) out[j] += a * double(op_b(p, B, k, j));
            if (mag) {
                for (int64_t j = 0; j < p.N; ++j) mag[j] += std::fabs(a * double(op_b(p, B, k, j)));
            }
        }
        for (int64_t j = 0; j < p.N; ++j) {
            double c = product ? double(p.alpha) * out[j] : 0.0;
            double m = product && mag ? std::fabs(double(p.alpha)) * mag[j] : 0.0;
            // BLAS: beta == 0 means C is not read, so NaN already in C does not propagate.
            if (p.beta != 0.0f) {
                c += double(p.beta) * double(C0[i * p.ldc + j]);
                m += std::fabs(double(p.beta) * double(C0[i * p.ldc + j]));
            }
            out[j] = c;
            if (mag) mag[j] = m;
        }
    }
    return ref;
}

namespace {

// A quiet NaN whose payload no arithmetic produces (an operation on NaN inputs returns
// one of the inputs' payloads or the machine's default NaN), so an element still holding
// it after a run was not written, even where the right answer is NaN.
constexpr uint32_t kPoisonBits = 0x7fc0fa57u;

float poison() {
    float f;
    std::memcpy(&f, &kPoisonBits, sizeof f);
    return f;
}

bool is_poison(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits == kPoisonBits;
}

// True when no partial sum of alpha*op(A)op(B) + beta*C can leave float32's range in
// any order: then every element is checked against the tolerance and none by IEEE rules.
// A Bench's operands come from fill_uniform, so every |a|, |b| and |c| is below 1.
bool ordinary_range(const Problem& p) {
    const double product = (p.alpha != 0.0f && p.K > 0) ? std::fabs(double(p.alpha)) * double(p.K) : 0.0;
    const double scaled_c = p.beta != 0.0f ? std::fabs(double(p.beta)) : 0.0;
    const double total = product + scaled_c;  // NaN when any of them is NaN
    return total < 0.5 * double(std::numeric_limits<float>::max());
}

// The IEEE rules for an element outside float32's ordinary range (see Verification).
bool ieee_consistent(double got, double ref, double tolerance) {
    if (std::isnan(ref)) return std::isnan(got);
    if (std::isinf(ref)) return std::isnan(got) || got == ref;
    return !std::isfinite(got) || std::fabs(got - ref) <= tolerance * std::fabs(ref);
}

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Fills v with n values uniform in [-1, 1), multiples of 2^-23, each a function of
// (seed, operand, index) alone: the same inputs on every platform and standard library
// (std::uniform_real_distribution's output is not specified), filled by the pool's
// threads in parallel (16 GiB of operands took minutes one value at a time).
void fill_uniform(std::vector<float>& v, int64_t n, uint64_t seed, uint64_t operand) {
    v.resize(size_t(std::max<int64_t>(n, 1)));
    const uint64_t stream = splitmix64(seed ^ splitmix64(operand));
    const int64_t count = int64_t(v.size());
    const int64_t chunk = int64_t(1) << 20;
    const int tasks = int(std::min<int64_t>((count + chunk - 1) / chunk, 1 << 30));
    float* out = v.data();
    auto body = [&](int task, int n_tasks) {
        const int64_t begin = count * task / n_tasks, end = count * (task + 1) / n_tasks;
        for (int64_t i = begin; i < end; ++i) {
            const uint64_t bits = splitmix64(stream + uint64_t(i)) >> 40;  // 24 uniform bits
            out[i] = float(int64_t(bits) - (int64_t(1) << 23)) * 0x1p-23f;
        }
    };
    if (tasks <= 1) {
        body(0, 1);
    } else {
        parallel_for(std::min(tasks, get_num_threads()), body);
    }
}

}  // namespace

Bench::Bench(const Problem& problem, uint64_t seed) : problem_(problem) {
    problem_.validate();
    check_memory_for(problem_);
    fill_uniform(A_, problem_.a_span(), seed, 0);
    fill_uniform(B_, problem_.b_span(), seed, 1);
    fill_uniform(C0_, problem_.c_span(), seed, 2);
    ref_rows_ = choose_reference_rows(problem_);
    ref_ = fastgemm::reference_rows(problem_, A_.data(), B_.data(), C0_.data(), ref_rows_,
                                    ordinary_range(problem_) ? nullptr : &ref_bound_);
}

double Bench::checksum(const std::vector<float>& c) const {
    // A fixed grid of up to 64 x 64 samples: cheap, and any broken region shows.
    const Problem& p = problem_;
    double sum = 0.0;
    int64_t si = std::min<int64_t>(p.M, 64), sj = std::min<int64_t>(p.N, 64);
    for (int64_t a = 0; a < si; ++a) {
        int64_t i = a * p.M / si;
        for (int64_t b = 0; b < sj; ++b) sum += c[size_t(i * p.ldc + b * p.N / sj)];
    }
    return sum;
}

double Bench::max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) const {
    double m = 0.0;
    for (int64_t i = 0; i < problem_.M; ++i) {
        for (int64_t j = 0; j < problem_.N; ++j) {
            size_t at = size_t(i * problem_.ldc + j);
            if (a[at] == b[at] || (std::isnan(a[at]) && std::isnan(b[at]))) continue;  // equal infinities, two NaNs
            double d = std::fabs(double(a[at]) - double(b[at]));
            if (std::isnan(d)) return std::numeric_limits<double>::infinity();
            m = std::max(m, d);
        }
    }
    return m;
}

Verification Bench::verify(const Kernel& kernel) {
    const Problem& p = problem_;
    std::vector<float> C = C0_;
    if (p.beta == 0.0f) std::fill(C.begin(), C.end(), poison());
    {
        auto launch = kernel.bind(p, A_.data(), B_.data(), C.data());
        launch->run();
        launch->finish();
    }
    throw_if_interrupted();  // a loop that returned early left C incomplete
    Verification v;
    v.tolerance = tolerance_for(kernel.info().precision, p.K);
    v.rows_checked = int64_t(ref_rows_.size());
    double err2 = 0.0, ref2 = 0.0, ref_max = 0.0;
    bool ordinary_finite = true;  // every element checked by the tolerance is finite
    const double flt_max = std::numeric_limits<float>::max();
    for (size_t r = 0; r < ref_rows_.size(); ++r) {
        int64_t i = ref_rows_[r];
        for (int64_t j = 0; j < p.N; ++j) {
            const size_t at = r * size_t(p.N) + size_t(j);
            double ref = ref_[at];
            double got = C[size_t(i * p.ldc + j)];
            const bool ieee = !ref_bound_.empty() && !(ref_bound_[at] < flt_max && std::fabs(ref) < flt_max);
            if (ieee) {
                ++v.ieee_elements;
                if (!ieee_consistent(got, ref, 64.0 * v.tolerance)) ++v.ieee_mismatches;
                continue;
            }
            if (!std::isfinite(got)) ordinary_finite = false;
            double d = std::fabs(got - ref);
            v.max_abs_diff = std::max(v.max_abs_diff, std::isnan(d) ? INFINITY : d);
            err2 += d * d;
            ref2 += ref * ref;
            ref_max = std::max(ref_max, std::fabs(ref));
        }
    }
    // Over all of C, checked rows or not: an element still holding the poison was never
    // written; where every element is in the ordinary range, any non-finite one fails.
    for (int64_t i = 0; i < p.M; ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
            const float x = C[size_t(i * p.ldc + j)];
            if (std::isfinite(x)) continue;
            v.all_finite = false;
            if (is_poison(x)) ++v.unwritten;
        }
    }
    if (ref_bound_.empty() && !v.all_finite) ordinary_finite = false;
    v.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    v.checksum = checksum(C);
    bool elementwise_ok = v.max_abs_diff <= 64.0 * v.tolerance * std::max(ref_max, 1e-30) + 1e-30;
    v.passed = v.unwritten == 0 && v.ieee_mismatches == 0 && ordinary_finite && v.rel_err <= v.tolerance &&
               (ref_max == 0.0 || elementwise_ok);
    out_ = std::move(C);
    return v;
}

BenchResult Bench::run(const Kernel& kernel, const BenchOptions& opts) {
    BenchResult r;
    r.kernel = kernel.info().name;
    r.backend = kernel.info().backend;
    r.problem = problem_;
    r.threads = get_num_threads();
    if (opts.verify) {
        r.verification = verify(kernel);
        r.verified = true;
    }
    std::vector<float> C = C0_;
    auto launch = kernel.bind(problem_, A_.data(), B_.data(), C.data());
    auto stop = [&] { return opts.should_stop && opts.should_stop(); };
    using Clock = std::chrono::steady_clock;
    auto started = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
    for (int w = 0; w < opts.warmup; ++w) {
        if (stop()) throw KernelError("interrupted");
        launch->run();
        throw_if_interrupted();
        if (opts.max_seconds > 0 && elapsed() > 0.5 * opts.max_seconds) break;
    }
    started = Clock::now();
    for (int it = 0; it < std::max(opts.iters, 1); ++it) {
        if (stop()) throw KernelError("interrupted");
        Timing t = launch->run();
        throw_if_interrupted();
        if (opts.time_source) t.device_s = opts.time_source(kernel.info(), t.device_s);
        r.device_s.push_back(t.device_s);
        r.host_s.push_back(t.host_s);
        r.prep_s.push_back(t.prep_s);
        r.launch_s.push_back(t.launch_s);
        if (opts.max_seconds > 0 && elapsed() > opts.max_seconds && it + 1 < opts.iters) {
            r.truncated = true;
            break;
        }
    }
    launch->finish();
    throw_if_interrupted();
    if (!opts.verify) {
        out_ = std::move(C);
        r.verification.checksum = checksum(out_);
    }
    return r;
}

}  // namespace fastgemm
