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
    cpu::register_opt_level_ladder(r);
}

}  // namespace fastgemm
