// The cpu backend: always available. Its status carries what `fastgemm info` shows
// about the machine and the build, since every CPU number depends on both.
#include <memory>

#include "core/backend.hpp"
#include "core/backends.hpp"
#include "core/build_info.hpp"
#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/blas.hpp"
#include "cpu/ladder.hpp"

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
            {"blas", cpu::blas_version()},
        };
        return s;
    }
};

}  // namespace

void register_cpu_backend(Registry& r) {
    r.add_backend(std::make_unique<CpuBackend>());
    cpu::register_blas_baseline(r);
    cpu::register_loop_ladder(r);
    cpu::register_transposed_b(r);
}

}  // namespace fastgemm
