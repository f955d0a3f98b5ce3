// The cpu backend: always available. Its status carries what `fastgemm info` shows
// about the machine and the build, since every CPU number depends on both.
#include <algorithm>
#include <memory>

#include "core/backend.hpp"
#include "core/backends.hpp"
#include "core/build_info.hpp"
#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/bandwidth_probe.hpp"
#include "cpu/blas.hpp"
#include "cpu/packed/cpu_isa.hpp"
#include "cpu/peak_probe.hpp"
#include "cpu/ladder.hpp"
#include "cpu/opt_levels/opt_levels.hpp"
#include "cpu/packed/packed_kernels.hpp"
#include "cpu/direct/direct_kernels.hpp"

namespace fastgemm {

namespace {

class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    int auto_priority() const override { return 10; }
    BackendStatus status() const override {
        BackendStatus s;
        s.name = "cpu";
        s.available = true;
        s.device = cpu_model() + " (" + std::to_string(available_cores()) + " cores)";
        s.properties = {
            {"cpu", cpu_model()},
            {"isa", cpu_isa()},
            {"cores", std::to_string(available_cores())},
            {"threads", std::to_string(get_num_threads())},
            {"compiler", compiler()},
            {"ladder flags", build_flags()},
            {"packed kernel", cpu_isa_name() + " micro-kernel, chosen at run time (FASTGEMM_CPU_ISA overrides)"},
            {"blas", cpu::blas_version()},
        };
        return s;
    }
    // kernel="auto" without timing (FASTGEMM_AUTOTUNE=0), from measurements of the
    // direct, direct_dot, gemv and packed kernels against each other on the 2-core
    // AVX-512 machine this project is measured on (benchmarks/cpu_shapes.py):
    //   M == 1 or N == 1                          gemv (memory-bound, the matrix read once)
    //   A @ B^T with min(M, N) <= 32 and K >= 64   direct_dot (both operands along K)
    //   min(M, N) <= 64, or every dimension <= 1024  direct (packing does not pay)
    //   otherwise                                  packed
    const Kernel* preferred(const Problem& p, const std::vector<const Kernel*>& candidates) const override {
        auto find = [&](const char* name) -> const Kernel* {
            for (const Kernel* k : candidates)
                if (k->info().name == name) return k;
            return nullptr;
        };
        const char* want = "packed";
        if (p.M == 1 || p.N == 1)
            want = "gemv";
        else if (!p.trans_a && p.trans_b && std::min(p.M, p.N) <= 32 && p.K >= 64)
            want = "direct_dot";
        else if (std::min(p.M, p.N) <= 64 || std::max({p.M, p.N, p.K}) <= 1024)
            want = "direct";
        if (const Kernel* k = find(want)) return k;
        return Backend::preferred(p, candidates);
    }
    Ceilings measure_ceilings() const override {
        int threads = get_num_threads();
        Ceilings c;
        c.peak_gflops = measure_fma_peak_gflops(threads);
        c.peak_probe = "register-only FMA chains (" + fma_peak_isa() + "), " + std::to_string(threads) +
                       " thread(s)";
        int64_t llc = last_level_cache_bytes();
        int64_t bytes = std::max<int64_t>(8 * llc, int64_t(256) << 20);
        c.bandwidth_gbs = measure_copy_bandwidth_gbs(threads, bytes);
        c.bandwidth_probe = "parallel copy of 2 x " + std::to_string(bytes >> 20) +
                            " MiB (8x the last-level cache), read+write bytes, " + std::to_string(threads) +
                            " thread(s)";
        return c;
    }
};

}  // namespace

void register_cpu_backend(Registry& r) {
    r.add_backend(std::make_unique<CpuBackend>());
    cpu::register_blas_baseline(r);
    cpu::register_loop_ladder(r);
    cpu::register_transposed_b(r);
    register_packed_kernels(r);
    register_direct_kernels(r);
    cpu::register_opt_level_ladder(r);
    cpu::register_ozaki_reference(r);
}

}  // namespace fastgemm
