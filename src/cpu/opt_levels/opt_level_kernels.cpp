// Registers the optimisation-level ladder: ikj, ijk, transposed_b and transposed_b_split4,
// each at -O0, -O1, -O2, -O3 and -O3 -ffast-math (seed 003's table), as cpu kernels named
// <loop>@<level>. One thread; any shape, transposes, alpha and beta, like the main ladder.
//
// This file is compiled with the package's normal flags: only the loops live in the
// per-level translation units. The transposed-B kernels copy op(B) with the level's own
// loop (timed as prep, like transposed_b) into a buffer owned here.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "cpu/opt_levels/opt_levels.hpp"

namespace fastgemm::cpu {

namespace {

using Clock = std::chrono::steady_clock;
using opt_levels::LevelLoops;

// Seconds per call on the 2-core x86 build machine at 512^3: ijk@O0 ~1.5 s, ikj@O0 ~0.4 s.
// -O0 and -O1 loops are skipped above 512^3 unless asked (--all); the others keep the main
// ladder's caps for the same loop.
constexpr double kUnoptimisedCap = 2.0 * 512 * 512 * 512;
constexpr double kDotCap = 2.0 * 1024 * 1024 * 1024;        // inner k, B down a column
constexpr double kStreamingCap = 2.0 * 2048.0 * 2048 * 2048;  // inner j

class TransposedBLevelLaunch : public Launch {
public:
    TransposedBLevelLaunch(opt_levels::TransposeFn transpose, opt_levels::DotRowsFn dot, const Problem& p,
                           const float* A, const float* B, float* C)
        : transpose_(transpose), dot_(dot), p_(p), A_(A), B_(B), C_(C), BT_(size_t(p.N * p.K)) {}

    Timing run() override {
        auto t0 = Clock::now();
        if (p_.alpha == 0.0f || p_.K == 0) {
            // BLAS quick return: C = beta * C, A and B unread (the dot loop never runs).
            for (int64_t i = 0; i < p_.M; ++i)
                for (int64_t j = 0; j < p_.N; ++j) {
                    float& c = C_[i * p_.ldc + j];
                    c = p_.beta == 0.0f ? 0.0f : p_.beta * c;
                }
            double s = std::chrono::duration<double>(Clock::now() - t0).count();
            return {s, s, 0.0};
        }
        const float* bt = B_;
        if (!p_.trans_b || p_.ldb != p_.K) {  // stored transposed and dense: already BT
            transpose_(p_, B_, BT_.data());
            bt = BT_.data();
        }
        auto t1 = Clock::now();
        dot_(p_, A_, bt, C_);
        auto t2 = Clock::now();
        double total = std::chrono::duration<double>(t2 - t0).count();
        return {total, total, std::chrono::duration<double>(t1 - t0).count()};
    }

private:
    opt_levels::TransposeFn transpose_;
    opt_levels::DotRowsFn dot_;
    Problem p_;
    const float* A_;
    const float* B_;
    float* C_;
    std::vector<float> BT_;
};

class TransposedBLevelKernel : public Kernel {
public:
    TransposedBLevelKernel(KernelInfo info, opt_levels::TransposeFn transpose, opt_levels::DotRowsFn dot)
        : Kernel(std::move(info)), transpose_(transpose), dot_(dot) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        return std::make_unique<TransposedBLevelLaunch>(transpose_, dot_, p, A, B, C);
    }

private:
    opt_levels::TransposeFn transpose_;
    opt_levels::DotRowsFn dot_;
};

KernelInfo level_info(const LevelLoops& l, const std::string& loop, int step, double cap,
                      const std::string& what) {
    KernelInfo info;
    info.name = loop + "@" + l.level;
    info.backend = "cpu";
    info.ladder_step = step;
    info.source = "src/cpu/opt_levels/level_loops.inc";
    info.flags = l.flags;
    info.description = what + " compiled at " + l.flags + " (optimisation-level experiment)";
    info.bench_flops_cap = l.opt_level <= 1 ? kUnoptimisedCap : cap;
    info.params = {{"opt_level", l.opt_level}, {"fast_math", l.fast_math ? 1 : 0}};
    return info;
}

}  // namespace

void register_opt_level_ladder(Registry& r) {
    const LevelLoops levels[] = {opt_levels::level_O0(), opt_levels::level_O1(), opt_levels::level_O2(),
                                 opt_levels::level_O3(), opt_levels::level_O3fm()};
    constexpr int kLevels = 5;
    // Steps 40..59 sort after the main ladder: one block of five levels per loop.
    for (int i = 0; i < kLevels; ++i) {
        const LevelLoops& l = levels[i];
        r.add_kernel(std::make_unique<HostKernel>(
            level_info(l, "ikj", 40 + i, kStreamingCap, "ikj loop"), l.ikj));
        r.add_kernel(std::make_unique<HostKernel>(
            level_info(l, "ijk", 45 + i, kDotCap, "naive ijk loop"), l.ijk));
        r.add_kernel(std::make_unique<TransposedBLevelKernel>(
            level_info(l, "transposed_b", 50 + i, kDotCap, "transposed-B dot products"), l.transpose_b,
            l.dot_rows));
        KernelInfo split = level_info(l, "transposed_b_split4", 55 + i, kDotCap,
                                      "transposed B with four split accumulators");
        split.params.emplace_back("accumulators", 4);
        r.add_kernel(std::make_unique<TransposedBLevelKernel>(std::move(split), l.transpose_b,
                                                              l.dot_rows_split4));
    }
}

}  // namespace fastgemm::cpu
