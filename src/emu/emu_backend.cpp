// The metal-emu backend: the Metal ladder (src/metal/ladder.cpp), compiled from shaders/ as
// C++ against the shims, run on the CPU by the emulator. Same kernel names, constraints and
// launch geometry as the metal backend. Its times are CPU times of an emulator: never
// performance numbers (bench_flops_cap keeps benchmarks small).
#include <dlfcn.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/backend.hpp"
#include "core/backends.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/registry.hpp"
#include "fgemu/runtime.hpp"
#include "metal/ladder.hpp"

namespace fastgemm {
namespace {

namespace ml = metal_ladder;

// The project's shaders are a library of their own (FASTGEMM_EMU_SHADERS_FILE), loaded
// at the first use of this backend. Their threadgroup variables are thread_local (one
// copy per OS thread, which runs one threadgroup at a time), and a library's TLS block is
// allocated whole in every thread that touches any of its thread-locals: in libfastgemm
// that would be about 170 KB in each CPU pool worker and each caller's thread, and an
// abort in glibc where memory runs out. Looked for beside libfastgemm (installed), then
// where the build put it. Returns "" or why it could not be loaded.
const std::string& load_builtin_shaders() {
    static std::string error;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string beside;
        Dl_info info;
        if (dladdr(reinterpret_cast<void*>(&load_builtin_shaders), &info) && info.dli_fname) {
            beside = info.dli_fname;
            const size_t slash = beside.rfind('/');
            beside = (slash == std::string::npos ? std::string(".") : beside.substr(0, slash)) + "/";
        }
        for (const std::string& path : {beside + FASTGEMM_EMU_SHADERS_FILE, std::string(FASTGEMM_EMU_SHADERS_BUILD_PATH)}) {
            if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
                error.clear();
                return;
            }
            const char* why = dlerror();
            error += (error.empty() ? "" : "; ") + std::string(why ? why : path + ": not loadable");
        }
    });
    return error;
}

const std::vector<fgemu::KernelEntry>& builtin_kernels() {
    load_builtin_shaders();
    return fgemu::kernels();
}

class EmuBackend : public Backend {
public:
    std::string name() const override { return "metal-emu"; }
    BackendStatus status() const override {
        BackendStatus s;
        s.name = name();
        s.available = true;
        s.device = "Metal shaders emulated on the CPU (" +
                   std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                   " OS threads)";
        s.properties = {
            {"purpose", "correctness and debugging only: emulator times are not GPU times"},
            {"shaders", std::to_string(builtin_kernels().size()) + " kernel functions compiled"},
            {"simd_width", std::to_string(fgemu::kSimdWidth)},
            {"barrier_checks", "strict (barrier divergence is an error)"},
        };
        return s;
    }
    int auto_priority() const override { return -100; }  // never chosen by backend="auto"
};

class EmuLaunch : public Launch {
public:
    EmuLaunch(const ml::LadderKernel& k, const fgemu::KernelEntry& e, const Problem& p,
              const float* A, const float* B, float* C)
        : entry_(e), p_(p), params_(ml::make_params(p)), geom_(ml::launch_geometry(k, p)) {
        // Empty operands still get a bound (dummy) buffer: kernels may form pointers to them.
        auto bind = [&](const float* ptr, int64_t span) {
            if (span == 0 || !ptr) return fgemu::Binding{dummy_, sizeof dummy_};
            return fgemu::Binding{const_cast<float*>(ptr), size_t(span) * sizeof(float)};
        };
        d_.threadgroups = {geom_.threadgroups.x, geom_.threadgroups.y, geom_.threadgroups.z};
        d_.threads_per_threadgroup = {geom_.threads_per_threadgroup.x,
                                      geom_.threads_per_threadgroup.y,
                                      geom_.threads_per_threadgroup.z};
        d_.buffers.resize(4);
        d_.buffers[ml::kBufferA] = bind(A, p.a_span());
        d_.buffers[ml::kBufferB] = bind(B, p.b_span());
        d_.buffers[ml::kBufferC] = bind(C, p.c_span());
        d_.buffers[ml::kBufferParams] = fgemu::Binding{&params_, sizeof params_};
        for (auto [index, bytes] : geom_.threadgroup_memory) {
            if (d_.threadgroup_memory.size() <= size_t(index)) d_.threadgroup_memory.resize(size_t(index) + 1);
            d_.threadgroup_memory[size_t(index)] = bytes;
        }
        opt_.strict = true;  // fastgemm's own shaders must not diverge at barriers
        // Ctrl-C: the dispatch stops at the next barrier step and leaves C incomplete,
        // which run() reports as Interrupted (core/interrupt.hpp). The dispatch's threads
        // poll the watch of the thread that called run().
        opt_.stop_requested = [](const void* watch) { return static_cast<const InterruptWatch*>(watch)->requested(); };
        opt_.stop_context = &watch_;
    }

    Timing run() override {
        const auto t0 = std::chrono::steady_clock::now();
        if (p_.M > 0 && p_.N > 0) {
            watch_ = InterruptWatch::current();
            bool complete = false;
            try {
                complete = fgemu::run(entry_, d_, opt_);
            } catch (const fgemu::Error& e) {
                throw KernelError(std::string("metal-emu: ") + e.what());
            }
            if (!complete) throw Interrupted();
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return Timing{s, s};
    }

private:
    const fgemu::KernelEntry& entry_;
    Problem p_;
    ml::GemmParams params_;
    ml::LaunchGeometry geom_;
    fgemu::Dispatch d_;
    fgemu::DispatchOptions opt_;
    InterruptWatch watch_;  // the caller's, for the dispatch's threads (opt_.stop_context)
    float dummy_[4] = {0, 0, 0, 0};
};

class EmuKernel : public Kernel {
public:
    EmuKernel(KernelInfo info, const ml::LadderKernel& k) : Kernel(std::move(info)), k_(k) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        if (!ml::fits_32bit(p))
            throw ShapeError("metal-emu: " + p.describe() +
                             " does not fit the shaders' 32-bit index arithmetic");
        const std::string& unloaded = load_builtin_shaders();
        const fgemu::KernelEntry* e = fgemu::find_kernel(k_.function);
        if (!e)
            throw KernelError("metal-emu: shader function " + k_.function + " (" + k_.shader + ") " +
                              (unloaded.empty() ? "was not compiled into this build"
                                                : "is in the shader library, which did not load: " + unloaded));
        return std::make_unique<EmuLaunch>(k_, *e, p, A, B, C);
    }

private:
    const ml::LadderKernel& k_;
};

}  // namespace

void register_metal_emu_backend(Registry& r) {
    r.add_backend(std::make_unique<EmuBackend>());
    for (const ml::LadderKernel& k : ml::ladder()) {
        KernelInfo info = k.info;
        info.backend = "metal-emu";
        // ~2 * 256^3: the emulator runs a few hundred MFLOP/s at best (simdgroup matrices
        // are computed redundantly per lane); benchmarks skip larger problems unless asked.
        info.bench_flops_cap = 2.0 * 256 * 256 * 256;
        info.flags = "MSL compiled as C++20 against metal-emu shims";
        info.isa = "CPU emulation (fibers per thread)";
        r.add_kernel(std::make_unique<EmuKernel>(std::move(info), k));
    }
}

}  // namespace fastgemm
