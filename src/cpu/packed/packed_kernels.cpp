// The packed kernels as registry Kernels (see packed_kernels.hpp).
//
// PackedKernel binds a problem into a PackedLaunch that plans the blocking and
// allocates the aligned pack buffers once, so each timed run() is only packing and
// arithmetic, never allocation.
#include "cpu/packed/packed_kernels.hpp"

#include <chrono>
#include <limits>
#include <memory>
#include <string>

#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/packed/blocking.hpp"
#include "cpu/packed/cpu_isa.hpp"
#include "cpu/packed/sgemm_packed.hpp"

namespace fastgemm {
namespace {

// How a ladder step configures the shared driver.
struct PackedVariant {
    const MicroKernel* kernel;
    bool cache_blocking;
    bool threaded;  // all pool threads (get_num_threads() when bound), else 1
};

class PackedLaunch : public Launch {
public:
    PackedLaunch(const PackedPlan& plan, const float* A, const float* B, float* C)
        : plan_(plan), A_(A), B_(B), C_(C) {
        ws_.reserve(plan_);
    }
    Timing run() override {
        auto t0 = std::chrono::steady_clock::now();
        sgemm_packed(plan_, A_, B_, C_, ws_);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return {s, s};
    }

private:
    PackedPlan plan_;
    PackedWorkspace ws_;
    const float* A_;
    const float* B_;
    float* C_;
};

class PackedKernel : public Kernel {
public:
    PackedKernel(KernelInfo info, PackedVariant variant) : Kernel(std::move(info)), v_(variant) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        return std::make_unique<PackedLaunch>(plan_packed(p, config()), A, B, C);
    }
    // One call packs into the calling thread's workspace, kept for the thread's life:
    // no allocation and no first touch of pack buffers once it has seen the sizes.
    void run_direct(const Problem& p, const float* A, const float* B, float* C) const override {
        thread_local PackedWorkspace ws;
        const PackedPlan plan = plan_packed(p, config());
        ws.reserve(plan);
        sgemm_packed(plan, A, B, C, ws);
    }

private:
    PackedConfig config() const {
        // Cache sizes are read once per process (sysfs), not per call.
        static const CacheSizes caches = detect_cache_sizes();
        PackedConfig cfg;
        if (v_.cache_blocking) {
            cfg = blocked_config(v_.kernel, caches, 1);
        } else {
            cfg.kernel = v_.kernel;  // mc = kc = nc = 0: pack whole operands
        }
        cfg.threads = v_.threaded ? get_num_threads() : 1;
        return cfg;
    }

    PackedVariant v_;
};

std::string source_of(const MicroKernel* mk) {
    switch (mk->isa) {
        case CpuIsa::avx512: return "src/cpu/packed/micro_kernel_avx512.cpp";
        case CpuIsa::avx2: return "src/cpu/packed/micro_kernel_avx2.cpp";
        case CpuIsa::neon: return "src/cpu/packed/micro_kernel_neon.cpp";
        case CpuIsa::scalar: return "src/cpu/packed/micro_kernel_portable.cpp";
    }
    return "";
}

std::string flags_of(const MicroKernel* mk) {
    switch (mk->isa) {
        case CpuIsa::avx512: return "-mavx512f (micro-kernel file only)";
        case CpuIsa::avx2: return "-mavx2 -mfma (micro-kernel file only)";
        default: return "baseline";
    }
}

std::string isa_of(const MicroKernel* mk) {
    return mk->isa == CpuIsa::scalar ? "portable" : to_string(mk->isa);
}

void add(Registry& r, const std::string& name, int step, const PackedVariant& v,
         const std::string& source, const std::string& description, bool auto_candidate,
         double flops_cap) {
    KernelInfo info;
    info.name = name;
    info.backend = "cpu";
    info.ladder_step = step;
    info.precision = Precision::fp32;
    PackedConfig blocks = blocked_config(v.kernel, detect_cache_sizes(), 1);
    info.params = {{"MR", v.kernel->mr}, {"NR", v.kernel->nr}};
    if (v.kernel == micro_kernel_dot()) {
        // No register reuse: every multiply-add loads both operands. The roofline's
        // no-cache model reads reuse_m / reuse_n before the MR x NR panel shape.
        info.params.push_back({"reuse_m", 1});
        info.params.push_back({"reuse_n", 1});
    }
    if (v.cache_blocking) {
        info.params.push_back({"MC", blocks.mc});
        info.params.push_back({"KC", blocks.kc});
        info.params.push_back({"NC", blocks.nc});
    } else {
        info.params.push_back({"MC", 0});  // 0: the whole dimension
        info.params.push_back({"KC", 0});
        info.params.push_back({"NC", 0});
    }
    // 0: every pool thread, i.e. get_num_threads() when the kernel is bound.
    info.params.push_back({"threads", v.threaded ? 0 : 1});
    info.source = source;
    info.description = description;
    info.flags = flags_of(v.kernel);
    info.isa = isa_of(v.kernel);
    info.bench_flops_cap = flops_cap;
    info.auto_candidate = auto_candidate;
    r.add_kernel(std::make_unique<PackedKernel>(std::move(info), v));
}

}  // namespace

void register_packed_kernels(Registry& r) {
    const MicroKernel* best = micro_kernel_for(selected_cpu_isa());
    const std::string isa = isa_of(best);
    // The portable steps run at a few GFLOP/s: keep benchmarks of them short.
    add(r, "packed_scalar", 20, {micro_kernel_dot(), false, false},
        "src/cpu/packed/micro_kernel_portable.cpp",
        "packed A and B micro-panels, one dot product per C element (no register blocking)",
        false, 2e10);
    add(r, "packed_regblock", 21, {micro_kernel_portable(), false, false},
        "src/cpu/packed/micro_kernel_portable.cpp",
        "packed panels + portable 4x8 register-blocked micro-kernel", false, 1e11);
    add(r, "packed_simd", 22, {best, false, false}, source_of(best),
        "packed panels + " + isa + " " + std::to_string(best->mr) + "x" +
            std::to_string(best->nr) + " micro-kernel, whole operands packed (no cache blocking)",
        false, std::numeric_limits<double>::infinity());
    add(r, "packed_blocked", 23, {best, true, false}, "src/cpu/packed/blocking.cpp",
        "packed " + isa + " micro-kernel + cache blocking (MC x KC in L2, KC x NC in L3), 1 thread",
        false, std::numeric_limits<double>::infinity());
    add(r, "packed", 24, {best, true, true}, "src/cpu/packed/sgemm_packed.cpp",
        "cache-blocked packed " + isa + " SGEMM on all pool threads (rows or columns split)",
        true, std::numeric_limits<double>::infinity());

    // Every path this CPU can run, by name, whatever FASTGEMM_CPU_ISA selected.
    int step = 25;
    for (CpuIsa forced : {CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::neon}) {
        const int this_step = step++;
        if (!cpu_isa_supported(forced)) continue;
        const MicroKernel* mk = micro_kernel_for(forced);
        const std::string name = "packed_" + isa_of(mk);
        add(r, name, this_step, {mk, true, true}, source_of(mk),
            "step 24 with the " + isa_of(mk) + " " + std::to_string(mk->mr) + "x" +
                std::to_string(mk->nr) + " micro-kernel forced",
            false, forced == CpuIsa::scalar ? 1e11 : std::numeric_limits<double>::infinity());
    }
}

}  // namespace fastgemm
