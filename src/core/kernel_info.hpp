// KernelInfo: everything fastgemm knows about one kernel without running it.
//
// Shape constraints are data (checked before launch and quoted in errors), the
// precision class decides the verifier's tolerance, and tile parameters travel to
// tables and the intensity model.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "problem.hpp"

namespace fastgemm {

// fp32: every product and sum in FP32.  tf32: inputs rounded to TF32 on matrix units.
// fp32x3: FP32-accurate result assembled from split TF32 products.
// fp32_ozaki: FP32-accurate result reconstructed from exact INT8 products of the
// operands' residues (an Ozaki-type scheme); kernels of this class detect the inputs the
// scheme cannot carry at that accuracy and compute those parts another way.
enum class Precision { fp32, tf32, fp32x3, fp32_ozaki };
const char* to_string(Precision p);
// "fp32", "tf32", "fp32x3", "fp32_ozaki"; throws NotFoundError for anything else.
Precision parse_precision(const std::string& name);

// One rule a problem must satisfy. Shape rules name a dimension; feature rules
// (no transposes, plain scalars, square) name none.
struct Constraint {
    enum class Kind {
        multiple_of,  // dim % value == 0
        at_least,     // dim >= value
        at_most,      // dim <= value
        square,       // M == N == K
        no_trans_a,
        no_trans_b,
        plain_scalars,  // alpha == 1, beta == 0
        trans_b,        // op(B) = B^T: B stored N x K
        vector,         // M == 1 or N == 1
        few_rows_or_columns,  // M <= value or N <= value
        leading_at_most,      // lda, ldb and ldc <= value (a BLAS of 32-bit integers)
    };
    Kind kind;
    char dim = 0;  // 'M', 'N' or 'K' for shape rules
    int64_t value = 0;

    static Constraint multiple_of(char dim, int64_t n) { return {Kind::multiple_of, dim, n}; }
    static Constraint at_least(char dim, int64_t n) { return {Kind::at_least, dim, n}; }
    static Constraint at_most(char dim, int64_t n) { return {Kind::at_most, dim, n}; }
    static Constraint square() { return {Kind::square, 0, 0}; }
    static Constraint no_trans_a() { return {Kind::no_trans_a, 0, 0}; }
    static Constraint no_trans_b() { return {Kind::no_trans_b, 0, 0}; }
    static Constraint plain_scalars() { return {Kind::plain_scalars, 0, 0}; }
    static Constraint trans_b() { return {Kind::trans_b, 0, 0}; }
    static Constraint vector() { return {Kind::vector, 0, 0}; }
    static Constraint few_rows_or_columns(int64_t n) { return {Kind::few_rows_or_columns, 0, n}; }
    static Constraint leading_at_most(int64_t n) { return {Kind::leading_at_most, 0, n}; }

    bool accepts(const Problem& p) const;
    std::string describe() const;  // "M % 64 == 0"
};

struct KernelInfo {
    std::string name;     // unique within its backend, e.g. "ikj", "tiled_ikj_64"
    std::string backend;  // "cpu", "metal", "metal-emu", "cuda"
    int ladder_step = 0;  // position in the ladder; baselines use 0
    bool baseline = false;
    Precision precision = Precision::fp32;
    std::vector<Constraint> constraints;
    std::vector<std::pair<std::string, int64_t>> params;  // tile sizes, threads, ...
    std::string source;       // file that implements it, relative to the repository
    std::string description;  // one line
    std::string flags;        // how it was compiled, where that matters
    std::string isa;          // instruction set it runs, where that matters
    // Kernels that pay per element far more than a real GEMM (cache-hostile loops, the
    // emulator): benchmarks skip them above this many FLOPs unless asked.
    double bench_flops_cap = std::numeric_limits<double>::infinity();
    // Candidate for kernel="auto": the tuner times these and keeps the fastest.
    bool auto_candidate = false;
    // Seconds that the worker threads of the library this kernel calls keep spinning on
    // the cores after it has run a problem (OpenBLAS: about 2^28 cycles, where it used
    // them), or null for none. Another multi-threaded kernel timed in that while runs
    // several times slower (13x for the packed kernel at 256^3 on 16 cores), so the
    // tuner times such kernels apart.
    double (*spins_after)(const Problem&) = nullptr;

    // First violated constraint, or nothing.
    std::optional<Constraint> violated(const Problem& p) const;
    bool accepts(const Problem& p) const { return !violated(p); }
    // Throws ConstraintError naming the kernel, the rule and the problem.
    void check(const Problem& p) const;
    int64_t param(const std::string& key, int64_t fallback = 0) const;
};

}  // namespace fastgemm
